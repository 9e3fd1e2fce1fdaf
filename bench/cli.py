"""The offline CLI's start-up against Python's own: `python -m service plan llama-3.1-70b --gpu
h100` (the shipped catalogue, no server, no database) beside `python -c 'import msgspec'`, each
run in turns, the best of several runs each. Reports the ratio of wall times measured in one run
(goal of issue 20: at most 3), never absolute budgets. Run: `python bench/cli.py` (or
`make bench`).

Both sides run from bytecode, as an installed CLI does: pip compiles msgspec's modules when it
installs them, and Python writes the project's own on their first import, unless
PYTHONDONTWRITEBYTECODE is set (as on the development machine), when every run would compile
the project's sources again and the two sides would not compare. So the project's modules are
compiled first (``compileall``, into the ignored ``__pycache__`` folders); the line after the
goal's is the same run from source, for reference."""

import compileall
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 15
BASELINE = [sys.executable, "-c", "import msgspec"]
PLAN = [sys.executable, "-m", "service", "plan", "llama-3.1-70b", "--gpu", "h100"]


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def best_of(argv: list[str]) -> tuple[float, float]:
    """The best wall time of the baseline and of ``argv``, run in turns."""
    baseline, plan = float("inf"), float("inf")
    for _ in range(RUNS):
        baseline = min(baseline, seconds(BASELINE))
        plan = min(plan, seconds(argv))
    return baseline, plan


def _drop_bytecode() -> None:
    for cache in (ROOT / "service").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    _drop_bytecode()
    _, from_source = best_of(PLAN)
    compileall.compile_dir(ROOT / "service", quiet=1)
    try:
        baseline, plan = best_of(PLAN)
    finally:
        _drop_bytecode()  # leave the tree as it was
    ratio = plan / baseline
    print(f"{'case':<44} {'best s':>7} {'ratio':>6} {'goal':>6}")
    name = "python -c 'import msgspec'"
    print(f"{name:<44} {baseline:>7.3f}")
    print(
        f"{'service plan llama-3.1-70b --gpu h100 (CLI)':<44} {plan:>7.3f} {ratio:>6.2f} "
        f"{'<=3':>6} {'ok' if ratio <= 3 else 'above'}"
    )
    print(f"{'  the same, compiling its sources each run':<44} {from_source:>7.3f}")


if __name__ == "__main__":
    main()
