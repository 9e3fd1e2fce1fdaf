"""What a plan must hold besides the weights (the workload), and the GPU counts it may try.

Seed rule (part 7, "Which GPUs hold which models?"): 8 conversations of 8,192 tokens, about 4 GB
of overhead per GPU and each GPU filled to 90%; splits of 1, 2, 4 or 8 inside a node, whole
nodes as pipeline stages beyond it (``service.sizing.parallel.default_splits``).
"""

from collections.abc import Sequence

import msgspec

from service.sizing.errors import require
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis, GpuSpec
from service.sizing.parallel import default_splits

MAX_GPU_COUNT = 65_536
MAX_SPLITS = 64
MAX_CONTEXT_TOKENS = 100_000_000
"""The longest context a request may size (a /plan's context_tokens, vLLM's max_model_len)."""
SEED_OVERHEAD_BYTES = 4_000_000_000
"""The seeds' "about 4 GB of overhead per GPU"."""


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    """What the GPUs must hold besides the weights, and how full they may be filled.

    Defaults are the seeds' matrix workload: 8 conversations of 8,192 tokens, 90% fill and
    about 4 GB of overhead (CUDA context, activations, graphs) per GPU.
    """

    concurrency: int = 8
    context_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    overhead_bytes_per_gpu: int = SEED_OVERHEAD_BYTES
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS
    splits: tuple[int, ...] | None = None
    """GPU counts to try; None: each GPU's default ladder (``default_splits``)."""


def splits_for(workload: Workload, gpu: GpuSpec) -> tuple[int, ...]:
    """The GPU counts a plan on ``gpu`` tries: the workload's, else the GPU's default ladder."""
    if workload.splits is not None:
        return workload.splits
    return default_splits(gpu.gpus_per_node)


def larger_ladder(gpu: GpuSpec) -> tuple[int, ...]:
    """The default ladder without its node limit (up to MAX_GPU_COUNT GPUs): where a plan that
    does not fit looks for the smallest split that would."""
    return default_splits(gpu.gpus_per_node, max_nodes=max(1, MAX_GPU_COUNT // gpu.gpus_per_node))


def validate_workload(workload: Workload) -> Workload:
    require(workload.concurrency >= 1, "concurrency", "must be at least 1")
    require(workload.context_tokens >= 1, "context_tokens", "must be at least 1")
    require(
        0 < workload.gpu_memory_utilization <= 1,
        "gpu_memory_utilization",
        "must be in (0, 1]",
    )
    require(workload.overhead_bytes_per_gpu >= 0, "overhead_bytes_per_gpu", "must not be negative")
    if workload.splits is not None:
        validate_splits(workload.splits)
    return workload


def validate_splits(splits: Sequence[int]) -> None:
    """The GPU counts a plan may try, for either budget method: 1 to MAX_SPLITS of them, each
    1 to MAX_GPU_COUNT (a zero would divide the heads by nothing)."""
    require(1 <= len(splits) <= MAX_SPLITS, "splits", f"must name 1 to {MAX_SPLITS} GPU counts")
    require(
        all(1 <= n <= MAX_GPU_COUNT for n in splits),
        "splits",
        f"GPU counts must be between 1 and {MAX_GPU_COUNT}",
    )
