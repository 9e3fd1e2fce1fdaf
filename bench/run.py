"""Benchmarks of the sizing core. Reports ratios measured in one run (never absolute budgets):
how a whole matrix compares with one plan, and how MLA, sliding-window and multi-node layouts
compare with a plain dense model. Run: `make bench` (or `python bench/run.py`)."""

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.sizing.formats import FORMATS
from service.sizing.matrix import SEED_MATRIX_WORKLOAD, build_matrix
from service.sizing.plan import Workload, plan
from tests.unit.sizing.specs import (
    ALL_GPUS,
    DEEPSEEK_V3,
    GEMMA_3_27B,
    GPT_OSS_120B,
    H100,
    LLAMA_8B,
    LLAMA_70B,
    QWEN25_7B,
)

BF16, FP8 = FORMATS["bf16"], FORMATS["fp8"]


def per_call(fn: object, number: int) -> float:
    timer = timeit.Timer(fn)  # type: ignore[arg-type]
    return min(timer.repeat(repeat=5, number=number)) / number


def main() -> None:
    seed = Workload(concurrency=40, context_tokens=8192)
    multi_node = Workload(splits=(1, 2, 4, 8, 16))
    base = per_call(lambda: plan(LLAMA_70B, H100, BF16, BF16, seed), 2000)
    cases = {
        "dense 70B, 4-GPU plan (baseline)": base,
        "MLA DeepSeek-V3 on 16 GPUs (2 pipeline stages)": per_call(
            lambda: plan(DEEPSEEK_V3, H100, FP8, FP8, multi_node), 500
        ),
        "sliding-window gpt-oss-120b": per_call(
            lambda: plan(GPT_OSS_120B, H100, BF16, BF16, seed), 2000
        ),
        "sliding-window Gemma 3 27B": per_call(
            lambda: plan(GEMMA_3_27B, H100, BF16, BF16, seed), 2000
        ),
    }
    models = [LLAMA_8B, LLAMA_70B, DEEPSEEK_V3, GPT_OSS_120B, GEMMA_3_27B, QWEN25_7B]
    formats = [BF16, FP8, FORMATS["int4"]]
    cells = len(models) * len(formats) * len(ALL_GPUS)
    matrix = per_call(lambda: build_matrix(models, formats, ALL_GPUS, SEED_MATRIX_WORKLOAD), 20)
    print(f"{'case':<52} {'x baseline':>10}")
    for name, seconds in cases.items():
        print(f"{name:<52} {seconds / base:>10.2f}")
    print(f"{f'matrix of {cells} cells, per cell':<52} {matrix / cells / base:>10.2f}")
    print(f"{f'matrix of {cells} cells, whole':<52} {matrix / base:>10.1f}")


if __name__ == "__main__":
    main()
