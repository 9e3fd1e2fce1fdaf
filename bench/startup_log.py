"""Cost of reading a pasted start-up log (POST /verify's parser) as the paste grows. Reports
ratios measured in one run, never absolute budgets: a line twice as long should cost about twice
as much (a pattern that backtracks quadratically shows about 4x), and a paste of blank or very
short lines as large as the body limit (1 MiB) should cost little against a real log.
Run: `python bench/startup_log.py` (or `make bench`)."""

import contextlib
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.sizing.errors import SizingError
from service.verify.startup_log import parse_startup_log

CASES = Path(__file__).resolve().parents[1] / "service" / "accuracy" / "cases" / "vllm_logs"
REAL_CASE = CASES / "dennislee-a100-80gb-x2-same-node-qwen2-7b-tp2-util0.5.json"
LONG_LINES: dict[str, Callable[[int], str]] = {
    "digits after a number's prefix": lambda n: "Maximum concurrency for " + "1" * n,
    "spaces after a total's name": lambda n: "total_gpu_memory" + " " * n,
    "digits and separators": lambda n: "GPU KV cache size: " + "1," * (n // 2),
}


def seconds(text: str) -> float:
    def parse() -> None:
        with contextlib.suppress(SizingError):
            parse_startup_log(text)

    return min(timeit.Timer(parse).repeat(repeat=3, number=1))


def main() -> None:
    real = seconds("\n".join(json.loads(REAL_CASE.read_text())["log_lines"]))
    print(f"{'case':<52} {'ratio':>10}")
    for name, line in LONG_LINES.items():
        ratio = seconds(line(200_000)) / seconds(line(100_000))
        print(f"{f'{name}: 200k / 100k characters':<52} {ratio:>10.2f}")
    blank = seconds("\n" * 2**20) / real
    short = seconds("abcd\n" * (2**20 // 5)) / real
    print(f"{'1 MiB of blank lines / a real log':<52} {blank:>10.1f}")
    print(f"{'1 MiB of 4-character lines / a real log':<52} {short:>10.1f}")


if __name__ == "__main__":
    main()
