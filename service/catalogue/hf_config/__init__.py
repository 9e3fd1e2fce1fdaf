"""Bring your own model: a Hugging Face config.json (and optionally the safetensors index)
turned into the core's architecture, exact parameter counts and checkpoint bytes, offline.

Supported families are those whose layer code was checked against meta-device parameter counts
(reference/models.md): Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3, gpt-oss,
Gemma 2 and Gemma 3 (text, and the multimodal wrapper with its SigLIP vision tower),
Qwen2.5-VL (a Qwen2 decoder and its vision transformer, checked against vLLM 0.8.2's
``qwen2_5_vl.py``), and
Qwen3-Next (Gated DeltaNet linear attention and gated full attention, checked against vLLM's
``qwen3_next.py`` and the 74.2812 GiB a TP 2 rank loads in the collected 0.10.2 log). Anything
else is refused with the list, never guessed.
"""

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from service.sizing.errors import SizingError, require
from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.models import MAX_LAYERS, LayerType, ModelSpec, validate_model
from service.sizing.params import (
    Architecture,
    Attention,
    Experts,
    LinearAttention,
    LinearKind,
    ParamCount,
    count_params,
    linear_weights,
    mtp_params,
)
from service.sizing.vllm.bitsandbytes import bnb_skipped_layers
from service.sizing.weights import CheckpointBytes, QuantScheme, checkpoint_bytes

FIELD = "config_json"
MAX_DIMENSION = 2**31 - 1
"""Bounds that keep an untrusted config's arithmetic small (no model comes near them)."""
ALL_LINEAR_BUT_ROUTER: frozenset[LinearKind] = frozenset(
    {"attention", "dense_ffn", "routed_expert", "shared_expert"}
)


class ImportDetails(msgspec.Struct, frozen=True, kw_only=True):
    """What an import found besides the spec (also the answer of POST /models/import)."""

    model_type: str
    params: ParamCount
    vision_params: int
    """Vision tower and projector of a multimodal wrapper (0 for text models); in total_params."""
    mtp_params: int
    checkpoint: CheckpointBytes
    index_total_size_bytes: int | None
    """The safetensors index's metadata.total_size, when given."""
    checkpoint_difference_bytes: int | None
    """index total_size - computed checkpoint bytes (headers and buffers make a small rest)."""
    notes: list[str]


class ImportedModel(ImportDetails, frozen=True, kw_only=True):
    spec: ModelSpec
    """Ready to plan; a quantised checkpoint sets checkpoint_format and checkpoint_bytes."""


class _Config:
    """Typed access to a config dict; every error names the key."""

    def __init__(self, raw: Mapping[str, Any], path: str = FIELD) -> None:
        self.raw, self.path = raw, path

    def field(self, key: str) -> str:
        return f"{self.path}.{key}"

    def integer(
        self,
        key: str,
        default: int | None = None,
        *,
        minimum: int = 1,
        maximum: int = MAX_DIMENSION,
    ) -> int:
        value = self.raw.get(key, default)
        if value is None:
            raise SizingError(self.field(key), "is required for this model family")
        if isinstance(value, bool) or not isinstance(value, int):
            raise SizingError(self.field(key), f"must be an integer, got {value!r}")
        require(value >= minimum, self.field(key), f"must be at least {minimum}")
        require(
            value <= MAX_LAYERS if key == "num_hidden_layers" else value <= maximum,
            self.field(key),
            "is larger than any supported model",
        )
        return value

    def optional_integer(self, key: str) -> int | None:
        return None if self.raw.get(key) is None else self.integer(key, minimum=0)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SizingError(self.field(key), f"must be true or false, got {value!r}")
        return value

    def sub(self, key: str) -> "_Config":
        value = self.raw.get(key)
        if not isinstance(value, Mapping):
            raise SizingError(self.field(key), "must be an object")
        return _Config(value, self.field(key))


def _head_dim(c: _Config, hidden: int, heads: int) -> int:
    explicit = c.optional_integer("head_dim")
    if explicit:
        return explicit
    require(hidden % heads == 0, c.field("num_attention_heads"), "must divide hidden_size")
    return hidden // heads


def _layer_types(
    c: _Config, layers: int, default: Callable[[int], LayerType]
) -> tuple[LayerType, ...]:
    raw = c.raw.get("layer_types")
    if raw is None:
        return tuple(default(i) for i in range(layers))
    require(
        isinstance(raw, list) and len(raw) == layers,
        c.field("layer_types"),
        f"must list one type for each of the {layers} layers",
    )
    kinds: list[LayerType] = []
    for i, kind in enumerate(raw):
        if kind == "full_attention":
            kinds.append("full")
        elif kind == "sliding_attention":
            kinds.append("sliding")
        elif kind == "linear_attention":
            kinds.append("linear")
        else:
            raise SizingError(f"{c.field('layer_types')}[{i}]", f"unknown layer type {kind!r}")
    return tuple(kinds)


def _uniform(kind: LayerType, layers: int) -> tuple[LayerType, ...]:
    return (kind,) * layers


def _gqa(
    c: _Config,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    sinks: bool = False,
) -> Attention:
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    return Attention(
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", heads),
        head_dim=_head_dim(c, hidden, heads),
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
        sinks=sinks,
    )


def _base(
    c: _Config,
    attention: Attention,
    *,
    tie: bool,
    experts: Experts | None = None,
    norms: int = 2,
) -> Architecture:
    return Architecture(
        layers=c.integer("num_hidden_layers"),
        hidden_size=c.integer("hidden_size"),
        vocab_size=c.integer("vocab_size"),
        intermediate_size=c.integer("intermediate_size"),
        attention=attention,
        experts=experts,
        tie_word_embeddings=c.flag("tie_word_embeddings", tie),
        norms_per_layer=norms,
    )


def _uniform_window(c: _Config, layers: int) -> tuple[tuple[LayerType, ...], int]:
    """Mistral/Mixtral: a non-null sliding_window applies to every layer."""
    window = c.optional_integer("sliding_window") or 0
    return _uniform("sliding" if window else "full", layers), window


# Each family: config -> (architecture, layer types, sliding window).
Parsed = tuple[Architecture, tuple[LayerType, ...], int]


def _llama(c: _Config) -> Parsed:
    bias = c.flag("attention_bias", False)
    require(not c.flag("mlp_bias", False), c.field("mlp_bias"), "MLP biases are not supported")
    arch = _base(c, _gqa(c, qkv_bias=bias, o_bias=bias), tie=False)
    kinds, window = _uniform_window(c, arch.layers)
    return arch, kinds, window


def _phi3(c: _Config) -> Parsed:
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


def _mixtral(c: _Config) -> Parsed:
    experts = Experts(
        routed=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok"),
        intermediate_size=c.integer("intermediate_size"),
    )
    arch = _base(c, _gqa(c), tie=False, experts=experts)
    kinds, window = _uniform_window(c, arch.layers)
    return arch, kinds, window


def _qwen2(c: _Config) -> Parsed:
    arch = _base(c, _gqa(c, qkv_bias=True), tie=False)
    window = 0
    kinds = _uniform("full", arch.layers)
    if c.flag("use_sliding_window", False):
        window = c.integer("sliding_window")
        first_windowed = c.integer("max_window_layers", arch.layers, minimum=0)
        kinds = _layer_types(c, arch.layers, lambda i: "sliding" if i >= first_windowed else "full")
    return arch, kinds, window


def _qwen3(c: _Config) -> Parsed:
    bias = c.flag("attention_bias", False)
    arch = _base(c, _gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=True), tie=False)
    return arch, _uniform("full", arch.layers), 0


def _qwen3_moe(c: _Config) -> Parsed:
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
    arch = _base(c, _gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=True), tie=False, experts=experts)
    return arch, _uniform("full", layers), 0


def _qwen3_next(c: _Config) -> Parsed:
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
    kinds = _layer_types(c, layers, lambda i: "full" if (i + 1) % interval == 0 else "linear")
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
        _gqa(c, qkv_bias=c.flag("qkv_bias", False), qk_norm=True),
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


def _deepseek_v3(c: _Config) -> Parsed:
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
    arch = _base(c, attention, tie=False, experts=experts)
    return arch, _uniform("mla", arch.layers), 0


def _gpt_oss(c: _Config) -> Parsed:
    experts = Experts(
        routed=c.integer("num_local_experts"),
        top_k=c.integer("num_experts_per_tok", c.raw.get("experts_per_token")),
        intermediate_size=c.integer("intermediate_size"),
        router_bias=True,
        expert_bias=True,
    )
    arch = _base(c, _gqa(c, qkv_bias=True, o_bias=True, sinks=True), tie=False, experts=experts)
    kinds = _layer_types(c, arch.layers, lambda i: "sliding" if i % 2 == 0 else "full")
    return arch, kinds, c.integer("sliding_window")


def _gemma(c: _Config) -> Parsed:
    """Gemma (1): Llama's layout with tied embeddings and a head_dim of its own (256)."""
    arch = _base(c, _gqa(c), tie=True)
    return arch, _uniform("full", arch.layers), 0


def _gemma2(c: _Config) -> Parsed:
    arch = _base(c, _gqa(c), tie=True, norms=4)
    # Gemma 2 alternates: even layers attend through the sliding window.
    kinds = _layer_types(c, arch.layers, lambda i: "sliding" if i % 2 == 0 else "full")
    return arch, kinds, c.integer("sliding_window")


def _gemma3_text(c: _Config) -> Parsed:
    arch = _base(c, _gqa(c, qk_norm=True), tie=True, norms=4)
    pattern = c.integer("sliding_window_pattern", c.raw.get("_sliding_window_pattern", 6))
    kinds = _layer_types(c, arch.layers, lambda i: "full" if (i + 1) % pattern == 0 else "sliding")
    return arch, kinds, c.integer("sliding_window")


FAMILIES: dict[str, Callable[[_Config], Parsed]] = {
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
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gemma3": _gemma3_text,  # the multimodal wrapper: its text_config, plus the vision tower
    "qwen3_next": _qwen3_next,
    "qwen2_5_vl": _qwen2,  # the multimodal wrapper: a Qwen2 decoder, plus the vision tower
}


def _rope_cache_rows(c: _Config, model_type: str) -> tuple[int, ...]:
    """The rows of each rotary cache vLLM builds (``get_rope`` in
    ``vllm/model_executor/layers/rotary_embedding``): max_position_embeddings; linear scaling
    multiplies it by the factor; YaRN builds original_max_position_embeddings x factor. Gemma 3
    has two ropes: the sliding layers' local one (rope_local_base_freq, no scaling) and the
    global layers' (rope_scaling). Multimodal RoPE (a rope_scaling with mrope_section: Qwen2-VL,
    Qwen2.5-VL) is ``MRotaryEmbedding``, whose cache holds 4 x max_position_embeddings rows
    ("we enlarge max_position_embeddings to 4 times" for long videos: vLLM 0.8.2
    ``rotary_embedding.py``, still so in 0.24's ``rotary_embedding/mrope.py``)."""
    max_position = c.integer("max_position_embeddings")
    scaling = c.raw.get("rope_scaling")
    rows = max_position
    if isinstance(scaling, Mapping):
        kind = scaling.get("rope_type") or scaling.get("type")
        if "mrope_section" in scaling and kind in (None, "default", "mrope"):
            return (max_position * 4,)
        factor = scaling.get("factor")
        original = scaling.get("original_max_position_embeddings")
        if isinstance(factor, int | float) and factor > 0:
            # A factor too large to be real (1e308: an infinite row count) is refused here, as
            # validate_model refuses any count over 2**30 (int() of infinity raised a 500).
            require(
                factor <= MAX_DIMENSION,
                c.field("rope_scaling.factor"),
                "is larger than any supported model",
            )
            if kind == "linear":
                rows = int(max_position * factor)
            elif kind == "yarn" and isinstance(original, int) and original > 0:
                rows = int(original * factor)
    if model_type in ("gemma3", "gemma3_text"):
        return (max_position, rows)
    return (rows,)


def _linear_fields(la: LinearAttention | None) -> dict[str, int]:
    """The spec's linear-attention sizes (all 0 without linear layers)."""
    if la is None:
        return {}
    return {
        "linear_key_heads": la.key_heads,
        "linear_value_heads": la.value_heads,
        "linear_key_head_dim": la.key_head_dim,
        "linear_value_head_dim": la.value_head_dim,
        "linear_conv_kernel": la.conv_kernel,
    }


def _rotary_dim(c: _Config, head_dim: int) -> int:
    """partial_rotary_factor x head_dim (top level or in rope_parameters); 0: the whole head."""
    factor = c.raw.get("partial_rotary_factor")
    rope = c.raw.get("rope_parameters")
    if factor is None and isinstance(rope, Mapping):
        factor = rope.get("partial_rotary_factor")
    if factor is None:
        return 0
    require(
        isinstance(factor, int | float) and 0 < factor <= 1,
        c.field("partial_rotary_factor"),
        "must be a number in (0, 1]",
    )
    rotary = int(head_dim * factor)
    return 0 if rotary == head_dim else rotary


def siglip_vision_params(v: _Config) -> int:
    """SigLIP vision tower (Gemma 3): patch embedding, position embedding, encoder layers with
    biased attention and MLP and two LayerNorms each, and the post-LayerNorm."""
    hidden, inter = v.integer("hidden_size"), v.integer("intermediate_size")
    patch, image, channels = (
        v.integer("patch_size"),
        v.integer("image_size"),
        v.integer("num_channels", 3),
    )
    positions = (image // patch) ** 2
    embeddings = channels * patch * patch * hidden + hidden + positions * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    require(
        not v.flag("vision_use_head", False),
        v.field("vision_use_head"),
        "a pooling head is not supported",
    )
    return embeddings + v.integer("num_hidden_layers") * layer + 2 * hidden


def qwen25_vision_params(v: _Config) -> tuple[int, int]:
    """Qwen2.5-VL's vision transformer and patch merger as vLLM 0.8.2 builds them
    (``vllm/model_executor/models/qwen2_5_vl.py``; the same shapes as transformers'
    ``modeling_qwen2_5_vl``): (all parameters, those every TP rank holds whole).

    * ``Qwen2_5_VisionPatchEmbed``: an ``nn.Conv3d`` of in_channels x temporal_patch_size x
      patch_size^2 x hidden, no bias (a plain module: whole on every rank);
    * ``depth`` x ``Qwen2_5_VisionBlock``: two ``RMSNorm`` (whole); attention ``qkv``
      (``ColumnParallelLinear`` hidden -> 3 hidden, biased: weight and bias sliced) and ``proj``
      (``RowParallelLinear``, biased: weight sliced, the bias whole); ``Qwen2_5_VisionMLP``
      gate_proj and up_proj (``ColumnParallelLinear``) and down_proj (``RowParallelLinear``), all
      biased, at intermediate_size;
    * ``Qwen2_5_VisionPatchMerger``: ``ln_q`` RMSNorm over hidden (whole), then
      ``ColumnParallelLinear`` hidden x merge^2 -> the same and ``RowParallelLinear`` -> the
      decoder's out_hidden_size, both biased (the second's bias whole).

    vLLM's ``RowParallelLinear`` allocates its bias at the full output size on each rank;
    ``ColumnParallelLinear`` slices it with the output
    (``vllm/model_executor/layers/linear.py``)."""
    hidden, inter = v.integer("hidden_size"), v.integer("intermediate_size")
    channels = v.integer("in_channels", v.raw.get("in_chans", 3))
    patch, temporal = v.integer("patch_size"), v.integer("temporal_patch_size", 2)
    merged = hidden * v.integer("spatial_merge_size", 2) ** 2
    out = v.integer("out_hidden_size")
    depth = v.integer("depth", maximum=MAX_LAYERS)
    patch_embed = channels * temporal * patch * patch * hidden
    norms = 2 * hidden
    attention = (3 * hidden * hidden + 3 * hidden) + (hidden * hidden + hidden)
    mlp = 2 * (hidden * inter + inter) + (inter * hidden + hidden)
    merger = hidden + (merged * merged + merged) + (merged * out + out)
    total = patch_embed + depth * (norms + attention + mlp) + merger
    # Whole on each rank: the convolution, the norms and the row-parallel biases (proj and
    # down_proj in every block, the merger's second linear).
    whole = patch_embed + depth * (norms + 2 * hidden) + hidden + out
    return total, whole


def _quant_scheme(c: _Config, arch: Architecture) -> tuple[QuantScheme, NumberFormat, list[str]]:
    """The checkpoint's storage and the closest weight format for planning."""
    raw = c.raw.get("quantization_config")
    if raw is None:
        return QuantScheme(), FORMATS["bf16"], []
    q = c.sub("quantization_config")
    method = q.raw.get("quant_method")
    if method == "mxfp4":
        # gpt-oss keeps attention, router, embeddings and head in BF16 (modules_to_not_convert).
        scheme = QuantScheme(
            method="mxfp4", quantized=frozenset({"routed_expert"}), value_format=FORMATS["mxfp4"]
        )
        return scheme, FORMATS["mxfp4"], ["experts stored in MXFP4 (4.25 bits); the rest BF16"]
    if method == "fp8":
        block = q.raw.get("weight_block_size")
        if block is not None:
            require(
                isinstance(block, list)
                and len(block) == 2
                and all(isinstance(b, int) and b > 0 for b in block),
                q.field("weight_block_size"),
                "must be two positive integers",
            )
        quantized = ALL_LINEAR_BUT_ROUTER
        scheme = QuantScheme(
            method="fp8",
            quantized=quantized,
            value_format=FORMATS["fp8"],
            block=(block[0], block[1]) if block else None,
        )
        note = "linear layers stored in FP8" + (
            f" with one FP32 scale per {block[0]}x{block[1]} block" if block else ""
        )
        return scheme, FORMATS["fp8"], [note + "; router, norms, embeddings and head BF16"]
    if method in ("gptq", "awq"):
        bits = q.integer("bits")
        require(bits == 4, q.field("bits"), "only 4-bit GPTQ/AWQ is supported")
        group = q.integer("group_size", 128)
        fmt = msgspec.structs.replace(FORMATS[f"{method}-int4"], block_size=group)
        quantized = ALL_LINEAR_BUT_ROUTER
        scheme = QuantScheme(method="int4", quantized=quantized, value_format=fmt)
        return scheme, FORMATS[f"{method}-int4"], [f"{method.upper()} int4, group {group}"]
    if method == "bitsandbytes":
        require(not q.raw.get("load_in_8bit"), q.field("load_in_8bit"), "only 4-bit bitsandbytes")
        kind = q.raw.get("bnb_4bit_quant_type", "fp4")
        require(kind in ("nf4", "fp4"), q.field("bnb_4bit_quant_type"), "must be nf4 or fp4")
        # One absmax per 64 values: a uint8 with an fp32 per 256 of them when double-quantised,
        # else an fp32 (bitsandbytes quantize_4bit, blocksize 64).
        fmt = FORMATS["nf4"]
        double = bool(q.raw.get("bnb_4bit_use_double_quant"))
        if not double:
            fmt = msgspec.structs.replace(
                fmt, scale_bits=32, super_block_size=0, super_scale_bits=0
            )
        scheme = QuantScheme(
            method="int4", quantized=frozenset({"attention", "dense_ffn"}), value_format=fmt
        )
        note = f"bitsandbytes {kind} 4-bit, " + (
            "double-quantised block scales" if double else "fp32 block scales"
        )
        return scheme, FORMATS["nf4"], [note + "; embeddings, head and norms 16-bit"]
    raise SizingError(
        q.field("quant_method"),
        f"unsupported quantization {method!r}; supported: mxfp4, fp8, gptq, awq, bitsandbytes",
    )


def _bnb_skipped(
    c: _Config, arch: Architecture, scheme: QuantScheme, stored: CheckpointBytes
) -> tuple[CheckpointBytes, list[str]]:
    """A bitsandbytes checkpoint's llm_int8_skip_modules layers (Unsloth's dynamic 4-bit keeps
    some attention and MLP blocks 16-bit): their matrices move from the quantised bytes to the
    16-bit ones."""
    q = c.raw.get("quantization_config") or {}
    if q.get("quant_method") != "bitsandbytes" or scheme.value_format is None:
        return stored, []
    skips = q.get("llm_int8_skip_modules") or []
    require(
        isinstance(skips, list) and all(isinstance(x, str) for x in skips),
        f"{FIELD}.quantization_config.llm_int8_skip_modules",
        "must be a list of module names",
    )
    attention, mlp = bnb_skipped_layers(skips, arch.layers)
    if not attention and not mlp:
        return stored, []
    fmt, per = scheme.value_format, scheme.unquantized_bytes_per_param
    moved_params = moved_bytes = 0
    for w in linear_weights(arch):
        layers = len(attention) if w.kind == "attention" else len(mlp)
        if w.kind not in ("attention", "dense_ffn") or not layers:
            continue
        params = w.out_features * w.in_features * layers
        moved_params += params
        moved_bytes += fmt.bytes_for(w.out_features * w.in_features) * layers
    stored = msgspec.structs.replace(
        stored,
        total_bytes=stored.total_bytes - moved_bytes + moved_params * per,
        quantized_params=stored.quantized_params - moved_params,
        quantized_bytes=stored.quantized_bytes - moved_bytes,
        unquantized_params=stored.unquantized_params + moved_params,
        unquantized_bytes=stored.unquantized_bytes + moved_params * per,
    )
    note = (
        f"llm_int8_skip_modules keeps {len(attention)} attention and {len(mlp)} MLP blocks "
        f"16-bit ({moved_params:,} parameters)"
    )
    return stored, [note]


def _architecture(c: _Config) -> str:
    """config.json's ``architectures[0]`` (absent or malformed: "", unknown): the model class
    the engine instantiates, which some of vLLM's rules name. A name with a NUL is malformed
    (PostgreSQL text cannot hold it; the catalogue column is 128 characters)."""
    names = c.raw.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str) and "\x00" not in names[0]:
        return names[0][:128]
    return ""


def import_config(
    config: Mapping[str, Any], slug: str, index: Mapping[str, Any] | None = None
) -> ImportedModel:
    """Derive everything the planner needs from a config.json, exactly."""
    require(isinstance(config, Mapping), FIELD, "must be a JSON object")
    top = _Config(config)
    model_type = config.get("model_type")
    # A list or an object is no model_type (and unhashable: the lookup would raise TypeError).
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise SizingError(
            f"{FIELD}.model_type",
            f"unsupported model_type {model_type!r}; supported: {', '.join(sorted(FAMILIES))}",
        )
    c = top.sub("text_config") if model_type == "gemma3" else top
    if model_type == "qwen2_5_vl" and config.get("text_config") is not None:
        # transformers >= 4.52 nests the decoder's fields in text_config (4.57 also mirrors them
        # at the top); older configs keep them at the top only. Nested values win, the top
        # fills what the nesting leaves out.
        c = _Config({**config, **top.sub("text_config").raw})
    arch, kinds, window = FAMILIES[model_type](c)
    notes: list[str] = []
    vision = replicated = 0
    if model_type == "gemma3":
        v = top.sub("vision_config")
        # The projector: one vision_hidden x text_hidden matrix and a soft-embedding RMSNorm.
        vision = siglip_vision_params(v) + v.integer("hidden_size") * (arch.hidden_size + 1)
    if model_type == "qwen2_5_vl":
        vision, replicated = qwen25_vision_params(top.sub("vision_config"))
        require(
            top.sub("vision_config").integer("out_hidden_size") == arch.hidden_size,
            f"{FIELD}.vision_config.out_hidden_size",
            "must be the decoder's hidden_size (the merger feeds the decoder)",
        )
    counted = count_params(arch)
    mtp_layers = top.integer("num_nextn_predict_layers", 0, minimum=0)
    scheme, weight_format, quant_notes = _quant_scheme(top, arch)
    stored = checkpoint_bytes(arch, scheme, mtp_layers)
    stored, skip_notes = _bnb_skipped(top, arch, scheme, stored)
    quant_notes = quant_notes + skip_notes
    if vision:
        vision_bytes = vision * scheme.unquantized_bytes_per_param
        stored = msgspec.structs.replace(
            stored,
            total_bytes=stored.total_bytes + vision_bytes,
            unquantized_params=stored.unquantized_params + vision,
            unquantized_bytes=stored.unquantized_bytes + vision_bytes,
        )
        notes.append(f"includes the vision tower and projector: {vision:,} parameters")
    index_total = None
    if index is not None:
        metadata = index.get("metadata") if isinstance(index, Mapping) else None
        total_size = metadata.get("total_size") if isinstance(metadata, Mapping) else None
        require(
            isinstance(total_size, int) and total_size > 0,
            "index_json.metadata.total_size",
            "must be a positive integer",
        )
        index_total = total_size
    total = counted.total + vision
    spec = ModelSpec(
        slug=slug,
        name=str(config.get("_name_or_path") or slug),
        architecture=_architecture(top),
        total_params=total,
        replicated_params=replicated,
        active_params=counted.active_excl_input_embedding + vision if arch.experts else 0,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.experts.intermediate_size
        if arch.experts
        else arch.intermediate_size,
        attention_heads=arch.attention.heads,
        kv_heads=arch.attention.kv_heads,
        head_dim=arch.attention.head_dim,
        vocab_size=arch.vocab_size,
        max_context_tokens=c.integer("max_position_embeddings"),
        experts=arch.experts.routed if arch.experts else 0,
        experts_per_token=arch.experts.top_k if arch.experts else 0,
        kv_lora_rank=arch.attention.kv_lora_rank,
        qk_rope_head_dim=arch.attention.qk_rope_head_dim,
        q_lora_rank=arch.attention.q_lora_rank,
        dense_layers=arch.experts.dense_layers if arch.experts else 0,
        dense_intermediate_size=arch.intermediate_size
        if arch.experts and arch.experts.dense_layers
        else 0,
        sliding_window_tokens=window,
        layer_types=kinds,
        **_linear_fields(arch.linear_attention),
        rotary_dim=_rotary_dim(c, arch.attention.head_dim),
        rope_cache_rows=_rope_cache_rows(c, str(model_type)),
        checkpoint_format=weight_format.slug if scheme.method != "none" else "",
        checkpoint_bytes=stored.total_bytes - stored.mtp_bytes if scheme.method != "none" else 0,
    )
    validate_model(spec, field=FIELD)
    return ImportedModel(
        model_type=str(model_type),
        spec=spec,
        params=counted,
        vision_params=vision,
        mtp_params=mtp_params(arch, mtp_layers),
        checkpoint=stored,
        index_total_size_bytes=index_total,
        checkpoint_difference_bytes=None
        if index_total is None
        else index_total - stored.total_bytes,
        notes=notes
        + quant_notes
        + ([f"{mtp_layers} MTP layer(s) stored but not served"] if mtp_layers else []),
    )
