"""Compare what a start-up log says with what the vLLM method predicts (pure)."""

from typing import Literal

import msgspec

from service.sizing.errors import SizingError
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.units import GiB
from service.sizing.vllm.bitsandbytes import unsloth_keeps_nested_absmax
from service.sizing.vllm.budget import custom_all_reduce
from service.sizing.vllm.config import (
    EngineConfig,
    Quantization,
    for_release,
    kv_cache_dtype_of,
    quantization_of,
)
from service.sizing.vllm.flags import (
    MAX_BATCHED_TOKENS,
    MAX_GPU_BYTES,
    MAX_LORAS,
    MAX_MODEL_LEN,
    MAX_PIPELINE_STAGES,
    MAX_SEQS,
    MAX_TENSOR_PARALLEL,
)
from service.sizing.vllm.lora import LORA_RANKS
from service.sizing.vllm.predict import EnginePrediction, predict_vllm
from service.sizing.vllm.releases import EngineEra, era_of_version, last_of, release_rules
from service.sizing.vllm.runner import runs_on_model_runner_v2
from service.verify.startup_log import StartupLog

Severity = Literal["info", "warning", "problem"]


class Difference(msgspec.Struct, frozen=True, kw_only=True):
    quantity: str
    logged: float | None
    predicted: float | None
    relative_error: float | None
    severity: Severity
    likely_cause: str


class VerifyAnswer(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    parsed: StartupLog
    config_used: EngineConfig
    prediction: EnginePrediction
    differences: list[Difference]
    plan_short: bool
    """KV tokens / context < the users the plan must hold at once."""
    summary: str


ECHOED_RANGES: dict[str, tuple[float, float]] = {
    "tensor_parallel_size": (1, MAX_TENSOR_PARALLEL),
    "pipeline_parallel_size": (1, MAX_PIPELINE_STAGES),
    "max_model_len": (1, MAX_MODEL_LEN),
    "concurrency_tokens": (1, MAX_MODEL_LEN),
    "gpu_memory_utilization": (0.01, 1),
    "max_num_batched_tokens": (1, MAX_BATCHED_TOKENS),
    "max_num_seqs": (1, MAX_SEQS),
    "block_size": (1, 256),
    "cpu_offload_bytes": (0, MAX_GPU_BYTES),
    "total_gpu_memory_bytes": (1, MAX_GPU_BYTES),
    "max_loras": (1, MAX_LORAS),
    "max_lora_rank": (1, max(LORA_RANKS)),
}
"""What a flag the log echoes may be for the prediction to use it: the requests' own bounds
(``service.sizing.vllm.flags``). A value outside them (an edited or corrupted log: utilisation
0.0, a pipeline of 0 stages) is the log's fault and a 422 naming ``log``, never silently
replaced by the request's value or a default."""


def check_echoed_flags(log: StartupLog) -> None:
    """Every flag ``config_from_log`` takes from the log lies in ``ECHOED_RANGES``."""
    for name, (low, high) in ECHOED_RANGES.items():
        value = getattr(log, name)
        if value is not None and not low <= value <= high:  # the message only when raised
            raise SizingError(
                "log", f"the log echoes {name} = {value}, outside {low:g} to {high:g}"
            )


def config_from_log(
    log: StartupLog, base: EngineConfig, quantization: Quantization | None, era: EngineEra | None
) -> EngineConfig:
    """The configuration the log echoes, over ``base`` (the request's own flags; a utilisation
    neither gives is the release's default)."""
    check_echoed_flags(log)
    quant = quantization or (
        quantization_of(log.quantization, "log") if log.quantization else base.quantization
    )
    kv = kv_cache_dtype_of(log.kv_cache_dtype) if log.kv_cache_dtype else base.kv_cache_dtype
    # A release before the modelled ones is the pasted log's fault: the error names it.
    engine_era = era or (
        era_of_version(log.vllm_version, base.era, "log") if log.vllm_version else base.era
    )
    config = msgspec.structs.replace(
        base,
        tensor_parallel_size=log.tensor_parallel_size or base.tensor_parallel_size,
        pipeline_parallel_size=log.pipeline_parallel_size or base.pipeline_parallel_size,
        max_model_len=log.max_model_len or log.concurrency_tokens or base.max_model_len,
        gpu_memory_utilization=log.gpu_memory_utilization or base.gpu_memory_utilization,
        max_num_batched_tokens=log.max_num_batched_tokens or base.max_num_batched_tokens,
        max_num_seqs=log.max_num_seqs or base.max_num_seqs,
        block_size=log.block_size or base.block_size,
        enforce_eager=log.enforce_eager if log.enforce_eager is not None else base.enforce_eager,
        gpu_total_bytes=log.total_gpu_memory_bytes or base.gpu_total_bytes,
        compile_cache=log.compile_cache or base.compile_cache,
        model_runner=log.model_runner or base.model_runner,
        cpu_offload_bytes=(
            log.cpu_offload_bytes if log.cpu_offload_bytes is not None else base.cpu_offload_bytes
        ),
        kv_cache_dtype=kv,
        quantization=quant,
        era=engine_era,
        enable_lora=log.enable_lora if log.enable_lora is not None else base.enable_lora,
        max_loras=log.max_loras or base.max_loras,
        max_lora_rank=log.max_lora_rank or base.max_lora_rank,
    )
    if not log.vllm_version:
        config = msgspec.structs.replace(config, mla_weights=last_of(engine_era).mla_weights)
    else:
        config = for_release(config, log.vllm_version)
        # The release refines the era's rules only where the era was read from the log.
        config = msgspec.structs.replace(config, release=base.release) if era else config
    if unsloth_keeps_nested_absmax(log.unsloth_version):
        config = msgspec.structs.replace(config, bnb_absmax="nested")
    return config


ACTIVATION_TOLERANCE = 0.25
NON_TORCH_TOLERANCE = 0.5


def activation_cause(
    model: ModelSpec, config: EngineConfig, logged: int | None, predicted: int
) -> str:
    """Why the logged activation peak differs from the plan's, from what moves it."""
    general = (
        "The activation peak follows max_num_batched_tokens and max_num_seqs x vocabulary; "
        "lower them to free KV memory."
    )
    rel = _rel(logged, predicted)
    if rel is None or abs(rel) <= ACTIVATION_TOLERANCE:
        return general
    if runs_on_model_runner_v2(model, config) and not config.enforce_eager:
        if rel > 0 and config.compile_cache == "cold":
            return (
                "Lower than a first start: the torch.compile cache was warm (a restart on the "
                "same cache directory skips most of the compile-time peak); plan with "
                "compile_cache warm for restarts. " + general
            )
        if rel < 0 and config.compile_cache == "warm":
            return (
                "Higher than a restart: torch.compile compiled during this start (a new cache, "
                "image or flag change); plan with compile_cache cold for first starts. " + general
            )
    if release_rules(config.era, config.release).engine == "V0":
        return (
            "V0 profiles max_num_batched_tokens (max(max_model_len, 2048) unless set) in one "
            "forward pass, then samples max_num_seqs rows of the whole vocabulary. " + general
        )
    return general


def non_torch_cause(gpu: GpuSpec, config: EngineConfig, logged: int | None, predicted: int) -> str:
    """Why the logged non-torch memory differs from the plan's (the figure is fitted, per
    release and split, so a large excess points at something outside the plan)."""
    general = (
        "Non-torch memory is the CUDA context, NCCL and all-reduce buffers (higher with "
        "TP > 1), or another process on the same GPU."
    )
    rel = _rel(logged, predicted)
    if rel is None or rel >= -NON_TORCH_TOLERANCE:  # the log is not much above the plan
        return general
    tp = config.tensor_parallel_size
    if tp == 1:
        return (
            "More than one GPU's context and runtime take: another process on this GPU (or, "
            "for a V0 log, one that was there when the engine measured its baseline), or a "
            "runtime that keeps more outside torch (WSL2, unified-memory parts)."
        )
    v0 = release_rules(config.era, config.release).engine == "V0"
    if tp > 2 and gpu.is_hopper and v0:
        return (
            "NCCL's NVLink SHARP (NVLS) buffers on Hopper with NVSwitch and more than two GPUs "
            "(vLLM issue #9699: NCCL_NVLS_ENABLE=0 frees them), or another process."
        )
    if not custom_all_reduce(gpu, tp):
        return (
            "NCCL's own buffers without vLLM's custom all-reduce (a group spanning nodes, or "
            "GPUs without peer-to-peer), or another process on one of the GPUs."
        )
    return general


def _rel(logged: float | None, predicted: float | None) -> float | None:
    if logged is None or predicted is None or logged == 0:
        return None
    return (predicted - logged) / abs(logged)


def compare(
    model: ModelSpec,
    gpu: GpuSpec,
    log: StartupLog,
    base: EngineConfig,
    users: int,
    quantization: Quantization | None = None,
    era: EngineEra | None = None,
) -> VerifyAnswer:
    config = config_from_log(log, base, quantization, era)
    p = predict_vllm(model, gpu, config)
    g = p.per_gpu
    diffs: list[Difference] = []

    if log.weights_bytes is not None:
        # V0 prints the driver's figure: rank 0, the first pipeline stage.
        v0 = release_rules(config.era, config.release).engine == "V0"
        expected = p.stage_weights_bytes[0] if v0 else g.weights_bytes
        ratio = log.weights_bytes / expected if expected else 0.0
        rel = _rel(log.weights_bytes, expected)
        if 1.8 <= ratio <= 2.2:
            sev: Severity = "problem"
            cause = (
                f"The engine loaded about {ratio:.1f}x the expected weights: the checkpoint was "
                "loaded at the wrong precision (16-bit instead of 8-bit, or the quantisation "
                "flag was not applied), or the split is not the tensor-parallel size planned."
            )
        elif 0.45 <= ratio <= 0.55:
            sev, cause = (
                "warning",
                (
                    "About half the expected weights: the checkpoint is quantised (or split over "
                    "twice the GPUs) while the plan assumed otherwise; plan with its real format."
                ),
            )
        elif rel is not None and abs(rel) > 0.01:
            sev, cause = (
                "warning",
                (
                    "Weights differ by more than 1%: a different checkpoint layout (padding, "
                    "kernel repacking, vision tower, extra heads) than the architecture planned."
                ),
            )
        else:
            sev, cause = "info", "Weights as expected."
        diffs.append(
            Difference(
                quantity="weights_gib_per_gpu",
                logged=round(log.weights_bytes / GiB, 4),
                predicted=round(expected / GiB, 4),
                relative_error=rel,
                severity=sev,
                likely_cause=cause,
            )
        )
    # The budget's terms: (quantity, logged, predicted, predicted GiB, tolerance, likely cause).
    budget = (
        (
            "activation_gib",
            log.activation_bytes,
            g.activation_bytes,
            g.activation_gib,
            ACTIVATION_TOLERANCE,
            activation_cause(model, config, log.activation_bytes, g.activation_bytes),
        ),
        (
            "non_torch_gib",
            log.non_torch_bytes,
            g.non_torch_bytes,
            g.non_torch_gib,
            NON_TORCH_TOLERANCE,
            non_torch_cause(gpu, config, log.non_torch_bytes, g.non_torch_bytes),
        ),
        (
            "kv_cache_gib",
            log.kv_cache_bytes,
            g.kv_cache_bytes,
            g.kv_cache_gib,
            0.05,
            "The KV budget is what the weights, activation peak and non-torch memory leave of "
            "total x gpu_memory_utilization; another process on the GPU or a different "
            "utilisation also moves it.",
        ),
    )
    for quantity, logged, predicted, predicted_gib, tolerance, cause in budget:
        if logged is None:
            continue
        rel = _rel(logged, predicted)
        diffs.append(
            Difference(
                quantity=quantity,
                logged=round(logged / GiB, 2),
                predicted=predicted_gib,
                relative_error=rel,
                severity="info" if rel is None or abs(rel) <= tolerance else "warning",
                likely_cause=cause,
            )
        )
    logged_tokens = log.kv_cache_tokens
    if logged_tokens is None and log.gpu_blocks is not None:
        logged_tokens = log.gpu_blocks * config.block_size
    if logged_tokens is not None:
        rel = _rel(logged_tokens, p.kv_cache_tokens)
        diffs.append(
            Difference(
                quantity="kv_cache_tokens",
                logged=float(logged_tokens),
                predicted=float(p.kv_cache_tokens),
                relative_error=rel,
                severity="info" if rel is not None and abs(rel) <= 0.05 else "warning",
                likely_cause="Tokens follow the KV memory and the page size: a different "
                "kv_cache_dtype, block_size or hybrid grouping than planned changes them.",
            )
        )
    if log.failed != (not p.starts):
        diffs.append(
            Difference(
                quantity="starts",
                logged=0.0 if log.failed else 1.0,
                predicted=1.0 if p.starts else 0.0,
                relative_error=None,
                severity="problem",
                likely_cause="The engine "
                + (
                    "failed to start though the plan expected it to"
                    if log.failed
                    else "started though the plan predicted a failure"
                )
                + (f": {log.failure}" if log.failure else "")
                + ".",
            )
        )
    context = p.max_model_len  # the config's, or the model's when the config leaves it unset
    # The engine's own concurrency line counts whole requests the way the cache is laid out (a
    # sliding window or a linear layer's state is a fixed cost, not context x bytes a token):
    # Qwen3-Next's 973,760 tokens hold 14 requests of 262,144 tokens, not 973,760 // 262,144 = 3.
    if log.max_concurrency is not None and log.concurrency_tokens in (None, context):
        held, counted = int(log.max_concurrency), "the engine's concurrency line"
    else:
        held = (logged_tokens if logged_tokens is not None else p.kv_cache_tokens) // context
        counted = "KV tokens / context"
    short = log.failed or held < users
    if short:
        diffs.append(
            Difference(
                quantity="users_at_once",
                logged=float(held),
                predicted=float(users),
                relative_error=None,
                severity="problem",
                likely_cause=f"{counted}: {held} conversations of {context:,} tokens, "
                f"fewer than the {users} users the plan must hold at once: the plan is short "
                "(more GPUs, FP8 KV cache, a shorter context or a higher utilisation).",
            )
        )
    worst = [d for d in diffs if d.severity == "problem"]
    summary = (
        "The log matches the plan."
        if not worst and not any(d.severity == "warning" for d in diffs)
        else f"{len(worst)} problem(s), "
        f"{sum(1 for d in diffs if d.severity == 'warning')} warning(s): "
        + "; ".join(d.quantity for d in diffs if d.severity != "info")
    )
    return VerifyAnswer(
        model=model.slug,
        gpu=gpu.slug,
        parsed=log,
        # As the prediction resolved it: a utilisation neither given nor echoed is the release's.
        config_used=msgspec.structs.replace(
            config, gpu_memory_utilization=p.defaults.gpu_memory_utilization
        ),
        prediction=p,
        differences=diffs,
        plan_short=short,
        summary=summary,
    )
