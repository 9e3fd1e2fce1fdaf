"""The activation peak of vLLM's profiling pass, which the KV budget loses: V0's forward pass
or sampler, the V1 sampler's fp32 logits, Model Runner V2's forward pass and first-start
compile."""

from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div
from service.sizing.vllm.calibration import (
    CUBLAS_WORKSPACE_BYTES,
    FUSED_MOE_CHUNK_TOKENS,
    V0_SAMPLER_BYTES_PER_LOGIT,
    V2_ACTIVATION_BYTES_PER_HIDDEN,
    V2_FORWARD_VALUES_PER_TOKEN,
)
from service.sizing.vllm.config import EngineConfig, Quantization, model_dtype_bytes
from service.sizing.vllm.defaults import EngineDefaults
from service.sizing.vllm.releases import ReleaseRules


def activation_peak(
    model: ModelSpec,
    config: EngineConfig,
    rules: ReleaseRules,
    defaults: EngineDefaults,
    on_v2: bool,
) -> int:
    """The V1 peak on the stage that samples (the dummy sampler over fp32 logits, x the release's
    ``sampler_factor``), or Model Runner V2's on every stage (``v2_forward_peak_bytes``, and on a
    first CUDA start with torch.compile, ``V2_ACTIVATION_BYTES_PER_HIDDEN``). 0 on V0, whose peak
    is worked out per stage (``v0_activation_bytes``)."""
    if rules.engine == "V0":
        return 0
    if on_v2:
        peak = v2_forward_peak_bytes(model, defaults, model_dtype_bytes(config))
        compiles = config.compile_cache == "cold" and not config.enforce_eager
        if compiles and config.device == "cuda":
            peak = max(peak, V2_ACTIVATION_BYTES_PER_HIDDEN * model.hidden_size)
        return peak
    logits = defaults.max_num_seqs * (model.vocab_size or 32_000) * 4  # the sampler's fp32 logits
    return int(rules.sampler_factor * logits)


def v0_activation_bytes(
    model: ModelSpec,
    gpu: GpuSpec,
    config: EngineConfig,
    defaults: EngineDefaults,
    offloaded: list[int],
    samples: bool,
    first_layer: int = 0,
) -> int:
    """V0's activation peak on one rank of a stage: the forward pass (``v0_forward_peak_bytes``)
    or, on the stage that samples, the sampler over max_num_seqs rows of the whole vocabulary
    (``V0_SAMPLER_BYTES_PER_LOGIT``, with the final hidden states still held), whichever is
    larger; plus cuBLAS's workspace where the profile allocates it. The engine keeps the
    fewest blocks of any rank, so the sampling rank (TP rank 0) is the one that counts."""
    tokens, tp = defaults.max_num_batched_tokens, config.tensor_parallel_size
    peak = v0_forward_peak_bytes(model, tokens, tp, config.quantization, offloaded, first_layer)
    if samples:
        vocab = model.vocab_size or 32_000
        sampler = V0_SAMPLER_BYTES_PER_LOGIT * defaults.max_num_seqs * vocab
        peak = max(peak, sampler + tokens * model.hidden_size * 2)
    absorbed_on_gpu = (
        model.kv_lora_rank > 0
        and config.mla_weights in ("absorbed-fp32", "absorbed-bf16")
        and not all(offloaded)
    )
    if not absorbed_on_gpu:
        peak += CUBLAS_WORKSPACE_BYTES[0 if gpu.is_hopper else 1]
    return peak


def v0_forward_peak_bytes(
    model: ModelSpec,
    tokens: int,
    tp: int,
    quantization: Quantization,
    offloaded: list[int],
    first_layer: int = 0,
) -> int:
    """V0's profile peak in the forward pass over ``tokens`` (no chunked prefill), the largest of
    its layer kinds, each with what its offloaded weights bring back while it runs (``offloaded``:
    one entry per layer of the stage, whose first is the model's layer ``first_layer``).
    16-bit activations, H = hidden:

    * a dense MLP: the layer's input, residual, attention output and normed input (4 T H) and
      gate/up plus the activated half (3 T I / TP) alive at down_proj (Qwen2 / DeepSeek form;
      Llama rebinds its input and frees one T H earlier: over by T H x 2 B);
    * an MoE layer in fused_experts: 3 T H (4 with DeepSeek's shared experts, whose output waits
      for the routed ones), the caches for M = min(T, 32,768) tokens x top-k experts, gate/up
      and down halves sliced by TP (3 I / TP) and the unsliced down output (H), the router's
      logits (T E x 2 B), top-k weights and ids (8 T k) and the sorted ids; an FP8 block-quantised
      layer adds its quantised input (M H + 4 M ceil(H / 128))."""
    h, b, t = model.hidden_size, 2, tokens
    dense_width = model.dense_intermediate_size if model.is_moe else model.intermediate_size
    dense_count = max(model.dense_layers - first_layer, 0) if model.is_moe else len(offloaded)
    dense_layers = range(min(dense_count, len(offloaded)))
    moe_layers = range(len(dense_layers), len(offloaded))

    def brought_back(layers: range) -> int:
        return max((offloaded[i] for i in layers), default=0)

    peak = 0
    if dense_layers:
        peak = t * (4 * h + 3 * ceil_div(dense_width, tp)) * b + brought_back(dense_layers)
    if moe_layers:
        m, k, e = min(t, FUSED_MOE_CHUNK_TOKENS), model.experts_per_token, model.experts
        shared = 1 if model.kv_lora_rank else 0
        moe = (3 + shared) * t * h * b + m * k * (3 * ceil_div(model.intermediate_size, tp) + h) * b
        moe += t * e * b + 8 * t * k + 4 * (m * k + 63 * e)
        if quantization == "fp8":
            moe += m * h + 4 * m * ceil_div(h, 128)
        peak = max(peak, moe + brought_back(moe_layers))
    return peak


def v2_forward_peak_bytes(model: ModelSpec, defaults: EngineDefaults, value_bytes: int) -> int:
    """Model Runner V2's warm profile peak (``V2_FORWARD_VALUES_PER_TOKEN``): the MLP's widest
    moment over max_num_batched_tokens, or the dummy sampler's logits if they are larger."""
    per_intermediate, per_hidden = V2_FORWARD_VALUES_PER_TOKEN
    # An MoE token goes through experts_per_token experts of intermediate_size each.
    mlp = model.intermediate_size * max(model.experts_per_token, 1)
    width = per_intermediate * mlp + per_hidden * model.hidden_size
    forward = defaults.max_num_batched_tokens * width * value_bytes
    sampler = defaults.max_num_seqs * (model.vocab_size or 32_000) * value_bytes
    return max(forward, sampler)
