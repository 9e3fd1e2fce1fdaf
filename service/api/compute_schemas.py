"""Request and answer bodies of /plan, /matrix and /offload.

Bounds keep every computation finite and exact (JSON integers stay below 2^53); the sizing core
checks what bounds cannot (a utilisation in (0, 1], heads that divide, ...) and names the field.
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.api.catalogue_schemas import ModelBody
from service.sizing.hardware import CapacityBasis
from service.sizing.plan import Plan
from service.sizing.training import Projection, TrainingMemory

SlugRef = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[^\x00]+$")]
Users = Annotated[int, Meta(ge=1, le=1_000_000)]
ContextTokens = Annotated[int, Meta(ge=1, le=100_000_000)]
Utilisation = Annotated[float, Meta(gt=0, le=1)]
OverheadBytes = Annotated[int, Meta(ge=0, le=10**15)]
GpuCount = Annotated[int, Meta(ge=1, le=4096)]
Splits = Annotated[list[GpuCount], Meta(min_length=1, max_length=32)]
WorkloadKind = Literal["inference", "training", "lora", "qlora"]

SEED_OVERHEAD_BYTES = 4_000_000_000


class PlanRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One model (a catalogue slug or an inline architecture) on one GPU, or ranked on all."""

    model: SlugRef | None = None
    model_spec: ModelBody | None = None
    gpu: SlugRef | None = None
    workload: WorkloadKind = "inference"
    weight_format: SlugRef = "bf16"
    kv_format: SlugRef | None = None
    concurrency: Users = 8
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    splits: Splits | None = None
    """GPU counts to try; default [1, 2, 4, 8] for inference, 1 to 1024 for training."""
    capacity_basis: CapacityBasis = "marketed"
    recipe: Literal["mixed-precision-adam", "fp32-gradients-adam"] = "mixed-precision-adam"
    zero_stage: Literal[0, 1, 2, 3] = 3
    activation_fraction: Annotated[float, Meta(ge=0, le=10)] = 0.2
    lora_rank: Annotated[int, Meta(ge=1, le=65536)] = 16
    lora_targets: Annotated[list[Projection], Meta(min_length=1, max_length=7)] = msgspec.field(
        default_factory=lambda: ["q", "k", "v", "o"]
    )


class PlanAnswer(Plan, frozen=True, kw_only=True):
    """The best plan; without ``gpu`` in the request, ``options`` ranks one plan per GPU."""

    workload: WorkloadKind = "inference"
    options: list[Plan] = msgspec.field(default_factory=list)


class TrainingPerGpu(msgspec.Struct, frozen=True, kw_only=True):
    budget_bytes: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    total_bytes: int
    spare_bytes: int


class TrainingAnswer(msgspec.Struct, frozen=True, kw_only=True):
    workload: WorkloadKind
    model: str
    gpu: str
    fits: bool
    status: Literal["fits", "tight", "amber", "does_not_fit"]
    gpu_count: int
    zero_stage: int
    trainable_params: int
    model_state_bytes: int
    total_bytes: int
    budget_bytes: int
    spare_bytes: int
    spare_fraction: float
    per_gpu: TrainingPerGpu
    memory: TrainingMemory
    options: list["TrainingAnswer"] = msgspec.field(default_factory=list)


class MatrixRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Rows: models x weight formats; columns: GPUs. Empty lists mean the whole catalogue
    (formats: bf16, fp8 and the seeds' 4-bit)."""

    models: Annotated[list[SlugRef], Meta(max_length=64)] = []
    formats: Annotated[list[SlugRef], Meta(max_length=16)] = []
    gpus: Annotated[list[SlugRef], Meta(max_length=64)] = []
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
    resident_bytes: Annotated[int, Meta(ge=0, le=10**15)] | None = None
    link: SlugRef | None = None
    batch_size: Annotated[int, Meta(ge=1, le=100_000)] = 1
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    capacity_basis: CapacityBasis = "marketed"
