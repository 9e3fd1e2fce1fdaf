"""A typical POST /verify body for the benchmarks: a 200-line vLLM start-up log.

The collected cases keep only the lines that matter (service/accuracy/cases/vllm_logs); a
pasted log also carries the shard-loading progress, torch.compile and CUDA-graph lines in
between. This one is the 14 lines of a real Llama 3.1 8B start-up on an H200 (vLLM 0.24.0)
with 186 such lines around them, in the order vLLM prints them.
"""

import json
from pathlib import Path
from typing import Any

CASE = (
    Path(__file__).resolve().parents[1]
    / "service/accuracy/cases/vllm_logs/h200own-vllm0.24.0-llama-3.1-8b.json"
)
PREFIX = "(EngineCore pid=2109) "
LINES = 200


def _filler(kind: str, i: int) -> str:
    stamp = f"11-29 19:48:{20 + i % 30:02d}"
    if kind == "shards":
        done = i % 30 + 1
        return (
            f"{PREFIX}INFO {stamp} [model_executor/model_loader/weight_utils.py:512] Loading "
            f"safetensors checkpoint shards: {done * 100 // 30}% Completed | {done}/30 "
            f"[00:{done:02d}<00:{30 - done:02d}, 1.{i % 10}1it/s]"
        )
    if kind == "compile":
        return (
            f"{PREFIX}DEBUG {stamp} [compilation/backends.py:{600 + i}] Store the compiled "
            f"graph of compile range ({i}, {i + 1}) in the cache: 0.{i % 90 + 10:02d} s"
        )
    return (
        f"{PREFIX}INFO {stamp} [compilation/cuda_graph.py:{100 + i % 50}] Capturing CUDA graphs "
        f"(mixed prefill-decode, PIECEWISE): {i % 100:3d}%|{'#' * (i % 10)}| {i % 67}/67"
    )


def typical_log() -> str:
    real: list[str] = json.loads(CASE.read_text(encoding="utf-8"))["log_lines"]
    filler = LINES - len(real)
    shards, compile_, graphs = filler // 3, filler // 3, filler - 2 * (filler // 3)
    lines = [
        *real[:5],
        *(_filler("shards", i) for i in range(shards)),
        real[5],
        *(_filler("compile", i) for i in range(compile_)),
        *real[6:11],
        *(_filler("graphs", i) for i in range(graphs)),
        *real[11:],
    ]
    assert len(lines) == LINES
    return "\n".join(lines)


def typical_verify_body() -> dict[str, Any]:
    return {"log": typical_log(), "model": "llama-3.1-8b", "gpu": "h200"}
