"""The bodies of POST /speed: one deployment and a sweep in, one row per point out (the
answers are computed in service.plans.speed)."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from service.schemas.bounds import OptionalUtilisation, SlugRef
from service.sizing.models import ModelSpec
from service.sizing.serving.efficiency import Efficiency, Engine
from service.sizing.serving.traffic_plan import Bottleneck, Rate, Tokens
from service.sizing.vllm.flags import (
    BatchedTokens,
    ModelLen,
    PipelineStages,
    Seqs,
    TensorParallel,
)

MAX_SWEEP_POINTS = 64
Concurrency = Annotated[int, Meta(ge=1, le=1_000_000)]


class SpeedRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One deployment and a sweep: ``concurrencies`` (closed loop) or ``request_rates_per_s``
    (open loop), exactly one, of ``input_tokens`` prompts and ``output_tokens`` answers."""

    model: SlugRef | None = None
    model_spec: ModelSpec | None = None
    """An inline architecture instead of a catalogue slug."""
    config_json: dict[str, Any] | None = None
    """Or a Hugging Face config.json."""
    gpu: SlugRef
    tensor_parallel: TensorParallel = 1
    pipeline_parallel: PipelineStages = 1
    expert_parallel: TensorParallel = 1
    """An MoE's expert parallelism over the tensor-parallel group (TensorRT-LLM's --ep_size,
    SGLang's --ep-size, vLLM's --enable-expert-parallel: tensor_parallel): each GPU holds
    E / expert_parallel whole experts. It must divide tensor_parallel and the experts; 1 (every
    engine's default) splits each expert; a dense model ignores it."""
    weight_format: SlugRef | None = None
    """Default: the checkpoint's as published, else bf16 (as /plan)."""
    kv_format: SlugRef | None = None
    engine: Engine = "vllm"
    """vllm, sglang or tensorrt-llm: its efficiency factors and, for the last two, its default
    batch limits; the KV pool is the vLLM method's for every engine."""
    input_tokens: Tokens
    output_tokens: Tokens
    concurrencies: Annotated[list[Concurrency], Meta(min_length=1, max_length=64)] | None = None
    request_rates_per_s: Annotated[list[Rate], Meta(min_length=1, max_length=64)] | None = None
    max_model_len: ModelLen | None = None
    """Default: 8,192, or input_tokens + output_tokens when longer."""
    max_num_seqs: Seqs | None = None
    """Default: the release's (vLLM) or the engine's."""
    max_num_batched_tokens: BatchedTokens | None = None
    vllm_version: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    """The vLLM release whose memory accounting and defaults apply ("0.11.0")."""
    gpu_memory_utilization: OptionalUtilisation = None


class SpeedRow(msgspec.Struct, frozen=True, kw_only=True):
    concurrency: int | None
    request_rate_per_s: float | None
    ttft_s: float | None
    """Mean time to first token; null past an open loop's capacity (it grows without bound)."""
    tpot_s: float
    itl_s: float
    output_tokens_per_s: float
    """Per replica."""
    output_tokens_per_s_per_gpu: float
    total_tokens_per_s: float
    total_tokens_per_s_per_gpu: float
    requests_per_s: float
    requests_per_s_per_gpu: float
    running_batch: float
    bottleneck: Bottleneck
    stable: bool
    utilisation: float | None
    """Open loop: the rate over the replica's capacity."""


class SpeedAnswer(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    engine: Engine
    engine_version: str
    """The vLLM method's accounting era the KV pool was predicted for."""
    weight_format: str
    kv_format: str
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    """The request's: each GPU holds E / expert_parallel whole experts (1: every expert split)."""
    gpus_per_replica: int
    input_tokens: int
    output_tokens: int
    loop: Literal["closed", "open"]
    max_model_len: int
    kv_cache_tokens: int
    """The vLLM method's 'GPU KV cache size: N tokens'."""
    max_num_seqs: int
    max_num_batched_tokens: int
    efficiency: Efficiency
    """The factors used: achieved fractions of peak FLOPs and HBM bandwidth, fixed costs."""
    rows: list[SpeedRow]
    notes: list[str]
