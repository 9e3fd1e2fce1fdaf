"""Weights as vLLM loads them on one rank: the checkpoint's layout (16-bit, FP8, or the 4-bit
and MXFP4 layouts of their own modules), shared out over the decoder layers, the rotary caches
and what --cpu-offload-gb moves to the CPU."""

from service.sizing.errors import require
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import even_shares
from service.sizing.units import ceil_div
from service.sizing.vllm.bitsandbytes import BNB_REMOVED, bnb_layer_bytes, bnb_loaded_bytes
from service.sizing.vllm.config import EngineConfig, Mxfp4Backend, Quantization, model_dtype_bytes
from service.sizing.vllm.int4 import INT4_BYTES, w4a16_expert_bytes
from service.sizing.vllm.mla import mla_extra_bytes
from service.sizing.vllm.mxfp4 import (
    MXFP4_LINEAR_BYTES,
    mxfp4_backend_for,
    mxfp4_expert_bytes,
    quark_mxfp4_packed,
)
from service.sizing.vllm.releases import release_rules
from service.sizing.vllm.shapes import attention_params, embedding_params


def rank_weight_bytes(
    model: ModelSpec, gpu: GpuSpec, config: EngineConfig
) -> tuple[int, list[str]]:
    """One rank's weights as loaded in the checkpoint's layout (``loaded_weight_bytes``, or
    bitsandbytes' own), before they are shared out over the stages, and the notes that name the
    layout."""
    rules = release_rules(config.era, config.release)
    backend: Mxfp4Backend = config.mxfp4_backend
    if backend == "auto":
        backend = "xpu" if config.device == "xpu" else mxfp4_backend_for(gpu, rules)
    notes: list[str] = []
    quantization = config.quantization
    tp = config.tensor_parallel_size
    # A dense MXFP4 checkpoint is AMD Quark's: held packed, or dequantised at load (then it is
    # an unquantised model in every respect that follows).
    dense_mxfp4 = quantization == "mxfp4" and not model.is_moe
    if dense_mxfp4 and not quark_mxfp4_packed(gpu):
        quantization = "none"
        notes.append(
            "Quark MXFP4 weights dequantised to the model's dtype at load: this GPU has no MX "
            "GEMMs (vLLM emulates them)."
        )
    if quantization == "bnb-nf4":
        require(rules.bitsandbytes, "quantization", BNB_REMOVED)
        require(config.bnb_absmax in ("nested", "fp32"), "bnb_absmax", "must be nested or fp32")
        loaded = bnb_loaded_bytes(model, config)
        scales = (
            "double-quantised block scales kept"
            if config.bnb_absmax == "nested"
            else "block scales dequantised to fp32 at load"
        )
        skipped = config.bnb_skip_attention_layers or config.bnb_skip_mlp_layers
        also = " and the checkpoint's skipped layers" if skipped else ""
        notes.append(
            f"bitsandbytes 4-bit: packed weights and their quant states ({scales}); "
            f"embeddings, LM head, norms{also} in 16-bit."
        )
    elif quantization == "mxfp4" and dense_mxfp4:
        loaded = packed_linear_bytes(model, tp, *MXFP4_LINEAR_BYTES)
        notes.append(
            "Quark MXFP4 linear layers packed (4.25 bits a weight); embeddings and LM head 16-bit."
        )
    else:
        loaded = loaded_weight_bytes(model, quantization, tp, backend, config.int4_group_size)
    if config.dtype == "float32" and quantization == "none":
        loaded *= 2  # 4 bytes a parameter instead of 2
    if quantization == "mxfp4" and not dense_mxfp4:
        notes.append(f"MXFP4 experts laid out as vLLM's {backend} MoE backend holds them.")
    return loaded, notes


def packed_linear_bytes(model: ModelSpec, tensor_parallel: int, num: int, den: int) -> int:
    """One rank's weights with every linear layer at num / den bytes a weight, sliced by TP; the
    embedding and an untied LM head 16-bit, ``model.replicated_params`` whole and 16-bit."""
    whole = model.replicated_params * 2
    total = model.total_params - model.replicated_params
    sixteen = 2 * embedding_params(model)
    return ceil_div((total - sixteen) * num + sixteen * 2 * den, den * tensor_parallel) + whole


def loaded_weight_bytes(
    model: ModelSpec,
    quantization: Quantization,
    tensor_parallel: int,
    mxfp4_backend: Mxfp4Backend = "triton",
    int4_group_size: int = 128,
) -> int:
    """Weights on one rank as the engine loads them (vocab-parallel embedding and LM head, every
    matrix sliced by TP; the decoder's norms are negligible). MXFP4: the experts as
    ``mxfp4_expert_bytes`` lays them out (``mxfp4_backend`` must be resolved, not auto), the
    rest 16-bit. ``model.replicated_params`` (a vision tower's convolution, norms and
    row-parallel biases) are whole and 16-bit on every rank."""
    tp = tensor_parallel
    whole = model.replicated_params * 2
    total = model.total_params - model.replicated_params  # sliced by TP
    if quantization == "none":
        return ceil_div(total * 2, tp) + whole
    if quantization == "fp8":
        sixteen = 2 * embedding_params(model)  # embedding + untied LM head stay 16-bit
        return ceil_div((total - sixteen) + sixteen * 2, tp) + whole
    if quantization in INT4_BYTES:
        return packed_linear_bytes(model, tp, *INT4_BYTES[quantization])
    require(
        model.is_moe and model.intermediate_size > 0,
        "quantization",
        f"{quantization} needs an MoE model",
    )
    h, i = model.hidden_size, model.intermediate_size
    if quantization == "w4a16-experts":
        rest = ceil_div((total - model.layers * model.experts * 3 * h * i) * 2, tp)
        return w4a16_expert_bytes(model, tp, int4_group_size) + rest + whole
    require(mxfp4_backend != "auto", "mxfp4_backend", "resolve auto with mxfp4_backend_for")
    # Logical expert parameters (gate/up/down and their biases) leave the 16-bit remainder.
    logical = model.layers * model.experts * (3 * h * i + 2 * i + h)
    rest = ceil_div((total - logical) * 2, tp)
    return mxfp4_expert_bytes(model, tp, mxfp4_backend) + rest + whole


def layer_weight_bytes(model: ModelSpec, body_bytes: int, config: EngineConfig) -> list[int]:
    """Bytes each decoder layer puts on one rank, ``body_bytes`` (the rank's weights less any
    embedding and head held apart) shared out as vLLM lays it out:

    * an MoE model's leading dense layers (DeepSeek's first 3) hold their dense FFN instead of
      the experts, so layers are not alike (per-stage weights follow which layers a stage has);
    * ``ReplicatedLinear`` layers are whole on every TP rank: every MoE router (16-bit) and
      MLA's q_a_proj and kv_a_proj_with_mqa (0.93 GiB a rank for DeepSeek-V3 at TP 8);
    * MLA keeps more after loading (``mla_weights``, ``mla_extra_bytes``).

    Checked on DeepSeek-V3/R1 FP8 logs (the FP8 block scales, ~0.03%, are not counted):
    vLLM 0.6.6 TP 8 x PP 4, stage 0: 16.9538 against 16.9583 GiB (DeepSeek-V3 issue #205);
    0.7.3 TP 8: 83.76 against 83.88 (8x H200); 0.7.2 TP 8 x PP 2, stage 0: 39.60 against 39.66
    (vLLM issue #13074)."""
    tp, layers = config.tensor_parallel_size, model.layers
    if config.quantization == "bnb-nf4":
        # Layers the checkpoint keeps 16-bit are heavier; norms and biases are shared evenly.
        linear = bnb_layer_bytes(model, config)
        rest = even_shares(body_bytes - sum(linear), layers)
        return [a + b for a, b in zip(linear, rest, strict=True)]
    sixteen = model_dtype_bytes(config)
    # Bytes of a weight-matrix parameter (a fraction for 4-bit layouts).
    num, den = INT4_BYTES.get(
        config.quantization, (1 if config.quantization == "fp8" else sixteen, 1)
    )
    per_layer = even_shares(body_bytes, layers)
    if model.dense_layers:
        ffn = 3 * model.hidden_size * model.dense_intermediate_size
        dense = ceil_div((attention_params(model) + ffn) * num, den * tp)
        moe = even_shares(body_bytes - model.dense_layers * dense, layers - model.dense_layers)
        per_layer = [dense] * model.dense_layers + moe
    # Replicated parts: whole on the rank, less the 1/TP share body_bytes already counted (at
    # the matrix bytes: the router is 16-bit even in a quantised checkpoint).
    router = model.hidden_size * model.experts if model.is_moe else 0
    router_extra = router * sixteen - ceil_div(router * num, den * tp)
    low_rank_params = (
        model.hidden_size * (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_head_dim)
        if model.kv_lora_rank
        else 0
    )
    low_rank = ceil_div(low_rank_params * num, den)
    mla = mla_extra_bytes(model, config) if model.kv_lora_rank else 0
    # The same extra on every layer of a kind (summed once, not per layer).
    extra = low_rank - ceil_div(low_rank, tp) + mla
    routed = extra + router_extra
    dense_count = min(model.dense_layers, layers)
    return [size + extra for size in per_layer[:dense_count]] + [
        size + routed for size in per_layer[dense_count:]
    ]


def rope_cache_bytes(model: ModelSpec, value_bytes: int = 2) -> int:
    """The rotary cos/sin caches every rank builds while loading ("Model loading took" counts
    them): rows x rotary dimension in the model's dtype, one per distinct rope (vLLM's
    ``RotaryEmbedding`` registers ``cos_sin_cache`` as a buffer; ``get_rope`` shares it). Llama
    3.1 8B: 131,072 x 128 x 2 B = 32 MiB (its logs: 14.9888 GiB against 14.9575 of parameters);
    Gemma 3 4B: (131,072 + 1,048,576) x 256 x 2 B = 0.5625 GiB."""
    rows = model.rope_cache_rows or (model.max_context_tokens,)
    rotary = (
        model.qk_rope_head_dim
        if model.kv_lora_rank
        else model.rotary_dim or model.resolved_head_dim
    )
    return sum(rows) * rotary * value_bytes


def offloaded_layer_bytes(layer_bytes: list[int], budget: int) -> list[int]:
    """Bytes of each decoder layer that --cpu-offload-gb moves to the CPU (vLLM 0.7
    ``maybe_offload_to_cpu``, applied by ``make_layers`` to each layer in order): parameters go
    whole until the budget is spent, so layers before the one that crosses it go entirely and
    that one in part (to within one parameter, not modelled). Embeddings, the LM head, norms
    outside the layers and buffers (the rotary caches) stay on the GPU."""
    if budget <= 0:  # no --cpu-offload-gb (the default): nothing moves
        return [0] * len(layer_bytes)
    offloaded: list[int] = []
    left = budget
    for size in layer_bytes:
        # A layer's share can be negative (a tied embedding's second copy taken back from the
        # layers, ``layer_weight_bytes``); nothing of it can move.
        part = min(max(size, 0), max(left, 0))
        offloaded.append(part)
        left -= part
    return offloaded
