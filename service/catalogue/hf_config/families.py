"""The supported model families: each reads its config.json into the core's architecture, its
layer types and its sliding window."""

from collections.abc import Callable

import msgspec

from service.catalogue.hf_config.reader import (
    Config,
    base,
    gqa,
    layer_types,
    uniform,
    uniform_window,
)
from service.sizing.errors import require
from service.sizing.models import LayerType
from service.sizing.params import Architecture, Attention, Experts, LinearAttention

# Each family: config -> (architecture, layer types, sliding window).
Parsed = tuple[Architecture, tuple[LayerType, ...], int]


def _llama(c: Config) -> Parsed:
    bias = c.flag("attention_bias", False)
    require(not c.flag("mlp_bias", False), c.field("mlp_bias"), "MLP biases are not supported")
    arch = base(c, gqa(c, qkv_bias=bias, o_bias=bias), tie=False)
    kinds, window = uniform_window(c, arch.layers)
    return arch, kinds, window


def _phi3(c: Config) -> Parsed:
    """Phi-3 / Phi-4: Llama's shapes with fused qkv and gate/up projections (the same parameter
    count). LongRoPE variants build two rotary caches in vLLM, not modelled: refused."""
    require(c.raw.get("rope_scaling") is None, c.field("rope_scaling"), "LongRoPE is not supported")
    factor = c.raw.get("partial_rotary_factor", 1.0)
    require(
        isinstance(factor, int | float) and not isinstance(factor, bool) and factor == 1.0,
        c.field("partial_rotary_factor"),
        f"a partial rotary embedding ({factor!r}) is not supported; only 1.0 is",
    )
    return _llama(c)


def _mixtral(c: Config) -> Parsed:
    experts = Experts(
        routed=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("intermediate_size"),
    )
    arch = base(c, gqa(c), tie=False, experts=experts)
    kinds, window = uniform_window(c, arch.layers)
    return arch, kinds, window


def _qwen2(c: Config) -> Parsed:
    arch = base(c, gqa(c, qkv_bias=True), tie=False)
    window = 0
    kinds = uniform("full", arch.layers)
    if c.flag("use_sliding_window", False):
        window = c.integer("sliding_window")
        first_windowed = c.integer("max_window_layers", arch.layers, minimum=0)
        kinds = layer_types(c, arch.layers, lambda i: "sliding" if i >= first_windowed else "full")
    return arch, kinds, window


def _qwen3(c: Config) -> Parsed:
    bias = c.flag("attention_bias", False)
    arch = base(c, gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=True), tie=False)
    return arch, uniform("full", arch.layers), 0


def _qwen3_moe(c: Config) -> Parsed:
    layers = c.integer("num_hidden_layers")
    step = c.integer("decoder_sparse_step", 1)
    dense_only = c.raw.get("mlp_only_layers") or []
    require(isinstance(dense_only, list), c.field("mlp_only_layers"), "must be a list")
    moe = [i for i in range(layers) if i not in dense_only and (i + 1) % step == 0]
    experts = Experts(
        routed=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("moe_intermediate_size"),
        dense_layers=layers - len(moe),
    )
    bias = c.flag("attention_bias", False)
    arch = base(c, gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=True), tie=False, experts=experts)
    return arch, uniform("full", layers), 0


def _qwen3_next(c: Config) -> Parsed:
    """Qwen3-Next: every full_attention_interval-th layer is gated full attention (q_proj also
    projects the output gate, q/k norms), the others Gated DeltaNet; every layer's FFN is a
    sparse MoE block with one gated shared expert (vLLM ``qwen3_next.py``)."""
    layers = c.integer("num_hidden_layers")
    require(
        c.integer("decoder_sparse_step", 1) == 1 and not c.raw.get("mlp_only_layers"),
        c.field("decoder_sparse_step"),
        "only an MoE block in every layer is supported",
    )
    interval = c.integer("full_attention_interval", 4)
    kinds = layer_types(c, layers, lambda i: "full" if (i + 1) % interval == 0 else "linear")
    require(
        set(kinds) <= {"full", "linear"},
        c.field("layer_types"),
        "Qwen3-Next layers are full_attention or linear_attention",
    )
    linear = LinearAttention(
        key_heads=c.integer("linear_num_key_heads"),
        value_heads=c.integer("linear_num_value_heads"),
        key_head_dim=c.integer("linear_key_head_dim"),
        value_head_dim=c.integer("linear_value_head_dim"),
        conv_kernel=c.integer("linear_conv_kernel_dim"),
    )
    shared_width = c.integer("shared_expert_intermediate_size", 0, minimum=0)
    experts = Experts(
        routed=c.integer("num_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("moe_intermediate_size"),
        shared=1 if shared_width else 0,
        shared_intermediate_size=shared_width,
        shared_gate=bool(shared_width),
    )
    attention = msgspec.structs.replace(
        gqa(c, qkv_bias=c.flag("qkv_bias", False), qk_norm=True),
        output_gate=c.flag("attn_output_gate", True),
    )
    arch = Architecture(
        layers=layers,
        hidden_size=c.integer("hidden_size"),
        vocab_size=c.integer("vocab_size"),
        intermediate_size=c.integer("moe_intermediate_size"),  # no dense layer
        attention=attention,
        experts=experts,
        tie_word_embeddings=c.flag("tie_word_embeddings", False),
        linear_attention=linear,
        linear_layers=kinds.count("linear"),
    )
    return arch, kinds, 0


def _deepseek_v3(c: Config) -> Parsed:
    heads = c.integer("num_attention_heads")
    attention = Attention(
        kind="mla",
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", heads),
        head_dim=c.integer("v_head_dim"),
        q_lora_rank=c.optional_integer("q_lora_rank") or 0,
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
        o_bias=c.flag("attention_bias", False),
    )
    require(c.integer("moe_layer_freq", 1) == 1, c.field("moe_layer_freq"), "only 1 is supported")
    experts = Experts(
        routed=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("moe_intermediate_size"),
        shared=c.integer("n_shared_experts", 0, minimum=0),
        dense_layers=c.integer("first_k_dense_replace", 0, minimum=0),
    )
    arch = base(c, attention, tie=False, experts=experts)
    return arch, uniform("mla", arch.layers), 0


def _glm4_moe(c: Config) -> Parsed:
    """GLM-4.5 / 4.6 (``Glm4MoeForCausalLM``, transformers ``modeling_glm4_moe.py``, vLLM
    ``glm4_moe.py``): grouped-query attention with q/k/v biases (attention_bias), no o_proj
    bias, optional per-head q/k RMSNorms (use_qk_norm) and a partial rotary embedding; the
    first first_k_dense_replace layers are dense, the others n_routed_experts routed experts
    (top num_experts_per_tok) plus n_shared_experts shared ones of moe_intermediate_size. The
    sigmoid router's e_score_correction_bias is a buffer, not a parameter (as in DeepSeek-V3)."""
    experts = Experts(
        routed=c.integer("n_routed_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("moe_intermediate_size"),
        shared=c.integer("n_shared_experts", 0, minimum=0),
        dense_layers=c.integer("first_k_dense_replace", 0, minimum=0),
    )
    attention = gqa(
        c, qkv_bias=c.flag("attention_bias", False), qk_norm=c.flag("use_qk_norm", False)
    )
    arch = base(c, attention, tie=False, experts=experts)
    return arch, uniform("full", arch.layers), 0


def _gpt_oss(c: Config) -> Parsed:
    experts = Experts(
        routed=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok", c.raw.get("experts_per_token")),
        intermediate_size=c.integer("intermediate_size"),
        router_bias=True,
        expert_bias=True,
    )
    arch = base(c, gqa(c, qkv_bias=True, o_bias=True, sinks=True), tie=False, experts=experts)
    kinds = layer_types(c, arch.layers, lambda i: "sliding" if i % 2 == 0 else "full")
    return arch, kinds, c.integer("sliding_window")


def _gemma(c: Config) -> Parsed:
    """Gemma (1): Llama's layout with tied embeddings and a head_dim of its own (256)."""
    arch = base(c, gqa(c), tie=True)
    return arch, uniform("full", arch.layers), 0


def _gemma2(c: Config) -> Parsed:
    arch = base(c, gqa(c), tie=True, norms=4)
    # Gemma 2 alternates: even layers attend through the sliding window.
    kinds = layer_types(c, arch.layers, lambda i: "sliding" if i % 2 == 0 else "full")
    return arch, kinds, c.integer("sliding_window")


def _gemma3_text(c: Config) -> Parsed:
    arch = base(c, gqa(c, qk_norm=True), tie=True, norms=4)
    pattern = c.integer("sliding_window_pattern", c.raw.get("_sliding_window_pattern", 6))
    kinds = layer_types(c, arch.layers, lambda i: "full" if (i + 1) % pattern == 0 else "sliding")
    return arch, kinds, c.integer("sliding_window")


FAMILIES: dict[str, Callable[[Config], Parsed]] = {
    "llama": _llama,
    "mistral": _llama,
    "phi3": _phi3,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v2": _deepseek_v3,  # the same MLA + MoE layout (V2-Lite: no q LoRA, softmax router)
    "deepseek_v3": _deepseek_v3,
    "gpt_oss": _gpt_oss,
    "glm4_moe": _glm4_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gemma3": _gemma3_text,  # the multimodal wrapper: its text_config, plus the vision tower
    "qwen3_next": _qwen3_next,
    "qwen2_5_vl": _qwen2,  # the multimodal wrapper: a Qwen2 decoder, plus the vision tower
}
