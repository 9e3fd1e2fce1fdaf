"""The offline CLI's start-up against Python's own: `python -m service plan llama-3.1-70b --gpu
h100` (the shipped catalogue, no server, no database) beside `python -c 'import msgspec'`, each
run in turns, the best of several runs each. Reports the ratio of wall times measured in one run
(goal of issue 20: at most 3), never absolute budgets. Run: `python bench/cli.py` (or
`make bench`)."""

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


def main() -> None:
    baseline, plan = float("inf"), float("inf")
    for _ in range(RUNS):
        baseline = min(baseline, seconds(BASELINE))
        plan = min(plan, seconds(PLAN))
    ratio = plan / baseline
    print(f"{'case':<44} {'best s':>7} {'ratio':>6} {'goal':>6}")
    name = "python -c 'import msgspec'"
    print(f"{name:<44} {baseline:>7.3f}")
    print(
        f"{'service plan llama-3.1-70b --gpu h100 (CLI)':<44} {plan:>7.3f} {ratio:>6.2f} "
        f"{'<=3':>6} {'ok' if ratio <= 3 else 'above'}"
    )


if __name__ == "__main__":
    main()
