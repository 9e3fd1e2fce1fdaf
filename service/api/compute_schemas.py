"""Request bodies of /matrix and /offload (/plan's live in service.plans.evaluate)."""

from typing import Annotated

import msgspec
from msgspec import Meta

from service.plans.bounds import (
    SEED_OVERHEAD_BYTES,
    ContextTokens,
    OverheadBytes,
    SlugRef,
    Splits,
    Users,
    Utilisation,
)
from service.sizing.hardware import CapacityBasis


class MatrixRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Rows: models x weight formats; columns: GPUs. Empty lists mean the whole catalogue
    (formats: bf16, fp8 and the seeds' 4-bit)."""

    # Items are slugs checked by the catalogue lookup (unknown: 404 naming the list).
    models: Annotated[list[str], Meta(max_length=64)] = []
    formats: Annotated[list[str], Meta(max_length=16)] = []
    gpus: Annotated[list[str], Meta(max_length=64)] = []
    kv_format: SlugRef | None = None
    concurrency: Users = 8
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    splits: Splits = msgspec.field(default_factory=lambda: [1, 2, 4, 8, 16, 32])
    capacity_basis: CapacityBasis = "marketed"


class OffloadRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: SlugRef
    gpu: SlugRef
    gpu_count: Annotated[int, Meta(ge=1, le=1024)] = 1
    weight_format: SlugRef = "bf16"
    kv_format: SlugRef | None = None
    resident_bytes: int | None = None
    """Checked by the core (0 to the weights' size, 422 naming it): the spec cannot carry the
    bounds of a nullable number."""
    link: SlugRef | None = None
    batch_size: Annotated[int, Meta(ge=1, le=100_000)] = 1
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    capacity_basis: CapacityBasis = "marketed"
