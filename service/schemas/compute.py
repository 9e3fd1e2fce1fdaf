"""The /matrix and /offload requests (shared by the server, the client and the CLI)."""

from typing import Annotated

import msgspec
from msgspec import Meta

from service.schemas.bounds import (
    SEED_OVERHEAD_BYTES,
    ContextTokens,
    OverheadBytes,
    SlugRef,
    Splits,
    Users,
    Utilisation,
)
from service.sizing.cost import CostedCell, CostedMatrix, CostedRow
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis
from service.sizing.models import MAX_SAFE_INT
from service.sizing.offload import OffloadMechanism
from service.sizing.serving.traffic_plan import Traffic, TrafficCost

DEFAULT_MATRIX_FORMATS = ("bf16", "fp8", "int4")
"""The seeds' matrix rows: 16-bit, 8-bit and the 4.5-bit rule of thumb."""
MAX_MATRIX_MODELS, MAX_MATRIX_FORMATS, MAX_MATRIX_GPUS = 64, 16, 64
"""Names a matrix request may list (before de-duplication); the cells are bounded apart."""


class MatrixRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Rows: models x weight formats; columns: GPUs. Empty lists mean the whole catalogue
    (formats: bf16, fp8 and the seeds' 4-bit). Repeated names count once (first-seen order);
    at most MAX_MATRIX_CELLS models x formats x GPUs (a 422 naming the longest list)."""

    # Items are slugs checked by the catalogue lookup (unknown: 404 naming the list).
    models: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_MODELS)] = []
    formats: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_FORMATS)] = []
    gpus: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_GPUS)] = []
    kv_format: SlugRef | None = None
    concurrency: Users = 8
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    splits: Splits | None = None
    """GPU counts to try; default each GPU's ladder: 1, 2, 4, 8 inside a node (up to its
    gpus_per_node), then 2 and 4 whole nodes as pipeline stages (16, 32 for 8 per node)."""
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS
    traffic: Traffic | None = None
    """Each cell also plans this traffic: the fewest GPUs (replicas x tensor parallel 1, 2, 4,
    8 up to one node) that serve it within its limits, and their cost, on the vLLM method's KV
    pool at max_model_len = context_tokens. At most 1,024 cells with traffic (a 422 naming the
    longest list)."""


class OffloadRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: SlugRef
    gpu: SlugRef
    gpu_count: Annotated[int, Meta(ge=1, le=1024)] = 1
    weight_format: SlugRef = "bf16"
    kv_format: SlugRef | None = None
    resident_bytes: Annotated[int, Meta(ge=0, le=MAX_SAFE_INT)] | None = None
    """At most the weights' size (checked by the core, a 422 naming it)."""
    link: SlugRef | None = None
    batch_size: Annotated[int, Meta(ge=1, le=100_000)] = 1
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS
    mechanism: OffloadMechanism = "uva"
    """How the engine reaches offloaded weights: ``uva`` (vLLM V1 from 0.8.4: kernels read them
    in place, only the bytes a step touches cross) or ``copy`` (vLLM V0, or UVA disabled: each
    offloaded layer is copied to the GPU before it runs, every offloaded byte every step)."""


class TrafficCell(msgspec.Struct, frozen=True, kw_only=True):
    feasible: bool
    replicas: int | None = None
    tensor_parallel: int | None = None
    gpu_count: int | None = None
    """replicas x tensor_parallel."""
    requests_per_s_per_replica: float | None = None
    headroom: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    cost: TrafficCost | None = None
    summary: str
    """The option in words, or why none serves the traffic."""


class TrafficMatrixCell(CostedCell, frozen=True, kw_only=True):
    traffic: TrafficCell | None = None


class TrafficMatrixRow(CostedRow, frozen=True, kw_only=True):
    cells: list[TrafficMatrixCell]  # type: ignore[assignment]


class TrafficMatrix(CostedMatrix, frozen=True, kw_only=True):
    rows: list[TrafficMatrixRow]  # type: ignore[assignment]
    traffic: Traffic
