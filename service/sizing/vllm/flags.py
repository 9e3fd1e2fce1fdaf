"""Bounds of vLLM's flags as the service takes them: from a /plan request's ``vllm`` options, a
/verify request, or a pasted log's echo of them (``compare.ECHOED_RANGES``). Far above any real
deployment; they keep each prediction's arithmetic small and JSON numbers exact."""

from typing import Annotated, Literal, get_args

from msgspec import Meta

MAX_TENSOR_PARALLEL = 1024
MAX_PIPELINE_STAGES = 64
MAX_MODEL_LEN = 100_000_000
MAX_BATCHED_TOKENS = 10_000_000
MAX_SEQS = 65_536
MAX_LORAS = 1024
MAX_GPU_BYTES = 2**50
"""A per-GPU memory quantity: the --cpu-offload-gb budget, a device's total (a PiB)."""

TensorParallel = Annotated[int, Meta(ge=1, le=MAX_TENSOR_PARALLEL)]
PipelineStages = Annotated[int, Meta(ge=1, le=MAX_PIPELINE_STAGES)]
ModelLen = Annotated[int, Meta(ge=1, le=MAX_MODEL_LEN)]
BatchedTokens = Annotated[int, Meta(ge=1, le=MAX_BATCHED_TOKENS)]
Seqs = Annotated[int, Meta(ge=1, le=MAX_SEQS)]
Loras = Annotated[int, Meta(ge=1, le=MAX_LORAS)]
CpuOffloadBytes = Annotated[int, Meta(ge=0, le=MAX_GPU_BYTES)]
BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]
"""--block-size: the sizes the engine accepts."""
BLOCK_SIZES: tuple[int, ...] = get_args(BlockSize)
"""The same sizes, as ``predict_vllm`` checks them."""
