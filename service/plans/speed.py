"""POST /speed answered on resolved specs: one deployment over a sweep of concurrencies (a
closed loop, as ``vllm bench serve --max-concurrency N``) or of request rates (an open loop),
one row per point. Shared by the controller, the chat command and the CLI's local mode. The
catalogue lookup and the worker threads are imported where they are used: the CLI's local mode
answers through this module without SQLAlchemy or anyio."""

from typing import TYPE_CHECKING

from service.plans.evaluate import resolve_formats, resolve_model, weight_format_of
from service.plans.serving import check_length, check_model_length, replica_of
from service.schemas.speed import SpeedAnswer, SpeedRequest, SpeedRow
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import tensor_parallel_problem
from service.sizing.serving.loop import Workload, closed_loop, open_loop
from service.sizing.vllm.options import VllmOptions

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

DEFAULT_MAX_MODEL_LEN = 8192
"""max_model_len when the request names none: 8,192 tokens (the default context of /plan), or
the request's prompt plus answer when longer, and at most the model's own maximum context."""
SWEEP_NOTE = (
    "Steady state of the serving model (service/sizing/serving): continuous batching with "
    "chunked prefill, the engine's own KV pool rule; no prefix caching, speculative decoding or "
    "disaggregated prefill. Per replica unless the name says per GPU."
)


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
    needed = request.input_tokens + request.output_tokens
    # The default never passes the model's own limit, which vLLM refuses to exceed.
    length = request.max_model_len or min(
        max(DEFAULT_MAX_MODEL_LEN, needed), max(model.max_context_tokens, needed)
    )
    check_length(request.input_tokens, request.output_tokens, length, "output_tokens")
    if request.max_model_len:
        check_model_length(model, length, "max_model_len", "max_model_len")
    else:
        check_model_length(model, needed, "output_tokens", "input_tokens + output_tokens")
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
        expert_parallel=request.expert_parallel,
    )
    gpus = tp * request.pipeline_parallel
    if isinstance(replica, str):
        raise SizingError(
            "tensor_parallel",
            f"the engine does not start on {gpus} x {gpu.slug}: {replica}; give a replica "
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
                    f"the KV pool ({replica.limits.kv_pool_tokens:,} tokens) cannot hold one "
                    f"request of "
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
        expert_parallel=request.expert_parallel,
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


async def evaluate_speed(session: "AsyncSession", data: SpeedRequest) -> SpeedAnswer:
    """Look the request's names up in the catalogue and run the serving model on them."""
    from service.catalogue import lookup
    from service.plans.threads import off_loop

    model = await resolve_model(session, data.model, data.model_spec, data.config_json)
    gpu = await lookup.gpu_spec(session, data.gpu)
    weight_slug = weight_format_of(data.weight_format, model.checkpoint_format)
    weights, kv = await resolve_formats(session, weight_slug, data.kv_format)
    return await off_loop(answer_speed, data, model, gpu, weights, kv)
