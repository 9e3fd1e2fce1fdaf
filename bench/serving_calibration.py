"""Derive the serving model's fitted constants from the calibration half, and only from it.

    .venv/bin/python bench/serving_calibration.py

Reads service/accuracy/cases/serving/*.json and drops every run marked ``held_out`` before
predicting anything. Over the calibration runs the model can predict, it searches a grid of
the fitted constants (``GRID``): the per-kernel and per-sequence overheads, the host's launch
of each kernel in a step run outside a CUDA graph (EAGER_KERNEL_OVERHEAD_S), the routed experts'
kernel efficiency and its half-point, the share of a kernel's shorter side it hides
(KERNEL_OVERLAP), what block-scaled FP8 GEMMs reach of the BF16 fraction, the routed
experts' grouped ones (FP8_FLOPS_SCALE) and the dense ones (FP8_DENSE_FLOPS_SCALE),
what a served GEMM reaches of the large-GEMM fraction on Hopper and on Ampere
(SERVING_FLOPS_SCALE; Ada, Blackwell and CDNA 3 take Hopper's) in
service/sizing/serving/efficiency.py, and the ShareGPT lengths' Weibull shape
(SHAREGPT_WEIBULL_SHAPE in simulate.py). The score is the mean of the median absolute errors
of output tokens/s and of mean TPOT, taken over the steady runs and over the bursts apart and
averaged (``score``); ties go to the larger share of runs within 25% on both.

The search is by coordinates: from ``START``, each constant in turn takes the grid value that
scores best with the others held, and the rounds repeat until none moves (a full product of
the grids would take hours on 79 runs). It prints the point and its figures; the constants in
efficiency.py and simulate.py are that point. See docs/serving.md for what each one stands for.
"""

import statistics
from typing import Any

from service.accuracy.serving import load_runs, predict_run, prepare

GRID: dict[str, tuple[float, ...]] = {
    "kernel_overhead_s": (0.0, 2e-6, 4e-6, 6e-6),
    "sequence_overhead_s": (0.0, 10e-6, 20e-6, 40e-6, 60e-6),
    "expert_efficiency": (1.0, 0.85, 0.7, 0.5),
    "expert_half_tokens": (0.0, 0.5, 1.0, 2.0),
    "kernel_overlap": (1.0, 0.5, 0.25, 0.0),
    "fp8_flops_scale": (1.0, 0.75, 0.5),
    "fp8_dense_flops_scale": (1.0, 0.75, 0.65, 0.5),
    "hopper_flops_scale": (1.0, 0.8, 0.65, 0.5),
    "ampere_flops_scale": (1.0, 0.8, 0.65),
    "sharegpt_shape": (1.0, 0.8, 0.65, 0.5),
    "eager_kernel_overhead_s": (0.0, 20e-6, 40e-6, 60e-6),
}
START: dict[str, float] = {
    "kernel_overhead_s": 4e-6,
    "sequence_overhead_s": 40e-6,
    "expert_efficiency": 0.5,
    "expert_half_tokens": 0.0,
    "kernel_overlap": 0.5,
    "fp8_flops_scale": 0.5,
    "fp8_dense_flops_scale": 0.65,
    "hopper_flops_scale": 0.5,
    "ampere_flops_scale": 1.0,
    "sharegpt_shape": 0.8,
    "eager_kernel_overhead_s": 40e-6,
}
"""The constants as shipped: the search from here stays here. The score is flat near its best
and the constants are not sharply identified one by one: fitted on 74 runs the overlap was
0.5; with the 5 MI355X calibration runs the catalogue could then predict (79 runs), the search
from 0.5 moved it to 1 (a pure roofline per kernel) and kept the rest. The eager launch cost
joined at 0 (no cost): the search from there moved it to 40 us and kept the rest; the dense
FP8 scale joined at 0.5 (the grouped GEMMs' scale): the search moved it to 0.65 and the eager
cost to 60 us, and kept the rest. Once a step stopped reading an untied input embedding whole
(it gathers its tokens' rows), the search from there moved the overlap back to 0.5 and the
eager cost to 40 us (score 0.1444 to 0.1399), and kept the rest."""
MAX_ROUNDS = 4


def _medians(errs: list[tuple[float, float, float]]) -> tuple[float, float]:
    return statistics.median(abs(e[0]) for e in errs), statistics.median(abs(e[1]) for e in errs)


def score(runs: list[tuple[dict[str, Any], Any]], point: dict[str, float]) -> tuple[float, ...]:
    """(score, -share within 25%, median output error, median TPOT error): the score is the
    mean of the steady runs' (a stated --max-concurrency) and the bursts' mean of the two
    medians, so that neither kind outweighs the other by its number of runs."""
    factors: dict[str, Any] = {
        k: v for k, v in point.items() if k not in ("hopper_flops_scale", "ampere_flops_scale")
    }
    shape = factors.pop("sharegpt_shape")
    hopper = point["hopper_flops_scale"]
    factors["flops_scale"] = {
        "hopper": hopper,
        "blackwell": hopper,
        "ada": hopper,
        "cdna3": hopper,
        "ampere": point["ampere_flops_scale"],
    }
    errs, kinds = [], []
    for run, ready in runs:
        if (e := predict_run(run, ready, shape, **factors).errors()) is not None:
            errs.append(e)
            kinds.append(run["max_concurrency"] is None)
    halves = [
        [e for e, burst in zip(errs, kinds, strict=True) if burst is b] for b in (False, True)
    ]
    value = statistics.mean(sum(_medians(h)) / 2 for h in halves if h)
    out, tpot = _medians(errs)
    within = sum(1 for e in errs if abs(e[0]) <= 0.25 and abs(e[1]) <= 0.25) / len(errs)
    return value, -within, out, tpot


def main() -> None:
    calibration = [r for r in load_runs() if r["split"] == "calibration"]
    runs = [(r, ready) for r in calibration if not isinstance(ready := prepare(r), str)]
    print(f"{len(runs)} calibration runs predicted ({len(calibration) - len(runs)} skipped)")
    point = dict(START)
    best = score(runs, point)
    for _ in range(MAX_ROUNDS):
        moved = False
        for name, values in GRID.items():
            for value in values:
                if value == point[name]:
                    continue
                trial = {**point, name: value}
                s = score(runs, trial)
                if s[:2] < best[:2]:
                    point, best, moved = trial, s, True
        if not moved:
            break
    print(", ".join(f"{k} {v}" for k, v in point.items()))
    _, within, out, tpot = best
    print(f"calibration: median |error| output {out:.0%}, TPOT {tpot:.0%}", end="")
    print(f", both within 25% {-within:.0%}")


if __name__ == "__main__":
    main()
