"""One replica of a deployment as the serving model sees it, and traffic planned over GPUs and
tensor-parallel sizes: the vLLM method's prediction (weights, memory terms, release defaults)
turned into step costs, the engine's limits and KV pool, and efficiency factors. Shared by
POST /speed, the ``traffic`` of /plan and /matrix, the chat commands and the CLI."""

from collections.abc import Mapping, Sequence

import msgspec

from service.sizing.cost import GpuPrice
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import default_splits, tensor_parallel_problem
from service.sizing.serving.curve import Curve
from service.sizing.serving.deploy import Deployment, replica_failure, replica_inputs
from service.sizing.serving.efficiency import Engine
from service.sizing.serving.traffic import (
    Candidate,
    CurveFor,
    NotServable,
    ReplicaModel,
    open_loop_for,
    plan_traffic,
    validate_traffic,
)
from service.sizing.serving.traffic_plan import Shortfall, Traffic, TrafficPlan
from service.sizing.vllm.options import VllmOptions
from service.sizing.vllm.plan import engine_config
from service.sizing.vllm.predict import EnginePrediction, predict_vllm


def gpu_label(gpu: GpuSpec) -> str:
    """'NVIDIA L40S' -> 'L40S'; the slug when the catalogue has no name."""
    return gpu.name.removeprefix("NVIDIA ").strip() or gpu.slug


def replica_of(
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
    options: VllmOptions,
    tensor_parallel: int,
    *,
    context_tokens: int,
    utilisation: float | None,
    engine: Engine,
    expert_parallel: int = 1,
) -> tuple[EnginePrediction, ReplicaModel | str]:
    """The vLLM method's prediction for the replica and, when the engine starts (its own KV
    pool rule: ``kv_pools``), its serving model, else why not (a SizingError names a field: a
    format the method does not load, an unknown architecture)."""
    config = engine_config(options, tensor_parallel, context_tokens, utilisation, weights, kv)
    p = predict_vllm(model, gpu, config)
    d = Deployment(
        model=model,
        gpu=gpu,
        weight_format=weights.slug,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=options.pipeline_parallel_size,
        expert_parallel=expert_parallel,
        max_num_seqs=options.max_num_seqs,
        max_num_batched_tokens=options.max_num_batched_tokens,
        # vllm_version is vLLM's release; another engine's rules take their current ones.
        release=options.vllm_version if engine == "vllm" else None,
    )
    failure = replica_failure(d, p, engine)
    if failure is not None:
        return p, failure
    costs, limits, eff = replica_inputs(d, p, engine)
    return p, ReplicaModel(costs=costs, efficiency=eff, limits=limits)


def check_length(input_tokens: int, output_tokens: int, max_model_len: int, field: str) -> None:
    """A request's prompt and answer must fit the engine's max_model_len."""
    total = input_tokens + output_tokens
    require(
        total <= max_model_len,
        field,
        f"input_tokens + output_tokens = {total:,} tokens is more than max_model_len "
        f"{max_model_len:,}: raise max_model_len (or context_tokens) or shorten the request",
    )


def check_model_length(model: ModelSpec, tokens: int, field: str, what: str) -> None:
    """vLLM refuses a max_model_len beyond the model's own (``failure.length_failure``): a
    request that needs one is the request's error, not each replica's. ``what`` names the
    length in the message ("max_model_len", "input_tokens + output_tokens")."""
    require(
        tokens <= model.max_context_tokens,
        field,
        f"{what} = {tokens:,} tokens is more than {model.slug}'s maximum context of "
        f"{model.max_context_tokens:,} (max_position_embeddings), beyond which vLLM does not "
        "start: shorten the context or the request",
    )


def tensor_parallel_sizes(gpu: GpuSpec, splits: Sequence[int] | None) -> tuple[int, ...]:
    """The sizes a replica may take: the request's splits within one node, else powers of two
    up to one node (1, 2, 4, 8 on 8 GPUs per node)."""
    if splits:
        return tuple(sorted({n for n in splits if n <= gpu.gpus_per_node}))
    return default_splits(gpu.gpus_per_node, max_nodes=1)


def candidate(
    model: ModelSpec,
    gpu: GpuSpec,
    tensor_parallel: int,
    pipeline_parallel: int,
    price: GpuPrice | None,
) -> Candidate:
    """A replica layout to try: a tensor-parallel size that cannot split the model fails at
    once; the others are predicted when the plan asks (``replica_curves``)."""
    c = Candidate(
        gpu=gpu.slug,
        gpu_name=gpu_label(gpu),
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
        price=price,
    )
    problem = tensor_parallel_problem(model, tensor_parallel)
    if problem:
        failure = Shortfall(code="cannot_split", field="splits", message=f"{c.label}: {problem}")
        return msgspec.structs.replace(c, failure=failure)
    return c


def replica_curves(
    model: ModelSpec,
    gpus: Sequence[GpuSpec],
    weights: NumberFormat,
    kv: NumberFormat,
    options: VllmOptions,
    *,
    context_tokens: int,
    utilisation: float | None,
    engine: Engine,
) -> CurveFor:
    """The curve of a candidate's replica: the vLLM method's prediction on its GPU, then the
    serving model's open loop (NotServable when the engine does not start)."""
    by_slug = {g.slug: g for g in gpus}

    def curve_for(c: Candidate, t: Traffic) -> Curve:
        try:
            _, replica = replica_of(
                model,
                by_slug[c.gpu],
                weights,
                kv,
                options,
                c.tensor_parallel,
                context_tokens=context_tokens,
                utilisation=utilisation,
                engine=engine,
            )
        except SizingError as exc:  # e.g. no efficiency known for the GPU's architecture
            raise NotServable(
                Shortfall(code="unsupported", field=exc.field, message=f"{c.label}: {exc}")
            ) from None
        if isinstance(replica, str):
            raise NotServable(
                Shortfall(
                    code="does_not_start",
                    field="tensor_parallel",
                    message=f"{c.label}: the engine does not start ({replica})",
                )
            )
        return open_loop_for(msgspec.structs.replace(c, replica=replica), t)

    return curve_for


def traffic_plan(
    traffic: Traffic,
    model: ModelSpec,
    gpus: Sequence[GpuSpec],
    weights: NumberFormat,
    kv: NumberFormat,
    prices: Mapping[str, GpuPrice],
    *,
    options: VllmOptions | None = None,
    context_tokens: int,
    utilisation: float | None,
    splits: Sequence[int] | None = None,
    field: str = "traffic",
) -> TrafficPlan:
    """The traffic planned on every GPU of ``gpus`` at every tensor-parallel size."""
    options = options or VllmOptions()
    validate_traffic(traffic, field)
    max_model_len = options.max_model_len or context_tokens
    check_length(
        traffic.input_tokens, traffic.output_tokens, max_model_len, f"{field}.output_tokens"
    )
    if options.max_model_len:
        check_model_length(model, max_model_len, "vllm.max_model_len", "max_model_len")
    else:
        check_model_length(model, max_model_len, "context_tokens", "context_tokens")
    # A format the vLLM method does not load is the request's error, not each option's.
    engine_config(options, 1, context_tokens, utilisation, weights, kv)
    candidates = [
        candidate(model, gpu, tp, options.pipeline_parallel_size, prices.get(gpu.slug))
        for gpu in gpus
        for tp in tensor_parallel_sizes(gpu, splits)
    ]
    curves = replica_curves(
        model,
        gpus,
        weights,
        kv,
        options,
        context_tokens=context_tokens,
        utilisation=utilisation,
        engine=traffic.engine,
    )
    return plan_traffic(candidates, traffic, curves)
