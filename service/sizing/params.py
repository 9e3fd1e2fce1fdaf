"""Parameter counts from an architecture, exact to the parameter.

Seed rule (part 7, "How big is a model in memory?"): a model is a long list of parameters; the
weights are that count times the bytes of each. A planner that takes a bare parameter count
gets MoE, MLA and tied embeddings wrong, so this module counts every weight matrix, bias and
norm vector of a decoder-only transformer from its shape, the way the model's own code
allocates them (checked against meta-device counts in reference/models.md).

MoE active parameters = total - routed experts + routed experts x top_k / experts (attention,
router, norms, shared experts and embeddings always run). ``active_excl_input_embedding`` drops
the input embedding, a row lookup that a decode step does not read.
"""

from typing import Literal

import msgspec

from service.sizing.errors import require


class Attention(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["gqa", "mla"] = "gqa"
    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    """Per-head RMSNorm on queries and keys (Qwen3, Gemma 3): head_dim weights each."""
    sinks: bool = False
    """One learned attention-sink logit per head (gpt-oss)."""
    output_gate: bool = False
    """A sigmoid gate on the attention output, projected with the queries (Qwen3-Next:
    q_proj is twice heads x head_dim wide)."""
    q_lora_rank: int = 0
    """MLA: 0 means a plain query projection."""
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0


class LinearAttention(msgspec.Struct, frozen=True, kw_only=True):
    """Gated DeltaNet (Qwen3-Next's linear attention, vLLM's ``QwenGatedDeltaNetAttention``)."""

    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    @property
    def key_dim(self) -> int:
        return self.key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.value_heads * self.value_head_dim


class Experts(msgspec.Struct, frozen=True, kw_only=True):
    routed: int
    top_k: int
    intermediate_size: int
    shared: int = 0
    """Shared experts, always active (DeepSeek)."""
    shared_intermediate_size: int = 0
    """0: the same width as a routed expert."""
    dense_layers: int = 0
    """Leading layers with a dense FFN instead of experts (DeepSeek first_k_dense_replace)."""
    router_bias: bool = False
    expert_bias: bool = False
    """Biases on every expert projection (gpt-oss)."""
    shared_gate: bool = False
    """A hidden -> 1 sigmoid gate on the shared expert's output (Qwen3-Next)."""


class Architecture(msgspec.Struct, frozen=True, kw_only=True):
    layers: int
    hidden_size: int
    vocab_size: int
    intermediate_size: int
    """Dense FFN width (for MoE models: the width of the dense leading layers)."""
    attention: Attention
    experts: Experts | None = None
    tie_word_embeddings: bool = False
    norms_per_layer: int = 2
    """RMSNorm vectors of hidden_size per layer: 2 (Llama) or 4 (Gemma 2/3 sandwich norms)."""
    linear_attention: LinearAttention | None = None
    linear_layers: int = 0
    """Layers whose token mixer is ``linear_attention`` instead of ``attention``."""


class ParamCount(msgspec.Struct, frozen=True, kw_only=True):
    total: int
    active: int
    active_excl_input_embedding: int
    embedding: int
    lm_head: int
    attention: int
    dense_ffn: int
    routed_experts: int
    shared_experts: int
    router: int
    norms: int


def attention_params(hidden: int, a: Attention) -> int:
    """One layer's attention weights, biases and norms."""
    if a.kind == "mla":
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = hidden * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * a.heads * qk_head
        else:
            q = hidden * a.heads * qk_head
        kv = (
            hidden * (a.kv_lora_rank + a.qk_rope_head_dim)  # kv_a_proj_with_mqa
            + a.kv_lora_rank  # kv_a_layernorm
            + a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim)  # kv_b_proj
        )
        o = a.heads * a.v_head_dim * hidden
        return q + kv + o + (hidden if a.o_bias else 0)
    q_width, kv_width = a.heads * a.head_dim, a.kv_heads * a.head_dim
    count = hidden * q_width * (2 if a.output_gate else 1) + 2 * hidden * kv_width
    count += q_width * hidden
    if a.qkv_bias:
        count += q_width + 2 * kv_width
    if a.o_bias:
        count += hidden
    if a.qk_norm:
        count += 2 * a.head_dim
    if a.sinks:
        count += a.heads
    return count


def linear_attention_params(hidden: int, la: LinearAttention) -> int:
    """One Gated DeltaNet layer: in_proj_qkvz (hidden -> 2 key_dim + 2 value_dim), in_proj_ba
    (hidden -> 2 value heads), the depthwise conv1d over q, k, v (no bias), A_log and dt_bias
    per value head, the gated RMSNorm (value_head_dim) and out_proj (value_dim -> hidden)."""
    conv_channels = 2 * la.key_dim + la.value_dim
    return (
        hidden * (2 * la.key_dim + 2 * la.value_dim)
        + hidden * 2 * la.value_heads
        + conv_channels * la.conv_kernel
        + 2 * la.value_heads
        + la.value_head_dim
        + la.value_dim * hidden
    )


def gated_ffn_params(hidden: int, intermediate: int, bias: bool = False) -> int:
    """gate, up (hidden -> intermediate) and down (intermediate -> hidden)."""
    return 3 * hidden * intermediate + ((2 * intermediate + hidden) if bias else 0)


def count_params(arch: Architecture) -> ParamCount:
    require(arch.layers > 0, "layers", "must be positive")
    require(arch.hidden_size > 0, "hidden_size", "must be positive")
    require(arch.vocab_size > 0, "vocab_size", "must be positive")
    hidden, layers = arch.hidden_size, arch.layers
    embedding = arch.vocab_size * hidden
    lm_head = 0 if arch.tie_word_embeddings else embedding
    la = arch.linear_attention
    require(
        (la is None) == (arch.linear_layers == 0) and arch.linear_layers <= layers,
        "linear_layers",
        "linear layers need linear_attention, and no more than the layers",
    )
    attention = (layers - arch.linear_layers) * attention_params(hidden, arch.attention)
    if la is not None:
        attention += arch.linear_layers * linear_attention_params(hidden, la)
    norms = layers * arch.norms_per_layer * hidden + hidden  # + the final norm
    e = arch.experts
    if e is None:
        dense = layers * gated_ffn_params(hidden, arch.intermediate_size)
        routed = shared = router = routed_active = 0
    else:
        moe_layers = layers - e.dense_layers
        dense = e.dense_layers * gated_ffn_params(hidden, arch.intermediate_size)
        one_expert = gated_ffn_params(hidden, e.intermediate_size, e.expert_bias)
        routed = moe_layers * e.routed * one_expert
        shared_width = e.shared_intermediate_size or e.intermediate_size
        shared = (
            moe_layers
            * e.shared
            * (gated_ffn_params(hidden, shared_width) + (hidden if e.shared_gate else 0))
        )
        router = moe_layers * (hidden * e.routed + (e.routed if e.router_bias else 0))
        routed_active = moe_layers * e.top_k * one_expert
    total = embedding + lm_head + attention + norms + dense + routed + shared + router
    active = total - routed + routed_active
    return ParamCount(
        total=total,
        active=active,
        active_excl_input_embedding=active - embedding,
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        dense_ffn=dense,
        routed_experts=routed,
        shared_experts=shared,
        router=router,
        norms=norms,
    )


LinearKind = Literal["attention", "dense_ffn", "routed_expert", "shared_expert", "router", "mtp"]


class LinearWeight(msgspec.Struct, frozen=True, kw_only=True):
    """``count`` weight matrices of ``out_features`` x ``in_features`` (biases not included)."""

    kind: LinearKind
    name: str
    out_features: int
    in_features: int
    count: int

    @property
    def params(self) -> int:
        return self.out_features * self.in_features * self.count


def linear_weights(arch: Architecture) -> list[LinearWeight]:
    """Every weight matrix inside the decoder layers (what quantisation schemes act on);
    embeddings, LM head, norms and biases are not listed."""
    hidden, layers, a = arch.hidden_size, arch.layers, arch.attention
    out: list[LinearWeight] = []

    def add(kind: LinearKind, name: str, o: int, i: int, count: int) -> None:
        if count and o and i:
            out.append(
                LinearWeight(kind=kind, name=name, out_features=o, in_features=i, count=count)
            )

    if a.kind == "mla":
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            add("attention", "q_a_proj", a.q_lora_rank, hidden, layers)
            add("attention", "q_b_proj", a.heads * qk_head, a.q_lora_rank, layers)
        else:
            add("attention", "q_proj", a.heads * qk_head, hidden, layers)
        add("attention", "kv_a_proj_with_mqa", a.kv_lora_rank + a.qk_rope_head_dim, hidden, layers)
        add(
            "attention",
            "kv_b_proj",
            a.heads * (a.qk_nope_head_dim + a.v_head_dim),
            a.kv_lora_rank,
            layers,
        )
        add("attention", "o_proj", hidden, a.heads * a.v_head_dim, layers)
    else:
        q_width, kv_width = a.heads * a.head_dim, a.kv_heads * a.head_dim
        attention_layers = layers - arch.linear_layers
        q_out = q_width * (2 if a.output_gate else 1)
        add("attention", "q_proj", q_out, hidden, attention_layers)
        add("attention", "k_proj", kv_width, hidden, attention_layers)
        add("attention", "v_proj", kv_width, hidden, attention_layers)
        add("attention", "o_proj", hidden, q_width, attention_layers)
    la = arch.linear_attention
    if la is not None:
        qkvz = 2 * la.key_dim + 2 * la.value_dim
        add("attention", "in_proj_qkvz", qkvz, hidden, arch.linear_layers)
        add("attention", "in_proj_ba", 2 * la.value_heads, hidden, arch.linear_layers)
        add("attention", "out_proj", hidden, la.value_dim, arch.linear_layers)
    e = arch.experts
    dense_layers = layers if e is None else e.dense_layers
    for name in ("gate_proj", "up_proj"):
        add("dense_ffn", name, arch.intermediate_size, hidden, dense_layers)
    add("dense_ffn", "down_proj", hidden, arch.intermediate_size, dense_layers)
    if e is not None:
        moe_layers = layers - e.dense_layers
        shared_width = e.shared_intermediate_size or e.intermediate_size
        for kind, width, copies in (
            ("routed_expert", e.intermediate_size, e.routed),
            ("shared_expert", shared_width, e.shared),
        ):
            for name in ("gate_proj", "up_proj"):
                add(kind, name, width, hidden, moe_layers * copies)  # type: ignore[arg-type]
            add(kind, "down_proj", hidden, width, moe_layers * copies)  # type: ignore[arg-type]
        add("router", "gate", e.routed, hidden, moe_layers)
    return out


def mtp_params(arch: Architecture, mtp_layers: int) -> int:
    """Unique parameters of DeepSeek's multi-token-prediction layers (not part of the served
    model): one more decoder layer each, two input norms, the 2h -> h projection and the shared
    head's norm. Their embedding and head are the main model's (the checkpoint stores copies)."""
    if not mtp_layers:
        return 0
    return mtp_layers * (
        decoder_layer_params(mtp_layer_architecture(arch)) + mtp_extra_params(arch)
    )


def mtp_layer_architecture(arch: Architecture) -> Architecture:
    """One MTP layer is one MoE decoder layer, even when the main model's first layers are
    dense."""
    experts = arch.experts and msgspec.structs.replace(arch.experts, dense_layers=0)
    return msgspec.structs.replace(
        arch, layers=1, experts=experts, linear_attention=None, linear_layers=0
    )


def mtp_extra_params(arch: Architecture) -> int:
    """enorm and hnorm, the 2h -> h eh_proj, and the shared head's norm."""
    hidden = arch.hidden_size
    return 2 * hidden + 2 * hidden * hidden + hidden


def decoder_layer_params(arch: Architecture) -> int:
    """Everything but the embedding, the LM head and the final norm."""
    c = count_params(arch)
    return c.total - c.embedding - c.lm_head - arch.hidden_size
