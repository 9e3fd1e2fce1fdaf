"""Engine-faithful sizing: predict what vLLM reports at start-up (the seeds' step 6 without a
GPU), step by step: the defaults, the weights as loaded, the activation peak, non-torch and
CUDA-graph memory, the KV cache's pages, each pipeline stage's budget and blocks
(``budget``), then whether the engine starts and the lines it logs.

What is exact here: the page and block arithmetic, the log lines' formulas, the default flags.
Derived from vLLM's source: V0's activation peak, Model Runner V2's warm peak, CPU offload.
What is FITTED (``calibration``, fitted on the real logs in service/accuracy/cases/vllm_logs,
reported case by case by ``python -m service accuracy``): the torch-visible total per GPU, the
V1 sampler factors, V2's first-start peak and the non-torch memory. Weights as loaded follow
the checkpoint's layout (16-bit, FP8 linear layers, 4-bit, bitsandbytes, MXFP4 experts in the
padded per-rank layout of the MoE backend vLLM picks; see ``weights``).
"""

import functools

import msgspec

from service.sizing.errors import SizingError, require
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec, validate_model
from service.sizing.parallel import tensor_parallel_problem
from service.sizing.units import GiB
from service.sizing.vllm.activation import activation_peak
from service.sizing.vllm.budget import (
    StageBudget,
    busiest_stage,
    cuda_graph_bytes,
    non_torch_bytes,
    stage_budget,
    stage_weights,
)
from service.sizing.vllm.config import EngineConfig, model_dtype_bytes
from service.sizing.vllm.defaults import EngineDefaults, engine_defaults, torch_visible_bytes
from service.sizing.vllm.failure import Outcome, gib, length_failure, startup_failure
from service.sizing.vllm.flags import BLOCK_SIZES
from service.sizing.vllm.kv_cache import kv_layout
from service.sizing.vllm.lora import lora_bytes
from service.sizing.vllm.releases import EngineEra, ReleaseRules, release_rules
from service.sizing.vllm.runner import runs_on_model_runner_v2
from service.sizing.vllm.weights import rank_weight_bytes, rope_cache_bytes


class EngineGpu(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU of the busiest pipeline stage, in bytes (GiB alongside for reading logs)."""

    total_bytes: int
    usable_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_cache_bytes: int
    page_bytes: int
    """One block of one KV tensor (block_size tokens of one layer)."""
    block_bytes: int
    """One block across the rank's KV tensors (page x group size, or x layers)."""
    num_blocks: int
    total_gib: float
    usable_gib: float
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    cuda_graph_gib: float
    kv_cache_gib: float


class EnginePrediction(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    version: EngineEra
    """The accounting era the prediction used (``EngineConfig.era``)."""
    starts: bool
    failure: str | None
    kv_cache_tokens: int
    """The 'GPU KV cache size: N tokens' line."""
    max_concurrency: float
    """The 'Maximum concurrency for L tokens per request: X' line (X, rounded to 2 places)."""
    max_model_len: int
    block_size: int
    """Tokens a block holds: the flag, or what a linear-attention model raises it to."""
    stage_weights_bytes: list[int]
    """Weights on a rank of each pipeline stage, first to last (per_gpu is the stage with the
    fewest blocks)."""
    needed_kv_bytes_per_request: int
    blocks_per_request: int
    """Blocks one request of max_model_len takes across the layer groups (vLLM's
    ``get_max_concurrency_for_kv_cache_config``: concurrency = blocks / this)."""
    defaults: EngineDefaults
    kv_groups: int
    per_gpu: EngineGpu
    log_lines: list[str]
    notes: list[str]


def _validate(model: ModelSpec, config: EngineConfig) -> None:
    validate_model(model)
    tp, pp = config.tensor_parallel_size, config.pipeline_parallel_size
    require(1 <= tp <= 1024, "tensor_parallel_size", "must be between 1 and 1024")
    require(1 <= pp <= model.layers, "pipeline_parallel_size", "must be between 1 and the layers")
    require(config.block_size in BLOCK_SIZES, "block_size", "not a vLLM size")
    if config.max_model_len is not None:
        require(config.max_model_len >= 1, "max_model_len", "must be at least 1")
    require(config.cpu_offload_bytes >= 0, "cpu_offload_bytes", "must not be negative")
    problem = tensor_parallel_problem(model, tp)
    if problem:
        raise SizingError("tensor_parallel_size", problem)


def _defaults(model: ModelSpec, gpu: GpuSpec, config: EngineConfig, total: int) -> EngineDefaults:
    require(total > 0, "gpu_total_bytes", "must be positive")
    d = engine_defaults(model, total, gpu, config)
    require(d.max_num_batched_tokens >= 1, "max_num_batched_tokens", "must be at least 1")
    require(d.max_num_seqs >= 1, "max_num_seqs", "must be at least 1")
    require(0 < d.gpu_memory_utilization <= 1, "gpu_memory_utilization", "must be in (0, 1]")
    return d


def _tokens_line(rules: ReleaseRules, best: StageBudget, block_size: int, mml: int) -> int:
    """The 'GPU KV cache size: N tokens' figure. Newer _report_kv_cache_config (vLLM PRs
    #38364 / #40694, after 0.19) prints concurrency x max_model_len; the 0.23 Gemma 3 log on
    MI300X prints 1,217,591, not a block multiple."""
    if rules.tokens_line == "blocks":
        return best.blocks * block_size
    if rules.tokens_line == "concurrency":
        concurrency = best.blocks / best.per_request if best.per_request else 0.0
        return int(concurrency * mml)
    return best.blocks // best.groups * block_size


def _engine_gpu(
    total: int, usable: int, non_torch: int, graphs: int, best: StageBudget
) -> EngineGpu:
    return EngineGpu(
        total_bytes=total,
        usable_bytes=usable,
        weights_bytes=best.weights,
        activation_bytes=best.activation,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        kv_cache_bytes=best.kv_bytes,
        page_bytes=best.page,
        block_bytes=best.block_bytes,
        num_blocks=best.blocks,
        total_gib=gib(total),
        usable_gib=gib(usable),
        weights_gib=round(best.weights / GiB, 4),
        activation_gib=gib(best.activation),
        non_torch_gib=gib(non_torch),
        cuda_graph_gib=gib(graphs),
        kv_cache_gib=gib(best.kv_bytes),
    )


def _log_lines(
    per_gpu: EngineGpu, failure: str | None, tokens: int, mml: int, concurrency: float
) -> list[str]:
    lines = [
        f"Model loading took {per_gpu.weights_gib:.4f} GiB",
        f"Available KV cache memory: {per_gpu.kv_cache_gib:.2f} GiB",
    ]
    if failure:
        return [*lines, f"ValueError: {failure}"]
    return [
        *lines,
        f"GPU KV cache size: {tokens:,} tokens",
        f"Maximum concurrency for {mml:,} tokens per request: {concurrency:.2f}x",
    ]


@functools.lru_cache(maxsize=1024)
def predict_vllm(
    model: ModelSpec, gpu: GpuSpec, config: EngineConfig | None = None
) -> EnginePrediction:
    """What vLLM will log at start-up for this model on ``gpu`` with ``config``.

    Remembered per (model, GPU, config), all three frozen Structs: a vllm plan predicts every
    split of its ladder and /verify the split its log echoes, the same ones request after
    request. The prediction is shared: callers read it and never change its lists."""
    config = config or EngineConfig()
    _validate(model, config)
    rules = release_rules(config.era, config.release)
    total = config.gpu_total_bytes or torch_visible_bytes(gpu)
    d = _defaults(model, gpu, config, total)
    notes: list[str] = [f"Defaults: {d.rule}."]
    usable = int(total * d.gpu_memory_utilization)

    loaded, weight_notes = rank_weight_bytes(model, gpu, config)
    notes += weight_notes
    rope = rope_cache_bytes(model, model_dtype_bytes(config))
    on_v2 = runs_on_model_runner_v2(model, config)
    peak = activation_peak(model, config, rules, d, on_v2)
    non_torch = non_torch_bytes(gpu, config, on_v2)
    graphs = cuda_graph_bytes(model, gpu, config)

    layout = kv_layout(model, config, d, on_v2)
    bs, mml = layout.block_size, d.max_model_len
    if layout.state_page:
        notes.append(
            f"Linear-attention layers: attention block size {bs} tokens, so that an attention "
            f"page holds one sequence's recurrent state ({layout.state_page:,} B, padded to the "
            "page)."
        )
    lora, lora_note = lora_bytes(model, config, d)
    if lora_note:
        notes.append(lora_note)

    stages = stage_weights(model, config, rules, loaded, rope, lora)
    left = usable - non_torch - graphs
    budgets = [
        stage_budget(model, gpu, config, d, stage, left, peak, on_v2, layout) for stage in stages
    ]
    best = busiest_stage(budgets)
    concurrency = best.blocks / best.per_request if best.per_request else 0.0
    tokens = _tokens_line(rules, best, bs, mml)
    outcome = Outcome(
        total=total,
        usable=usable,
        utilisation=d.gpu_memory_utilization,
        kv_bytes=best.kv_bytes,
        need=best.need,
        tokens=tokens,
        max_model_len=mml,
        graphs=graphs,
    )
    failure = length_failure(model, config) or startup_failure(config, rules, outcome)
    if best.groups > 1:
        counted = (
            "max_model_len x concurrency."
            if rules.tokens_line == "concurrency"
            else "blocks per group x block_size."
        )
        notes.append(
            f"Hybrid KV cache: {best.groups} layer groups; the tokens line counts {counted}"
        )
    if graphs:
        notes.append(
            f"CUDA-graph memory is an estimate ({gib(graphs)} GiB, the median of vLLM's own "
            "estimates in collected logs), subtracted from the budget as 0.21 and later do."
        )

    per_gpu = _engine_gpu(total, usable, non_torch, graphs, best)
    conc = round(concurrency, 2) if failure is None else 0.0
    return EnginePrediction(
        model=model.slug,
        gpu=gpu.slug,
        version=config.era,
        starts=failure is None,
        failure=failure,
        kv_cache_tokens=tokens if failure is None else 0,
        max_concurrency=conc,
        max_model_len=mml,
        block_size=bs,
        stage_weights_bytes=[stage.weights for stage in stages],
        needed_kv_bytes_per_request=best.need,
        blocks_per_request=best.per_request,
        defaults=d,
        kv_groups=best.groups,
        per_gpu=per_gpu,
        log_lines=_log_lines(per_gpu, failure, tokens, mml, conc),
        notes=notes,
    )
