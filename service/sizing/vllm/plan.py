"""The vLLM method on /plan: the fewest GPUs of the splits on which vLLM starts and holds the
users at once, with the two lines it will log."""

import functools
from typing import Any, Literal

import msgspec

from service.sizing.advice import PlanWarning
from service.sizing.errors import SizingError
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import tensor_parallel_problem
from service.sizing.serving.traffic_plan import TrafficPlan
from service.sizing.vllm.config import (
    EngineConfig,
    Quantization,
    for_release,
)
from service.sizing.vllm.options import VllmOptions
from service.sizing.vllm.predict import EnginePrediction, predict_vllm
from service.sizing.vllm.releases import LATEST_ERA, era_of_version
from service.sizing.workload import validate_splits

QUANTIZATION_OF_FORMAT: dict[str, Quantization] = {
    "bf16": "none",
    "fp16": "none",
    "fp8": "fp8",
    "mxfp4": "mxfp4",
    "awq-int4": "awq",
    "gptq-int4": "gptq",
    "nf4": "bnb-nf4",
}


class VllmSplit(msgspec.Struct, frozen=True, kw_only=True):
    tensor_parallel: int
    starts: bool
    holds_users: bool
    reason: str
    kv_cache_tokens: int
    max_concurrency: float


class VllmPlanAnswer(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="vllm"):
    method: Literal["vllm"] = "vllm"
    model: str
    gpu: str
    fits: bool
    gpu_count: int
    tensor_parallel: int
    pipeline_parallel: int
    concurrency: int
    context_tokens: int
    kv_cache_tokens: int
    """'GPU KV cache size: N tokens'."""
    max_concurrency: float
    """'Maximum concurrency for L tokens per request: X'."""
    log_lines: list[str]
    prediction: EnginePrediction
    considered: list[VllmSplit]
    warnings: list[PlanWarning] = msgspec.field(default_factory=list)
    """About the request itself (``weight_format_from_checkpoint``); the engine's own findings
    are in the prediction's notes."""
    traffic: TrafficPlan | None = None
    """The request's traffic planned (null without ``traffic``)."""


def engine_config_of(flags: object, **given: Any) -> EngineConfig:
    """The one mapping from a request to the engine's config: every EngineConfig field the
    request has by the same name (vLLM's flag names: a /plan's ``vllm`` options, a /verify
    body), as it has it; then ``given``, what the request says some other way (the split being
    tried, a default read from another field, the release's era)."""
    if isinstance(flags, msgspec.Struct):  # its attributes are its class's: looked up once
        names = _shared_fields(type(flags))
    else:
        names = tuple(name for name in EngineConfig.__struct_fields__ if hasattr(flags, name))
    fields = {name: getattr(flags, name) for name in names}
    return EngineConfig(**{**fields, **given})


@functools.cache
def _shared_fields(kind: type[msgspec.Struct]) -> tuple[str, ...]:
    """The EngineConfig fields a Struct type of request has."""
    return tuple(name for name in EngineConfig.__struct_fields__ if hasattr(kind, name))


def engine_config(
    options: VllmOptions,
    tensor_parallel: int,
    context_tokens: int,
    utilisation: float | None,
    weights: NumberFormat,
    kv: NumberFormat,
) -> EngineConfig:
    """The engine's flags for one split (``utilisation`` None: the release's own default)."""
    quant = options.quantization
    if quant is None:
        if weights.slug not in QUANTIZATION_OF_FORMAT:
            raise SizingError(
                "weight_format",
                "the vLLM method loads bf16, fp16, fp8, mxfp4, awq-int4, gptq-int4 or nf4 weights, "
                f"not {weights.slug}",
            )
        quant = QUANTIZATION_OF_FORMAT[weights.slug]
    kv_dtype = options.kv_cache_dtype or ("fp8" if kv.slug == "fp8" else "auto")
    era = options.engine_version or (
        era_of_version(options.vllm_version, LATEST_ERA, "vllm.vllm_version")
        if options.vllm_version
        else LATEST_ERA
    )
    config = engine_config_of(
        options,
        tensor_parallel_size=tensor_parallel,
        max_model_len=options.max_model_len or context_tokens,
        gpu_memory_utilization=utilisation,
        kv_cache_dtype=kv_dtype,
        quantization=quant,
        era=era,
    )
    return for_release(config, options.vllm_version)


def vllm_plan(
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
    options: VllmOptions,
    users: int,
    context_tokens: int,
    utilisation: float | None,
    splits: tuple[int, ...],
) -> VllmPlanAnswer:
    """Try each tensor-parallel size in ``splits`` (times the pipeline stages): the fewest GPUs
    where the engine starts and holds ``users`` requests of the context at once wins."""
    validate_splits(splits)
    considered: list[VllmSplit] = []
    best: tuple[int, EnginePrediction] | None = None
    last: tuple[int, EnginePrediction] | None = None
    for tp in sorted(set(splits)):
        problem = tensor_parallel_problem(model, tp)
        if problem:
            considered.append(
                VllmSplit(
                    tensor_parallel=tp,
                    starts=False,
                    holds_users=False,
                    reason=problem,
                    kv_cache_tokens=0,
                    max_concurrency=0.0,
                )
            )
            continue
        config = engine_config(options, tp, context_tokens, utilisation, weights, kv)
        p = predict_vllm(model, gpu, config)
        # Whole requests as the engine admits them: blocks / blocks a full-length request takes
        # in every layer group (a sliding window or a linear layer's state is a fixed cost, so
        # tokens / context undercounts: Qwen3-Next's 991,712 tokens hold 15 requests of
        # 262,144 tokens, not 3).
        held = p.per_gpu.num_blocks // p.blocks_per_request if p.blocks_per_request else 0
        holds = p.starts and held >= users
        reason = (
            p.failure
            or f"{p.kv_cache_tokens:,} tokens hold {held} conversations of "
            f"{p.max_model_len:,} tokens"
        )
        considered.append(
            VllmSplit(
                tensor_parallel=tp,
                starts=p.starts,
                holds_users=holds,
                reason=reason,
                kv_cache_tokens=p.kv_cache_tokens,
                max_concurrency=p.max_concurrency,
            )
        )
        last = (tp, p)
        if holds and best is None:
            best = (tp, p)
    chosen = best or last
    if chosen is None:
        raise SizingError("splits", "no GPU count in splits can split this model")
    tp, p = chosen
    pp = options.pipeline_parallel_size
    return VllmPlanAnswer(
        model=model.slug,
        gpu=gpu.slug,
        fits=best is not None,
        gpu_count=tp * pp,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        concurrency=users,
        context_tokens=p.max_model_len,
        kv_cache_tokens=p.kv_cache_tokens,
        max_concurrency=p.max_concurrency,
        log_lines=p.log_lines,
        prediction=p,
        considered=considered,
    )
