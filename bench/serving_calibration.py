"""Derive the serving model's fitted factors from the calibration half, and only from it.

    .venv/bin/python bench/serving_calibration.py

Reads service/accuracy/cases/serving/*.json, keeps the runs marked ``calibration`` (never a
``held_out`` one: it drops them before predicting anything), and searches a grid of the four fitted
factors of service/sizing/serving/efficiency.py: SERVING_FLOPS_SCALE, SERVING_BANDWIDTH_SCALE
and one per-step overhead shared by the engines. The score is the mean of the median absolute
errors of output tokens/s and of mean TPOT over the calibration runs the model can predict; the
grid point with the lowest score is printed, with its figures. The constants in efficiency.py
are that point, rounded.
"""

import itertools
import statistics
from typing import Any

from service.accuracy.serving import load_runs, predict_run, prepare

FLOPS_SCALES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
BANDWIDTH_SCALES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
OVERHEADS_S = (0.0, 0.002, 0.004, 0.008, 0.012, 0.02, 0.03)
LAYER_OVERHEADS_S = (0.0, 25e-6, 50e-6, 100e-6, 150e-6, 200e-6, 300e-6)


def score(runs: list[tuple[dict[str, Any], Any]], **factors: float) -> tuple[float, ...]:
    errs = [e for run, ready in runs if (e := predict_run(run, ready, **factors).errors())]
    out = statistics.median(abs(e[0]) for e in errs)
    tpot = statistics.median(abs(e[1]) for e in errs)
    within = sum(1 for e in errs if abs(e[0]) <= 0.25 and abs(e[1]) <= 0.25) / len(errs)
    return (out + tpot) / 2, out, tpot, within


def main() -> None:
    runs = [(r, prepare(r)) for r in load_runs() if r["split"] == "calibration"]
    best = None
    grid = itertools.product(FLOPS_SCALES, BANDWIDTH_SCALES, OVERHEADS_S, LAYER_OVERHEADS_S)
    for f, b, o, lo in grid:
        s = score(runs, flops_scale=f, bandwidth_scale=b, step_overhead_s=o, layer_overhead_s=lo)
        if best is None or s[0] < best[0][0]:
            best = (s, f, b, o, lo)
    assert best is not None
    (s, out, tpot, within), f, b, o, lo = best
    print(f"flops_scale {f}, bandwidth_scale {b}, step_overhead_s {o}, layer_overhead_s {lo}")
    print(f"calibration: median |error| output {out:.0%}, TPOT {tpot:.0%}", end="")
    print(f", both within 25% {within:.0%}")


if __name__ == "__main__":
    main()
