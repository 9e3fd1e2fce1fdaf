"""The KV budget of one GPU, stage by stage (vLLM ``gpu_worker.determine_available_memory`` /
V0 ``worker``):

    kv_bytes = torch-visible total x gpu_memory_utilization
               - weights as loaded on this rank
               - activation peak of the profiling pass (max_num_batched_tokens + sampler)
               - non-torch memory (CUDA context, NCCL / custom all-reduce buffers with TP > 1)
               - CUDA-graph memory (only in the releases that count it)

The pool then becomes blocks of the stage's layer groups; the engine keeps the fewest blocks
of any rank (every TP rank of a stage is alike, so the minimum is over pipeline stages).
"""

import msgspec

from service.sizing.hardware import GpuSpec
from service.sizing.models import LayerType, ModelSpec
from service.sizing.units import ceil_div
from service.sizing.vllm.activation import v0_activation_bytes
from service.sizing.vllm.calibration import (
    CUDA_GRAPH_ESTIMATE_BYTES,
    XPU_COMPILE_BYTES,
    XPU_NON_TORCH_BYTES,
)
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.defaults import EngineDefaults
from service.sizing.vllm.kv_cache import KvLayout, kv_groups
from service.sizing.vllm.lora import LoraBytes
from service.sizing.vllm.mla import mla_extra_bytes
from service.sizing.vllm.releases import EngineEra, ReleaseRules, last_of, release_rules
from service.sizing.vllm.runner import runs_on_model_runner_v2
from service.sizing.vllm.shapes import embedding_params
from service.sizing.vllm.weights import layer_weight_bytes, offloaded_layer_bytes


def is_rocm(gpu: GpuSpec) -> bool:
    """AMD GPUs run vLLM's ROCm build (the catalogue's vendor)."""
    return gpu.vendor == "AMD"


def custom_all_reduce(gpu: GpuSpec, tensor_parallel: int) -> bool:
    """Whether vLLM sets up its custom all-reduce (whose buffers are the larger TP > 1 non-torch
    figure): GPUs joined by NVLink or Infinity Fabric, or two PCIe GPUs with peer-to-peer
    (``CustomAllreduce`` refuses more than two PCIe-only GPUs; GeForce cards have no P2P:
    ``GpuSpec.peer_to_peer``)."""
    if tensor_parallel == 1:
        return False
    if gpu.nvlink is not None:
        return True
    return tensor_parallel == 2 and gpu.peer_to_peer


def non_torch_bytes(gpu: GpuSpec, config: EngineConfig, on_v2: bool) -> int:
    """What the first forward and sampler pass leave outside torch's allocator, per release and
    split (``ReleaseRules.non_torch_bytes``), or Intel XPU's own figures."""
    if config.device == "xpu":
        return XPU_NON_TORCH_BYTES[on_v2] + (0 if config.enforce_eager else XPU_COMPILE_BYTES)
    rules = release_rules(config.era, config.release)
    return rules.non_torch_bytes[1 if custom_all_reduce(gpu, config.tensor_parallel_size) else 0]


def subtracts_graph_estimate(model: ModelSpec, gpu: GpuSpec, config: EngineConfig) -> bool:
    """The original runner of 0.21 on takes its CUDA-graph estimate out of the KV budget; V2,
    eager mode and ROCm builds (until vLLM PR #48526) do not."""
    return (
        release_rules(config.era, config.release).subtracts_graph_estimate
        and config.device == "cuda"
        and not runs_on_model_runner_v2(model, config)
        and not config.enforce_eager
        and not is_rocm(gpu)
    )


def cuda_graph_bytes(model: ModelSpec, gpu: GpuSpec, config: EngineConfig) -> int:
    return CUDA_GRAPH_ESTIMATE_BYTES if subtracts_graph_estimate(model, gpu, config) else 0


def pipeline_partition(layers: int, pipeline_parallel: int, era: EngineEra) -> list[int]:
    """Layers per pipeline stage as vLLM's ``get_pp_indices`` splits them: from 0.8 (PR #13839)
    the remainder goes one layer each to the stages before the last, from the second-to-last
    back (61 over 2: [31, 30]); before it, all of it to the last stage ([30, 31])."""
    base, remainder = divmod(layers, pipeline_parallel)
    counts = [base] * pipeline_parallel
    if last_of(era).pipeline_remainder == "last-stage":
        counts[-1] += remainder
    else:
        for i in range(2, remainder + 2):
            counts[-i] += 1
    return counts


class StageWeights(msgspec.Struct, frozen=True, kw_only=True):
    """What one pipeline stage holds on each of its ranks."""

    layers: tuple[LayerType, ...]
    first_layer: int
    """The model's index of the stage's first layer."""
    offloaded: list[int]
    """Bytes of each of its layers that --cpu-offload-gb keeps in CPU memory."""
    weights: int
    """Weights on a rank, as "Model loading took" counts them."""
    first: bool
    last: bool


def stage_weights(
    model: ModelSpec,
    config: EngineConfig,
    rules: ReleaseRules,
    loaded: int,
    rope: int,
    lora: LoraBytes,
) -> list[StageWeights]:
    """Each stage's weights: the first holds the embedding, the last the LM head; the layers'
    weights follow their count (``layer_weight_bytes``), less what is offloaded, with the rotary
    caches and the LoRA parts counted in the weights on every rank."""
    tp, pp = config.tensor_parallel_size, config.pipeline_parallel_size
    edge = ceil_div(embedding_params(model) * 2, tp)
    per_layer = layer_weight_bytes(model, loaded - 2 * edge, config)
    # Before 0.8 vLLM's DeepSeek built its LM head on every pipeline stage (PR #13833).
    head_everywhere = rules.engine == "V0" and model.kv_lora_rank > 0
    mla_extra = mla_extra_bytes(model, config) if model.kv_lora_rank else 0
    stages: list[StageWeights] = []
    start = 0
    for index, count in enumerate(pipeline_partition(model.layers, pp, config.era)):
        stage_layers = per_layer[start : start + count]
        # --cpu-offload-gb: MLA's absorbed copies are built where their weights are (on the CPU
        # for a layer offloaded whole).
        checkpoint = [size - mla_extra for size in stage_layers]
        offloaded = offloaded_layer_bytes(checkpoint, config.cpu_offload_bytes)
        if config.cpu_offload_bytes > 0:
            stage_bytes = sum(
                kept - off + (mla_extra if off < kept else 0)
                for kept, off in zip(checkpoint, offloaded, strict=True)
            )
        else:  # nothing offloaded: every layer kept, MLA's copies where a layer has bytes
            stage_bytes = sum(checkpoint)
            if mla_extra:
                stage_bytes += mla_extra * sum(1 for kept in checkpoint if kept > 0)
        first, last = index == 0, index == pp - 1
        weights = stage_bytes + edge * (first + (last or head_everywhere)) + rope
        weights += (lora.vocab_first + lora.embedding) * first
        weights += (lora.vocab_last + lora.logits) * last
        weights += lora.layer * count + lora.punica
        stages.append(
            StageWeights(
                layers=model.resolved_layer_types[start : start + count],
                first_layer=start,
                offloaded=offloaded,
                weights=weights,
                first=first,
                last=last,
            )
        )
        start += count
    return stages


class StageBudget(msgspec.Struct, frozen=True, kw_only=True):
    """One pipeline stage's budget and blocks (every TP rank of a stage is alike)."""

    weights: int
    activation: int
    kv_bytes: int
    blocks: int
    page: int
    block_bytes: int
    groups: int
    per_request: int
    """Blocks one request of max_model_len takes across the stage's groups."""
    need: int
    """KV bytes one request of max_model_len needs on the stage."""


def stage_budget(
    model: ModelSpec,
    gpu: GpuSpec,
    config: EngineConfig,
    defaults: EngineDefaults,
    stage: StageWeights,
    left: int,
    activation_peak: int,
    on_v2: bool,
    layout: KvLayout,
) -> StageBudget:
    """A stage's KV budget (``left``: what utilisation leaves after non-torch and graph memory)
    and its blocks. V1's peak is the sampler, on the last stage only; Model Runner V2 peaks in
    the forward pass, on every stage; V0 in the larger of the two (vLLM PR #20665's TP2 x PP2
    log: 12.13 GiB on the first stage, 11.33 on the last, which samples)."""
    activation = activation_peak if stage.last or on_v2 else 0
    if release_rules(config.era, config.release).engine == "V0":
        activation = v0_activation_bytes(
            model, gpu, config, defaults, stage.offloaded, stage.last, stage.first_layer
        )
    kv_bytes = left - stage.weights - activation
    groups = kv_groups(stage.layers)
    page = layout.page_bytes(stage.layers)
    block_bytes = page * groups.group_size
    return StageBudget(
        weights=stage.weights,
        activation=activation,
        kv_bytes=kv_bytes,
        blocks=max(kv_bytes, 0) // block_bytes,
        page=page,
        block_bytes=block_bytes,
        groups=groups.full_groups + groups.sliding_groups + groups.linear_groups,
        per_request=groups.full_groups * layout.full_blocks
        + groups.sliding_groups * layout.sliding_blocks
        + groups.linear_groups,
        need=layout.request_bytes(stage.layers),
    )


def busiest_stage(stages: list[StageBudget]) -> StageBudget:
    """The stage with the fewest blocks a group: the engine sizes the cache by it."""
    best = stages[0]
    for stage in stages[1:]:
        if stage.blocks // stage.groups < best.blocks // best.groups:
            best = stage
    return best
