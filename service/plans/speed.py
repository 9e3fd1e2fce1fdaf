"""POST /speed answered on resolved specs: one deployment over a sweep of concurrencies (a
closed loop, as ``vllm bench serve --max-concurrency N``) or of request rates (an open loop),
one row per point. Shared by the controller, the chat command and the CLI's local mode."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue import lookup
from service.plans.bounds import OptionalUtilisation, SlugRef
from service.plans.evaluate import resolve_formats, resolve_model, weight_format_of
from service.plans.serving import check_length, replica_of
from service.plans.threads import off_loop
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import tensor_parallel_problem
from service.sizing.serving.efficiency import Efficiency, Engine
from service.sizing.serving.loop import Bottleneck, Workload, closed_loop, open_loop
from service.sizing.serving.traffic import Rate, Tokens
from service.sizing.vllm.flags import (
    BatchedTokens,
    ModelLen,
    PipelineStages,
    Seqs,
    TensorParallel,
)
from service.sizing.vllm.plan import VllmOptions

MAX_SWEEP_POINTS = 64
DEFAULT_MAX_MODEL_LEN = 8192
"""max_model_len when the request names none: 8,192 tokens (the default context of /plan), or
the request's prompt plus answer when longer."""
Concurrency = Annotated[int, Meta(ge=1, le=1_000_000)]
SWEEP_NOTE = (
    "Steady state of the serving model (service/sizing/serving): continuous batching with "
    "chunked prefill, the vLLM method's KV pool; no prefix caching, speculative decoding or "
    "disaggregated prefill. Per replica unless the name says per GPU."
)


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


def options_of(request: SpeedRequest, max_model_len: int) -> VllmOptions:
    return VllmOptions(
        max_model_len=max_model_len,
        max_num_seqs=request.max_num_seqs,
        max_num_batched_tokens=request.max_num_batched_tokens,
        vllm_version=request.vllm_version,
        pipeline_parallel_size=request.pipeline_parallel,
    )


def answer_speed(
    request: SpeedRequest,
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
) -> SpeedAnswer:
    """The sweep's rows; a 422 naming the field when the deployment cannot serve it."""
    closed = request.concurrencies is not None
    require(
        closed != (request.request_rates_per_s is not None),
        "concurrencies",
        "give concurrencies (a closed loop) or request_rates_per_s (an open loop), exactly one",
    )
    length = request.max_model_len or max(
        DEFAULT_MAX_MODEL_LEN, request.input_tokens + request.output_tokens
    )
    check_length(request.input_tokens, request.output_tokens, length, "output_tokens")
    tp = request.tensor_parallel
    problem = tensor_parallel_problem(model, tp)
    require(problem is None, "tensor_parallel", problem or "")
    options = options_of(request, length)
    p, replica = replica_of(
        model,
        gpu,
        weights,
        kv,
        options,
        tp,
        context_tokens=length,
        utilisation=request.gpu_memory_utilization,
        engine=request.engine,
    )
    gpus = tp * request.pipeline_parallel
    if replica is None:
        raise SizingError(
            "tensor_parallel",
            f"the engine does not start on {gpus} x {gpu.slug}: {p.failure}; give a replica "
            "more GPUs, a larger GPU or a shorter max_model_len",
        )
    rows = []
    points: list[tuple[int | None, float | None]] = (
        [(n, None) for n in request.concurrencies or []]
        if closed
        else [(None, r) for r in request.request_rates_per_s or []]
    )
    for concurrency, rate in points:
        w = Workload(
            input_tokens=request.input_tokens,
            output_tokens=request.output_tokens,
            concurrency=concurrency,
            request_rate_per_s=rate,
        )
        try:
            run = closed_loop if closed else open_loop
            s = run(replica.costs, replica.efficiency, replica.limits, w)
        except SizingError as exc:
            if exc.field == "kv_pool_tokens":
                raise SizingError(
                    "input_tokens",
                    f"the KV pool ({p.kv_cache_tokens:,} tokens) cannot hold one request of "
                    f"{request.input_tokens + request.output_tokens:,} tokens",
                ) from None
            raise
        rows.append(
            SpeedRow(
                concurrency=concurrency,
                request_rate_per_s=rate,
                ttft_s=s.ttft_s,
                tpot_s=s.tpot_s,
                itl_s=s.itl_s,
                output_tokens_per_s=s.output_tokens_per_s,
                output_tokens_per_s_per_gpu=s.output_tokens_per_s_per_gpu,
                total_tokens_per_s=s.total_tokens_per_s,
                total_tokens_per_s_per_gpu=s.total_tokens_per_s_per_gpu,
                requests_per_s=s.requests_per_s,
                requests_per_s_per_gpu=s.requests_per_s / gpus,
                running_batch=s.running_batch,
                bottleneck=s.bottleneck,
                stable=s.stable,
                utilisation=s.utilisation,
            )
        )
    return SpeedAnswer(
        model=model.slug,
        gpu=gpu.slug,
        engine=request.engine,
        engine_version=p.version,
        weight_format=weights.slug,
        kv_format=kv.slug,
        tensor_parallel=tp,
        pipeline_parallel=request.pipeline_parallel,
        gpus_per_replica=gpus,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
        loop="closed" if closed else "open",
        max_model_len=p.max_model_len,
        kv_cache_tokens=p.kv_cache_tokens,
        max_num_seqs=replica.limits.max_num_seqs,
        max_num_batched_tokens=replica.limits.max_num_batched_tokens,
        efficiency=replica.efficiency,
        rows=rows,
        notes=[SWEEP_NOTE],
    )


async def evaluate_speed(session: AsyncSession, data: SpeedRequest) -> SpeedAnswer:
    """Look the request's names up in the catalogue and run the serving model on them."""
    model = await resolve_model(session, data.model, data.model_spec, data.config_json)
    gpu = await lookup.gpu_spec(session, data.gpu)
    weight_slug = weight_format_of(data.weight_format, model.checkpoint_format)
    weights, kv = await resolve_formats(session, weight_slug, data.kv_format)
    return await off_loop(answer_speed, data, model, gpu, weights, kv)
