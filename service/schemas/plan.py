"""The /plan request and its answers: the seeds' inference plan (one GPU, or ranked on all) and
a training plan. Shared by the server, the saved plans, the client and the CLI."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from service.schemas.bounds import (
    SEED_OVERHEAD_BYTES,
    ContextTokens,
    OptionalUtilisation,
    OverheadBytes,
    SlugRef,
    Splits,
    Users,
    WorkloadKind,
)
from service.sizing.cost import Cost, RankBy
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis
from service.sizing.models import ModelSpec
from service.sizing.plan import Plan
from service.sizing.serving.traffic_plan import Traffic, TrafficPlan
from service.sizing.training import Projection, TrainingMemory
from service.sizing.vllm.options import VllmOptions


class PlanRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One model (a catalogue slug or an inline architecture) on one GPU, or ranked on all."""

    model: SlugRef | None = None
    model_spec: ModelSpec | None = None
    """An inline architecture instead of a catalogue slug (checked like a catalogue row)."""
    config_json: dict[str, Any] | None = None
    """Or a Hugging Face config.json: the architecture, exact parameter counts and, for a
    quantised checkpoint, its stored size are derived from it (service.catalogue.hf_config)."""
    gpu: SlugRef | None = None
    workload: WorkloadKind = "inference"
    weight_format: SlugRef | None = None
    """The weights' number format. Omitted: the checkpoint's own as published (a catalogue or
    imported model's ``checkpoint_format``: fp8 for DeepSeek-V3, mxfp4 for gpt-oss; the answer
    warns ``weight_format_from_checkpoint``), else bf16."""
    kv_format: SlugRef | None = None
    concurrency: Users = 8
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: OptionalUtilisation = None
    """The share of each GPU's memory to fill. Default: 0.9 for the seed method; for the vllm
    method, the release's own default (vLLM's --gpu-memory-utilization: 0.92 from 0.20, 0.9
    before), echoed in the prediction's config."""
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    splits: Splits | None = None
    """GPU counts to try. Default for inference: each GPU's ladder, 1, 2, 4, 8 inside a node
    (up to its gpus_per_node), then 2 and 4 whole nodes as pipeline stages (16, 32 for 8 per
    node); for the vllm method the in-node part; for training 1 to 1024."""
    rank_by: RankBy = "gpus"
    """Without ``gpu``: order the options, status first (fits with 10% spare or more, then
    tight, then amber), then by the fewest GPUs (default), the lowest hourly cost or the lowest
    purchase cost (inference only); GPUs without that price come after the priced ones, listed
    in ``unpriced_gpus``. The answer's ``ranking_rule`` says the rule."""
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS
    """driver (default): the bytes the driver shows (nvidia-smi MiB), one basis for every GPU;
    marketed: the vendor's figure as decimal GB (the seeds' method, which favours GPUs marketed
    in decimal GB, such as B200 and L40S, by about 7% over those marketed in GiB)."""
    recipe: Literal["mixed-precision-adam", "fp32-gradients-adam"] = "mixed-precision-adam"
    zero_stage: Literal[0, 1, 2, 3] = 3
    activation_fraction: Annotated[float, Meta(ge=0, le=10)] = 0.2
    lora_rank: Annotated[int, Meta(ge=1, le=65536)] = 16
    lora_targets: Annotated[list[Projection], Meta(min_length=1, max_length=7)] = msgspec.field(
        default_factory=lambda: ["q", "k", "v", "o"]
    )
    method: Literal["seed", "vllm"] = "seed"
    """seed: the seeds' budget (capacity x utilisation - overhead); vllm: predict what vLLM
    reports at start-up (service.sizing.vllm.predict), for one ``gpu``, inference only."""
    vllm: VllmOptions | None = None
    """vLLM's flags for method vllm (null: the engine's defaults for the GPU); with
    ``traffic``, the flags its replicas run with, whatever the method."""
    traffic: Traffic | None = None
    """Plan the fewest GPUs (the cheapest) that serve this traffic within its limits: replicas
    x tensor parallel on each GPU (1, 2, 4, 8 up to one node, or the splits named within a
    node), each replica's KV pool the vLLM method's at max_model_len = vllm.max_model_len or
    context_tokens. Inference only."""


class PlanOption(Plan, frozen=True, kw_only=True):
    """One GPU's plan with its cost at the catalogue's prices."""

    cost: Cost | None = None
    """gpu_count x the GPU's prices; null when the GPU has no price or the plan does not fit."""


class PlanAnswer(Plan, frozen=True, kw_only=True, tag_field="kind", tag="inference"):
    """The best plan; without ``gpu`` in the request, ``options`` ranks one plan per GPU."""

    workload: WorkloadKind = "inference"
    options: list[PlanOption] = msgspec.field(default_factory=list)
    cost: Cost | None = None
    """gpu_count x the GPU's prices; null when the GPU has no price or the plan does not fit."""
    rank_by: RankBy = "gpus"
    ranking_rule: str = ""
    """How ``options`` are ordered, in words; empty when the request named a gpu."""
    unpriced_gpus: list[str] = msgspec.field(default_factory=list)
    """Ranked by a cost: the GPUs that fit but lack that price (listed after the priced ones)."""
    traffic: TrafficPlan | None = None
    """The request's traffic planned: the chosen replicas, every option and why each cheaper
    one fails (null without ``traffic``)."""


class TrainingPerGpu(msgspec.Struct, frozen=True, kw_only=True):
    budget_bytes: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    total_bytes: int
    spare_bytes: int


class TrainingAnswer(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="training"):
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
