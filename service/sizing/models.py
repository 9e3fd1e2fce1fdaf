"""A model described by its architecture, not just a parameter count.

Seed rule (part 7, "Weights worked out for five real models"): total parameters set the memory,
active parameters set the compute and bandwidth per token. Both are kept; weights are always
sized by the total, MoE included.
"""

from typing import Annotated, Literal

import msgspec
import msgspec.inspect
from msgspec import Meta

from service.sizing.errors import SizingError, require

LayerType = Literal["full", "sliding", "mla", "linear"]
"""full: MHA/GQA/MQA over the whole context; sliding: attends to the last ``window`` tokens;
mla: multi-head latent attention (one compressed latent per token, DeepSeek-V2/V3); linear:
linear attention with a recurrent state of fixed size per sequence and no per-token cache
(Qwen3-Next's Gated DeltaNet: a short convolution's last inputs and one key x value matrix per
value head)."""


MAX_SAFE_INT = 2**53
"""JSON numbers stay exact up to here: the most a parameter or byte count may be."""
MAX_LAYERS = 4096
MAX_WIDTH = 2**20
"""Any width or head count (hidden, FFN, heads, head size, MLA ranks, linear-attention sizes)."""
MAX_TOKENS = 2**30
MAX_VOCAB = 2**31 - 1
MAX_EXPERTS = 65_536
MAX_CONV_KERNEL = 64
Count = Annotated[int, Meta(le=MAX_SAFE_INT)]
LayerCount = Annotated[int, Meta(le=MAX_LAYERS)]
Width = Annotated[int, Meta(le=MAX_WIDTH)]
TokenCount = Annotated[int, Meta(le=MAX_TOKENS)]
"""Upper bounds of ModelSpec's fields, the catalogue's (its API schema reads the same constants):
far above any real model, they keep one request's work bounded (the per-layer rules walk every
layer: 10^8 layers took four minutes) and its numbers exact. Decoding a request enforces them
(a 400 naming the field); ``validate_model`` checks them again for specs built in code (the
importer's). Lower bounds and consistency stay with ``validate_model`` (a 422)."""


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    slug: str
    name: str = ""
    architecture: str = ""
    """The checkpoint's model class as config.json names it (``architectures[0]``, e.g.
    "LlamaForCausalLM"): some engine rules go by class name (vLLM 0.23-0.28 choose Model Runner
    V2 from a list of classes). Empty: unknown, and such rules fall back to the model's shape."""
    total_params: Count
    active_params: Count = 0
    """Parameters used per token (MoE); 0 means dense: the same as ``total_params``."""
    replicated_params: Count = 0
    """Parameters of ``total_params`` that every tensor-parallel rank holds whole instead of a
    1/TP slice (a vision tower's patch embedding, norms and row-parallel biases: vLLM's
    ``nn.Conv3d``/``RMSNorm`` are plain modules and ``RowParallelLinear`` keeps its full bias on
    each rank). 0: every parameter is sliced."""
    layers: LayerCount
    hidden_size: Width
    intermediate_size: Width = 0
    """FFN width of a dense layer, or of one expert in an MoE layer (0: unknown)."""
    attention_heads: Width
    kv_heads: Width
    head_dim: Width = 0
    """0 means hidden_size / attention_heads (which must then divide)."""
    vocab_size: Annotated[int, Meta(le=MAX_VOCAB)] = 0
    max_context_tokens: TokenCount
    experts: Annotated[int, Meta(le=MAX_EXPERTS)] = 0
    experts_per_token: Annotated[int, Meta(le=MAX_EXPERTS)] = 0
    kv_lora_rank: Width = 0
    """MLA: width of the compressed KV latent (DeepSeek-V3: 512)."""
    qk_rope_head_dim: Width = 0
    """MLA: the decoupled rotary key stored beside the latent (DeepSeek-V3: 64)."""
    q_lora_rank: Width = 0
    """MLA: width of the compressed query (DeepSeek-V3: 1536); 0: a plain query projection."""
    dense_layers: LayerCount = 0
    """MoE models: leading layers with a dense FFN instead of experts (DeepSeek-V3: 3)."""
    dense_intermediate_size: Width = 0
    """MoE models: FFN width of those dense layers (DeepSeek-V3: 18,432)."""
    sliding_window_tokens: TokenCount = 0
    layer_types: tuple[LayerType, ...] = ()
    """One entry per layer; empty means every layer is full attention (MLA when kv_lora_rank)."""
    linear_key_heads: Width = 0
    """Linear-attention layers (Gated DeltaNet): key (and query) heads."""
    linear_value_heads: Width = 0
    linear_key_head_dim: Width = 0
    linear_value_head_dim: Width = 0
    linear_conv_kernel: Annotated[int, Meta(le=MAX_CONV_KERNEL)] = 0
    """Width of the causal convolution over q, k and v; the state keeps its last kernel - 1
    inputs."""
    rotary_dim: Width = 0
    """Dimensions of each head that rotary embedding turns (Qwen3-Next: 0.25 x 256 = 64);
    0: the whole head (qk_rope_head_dim for MLA)."""
    rope_cache_rows: tuple[int, ...] = ()
    """Rows of each rotary cos/sin cache an engine builds, one per distinct rope (vLLM's
    ``get_rope`` shares them across layers): max_position_embeddings, times the factor for
    linear scaling (Gemma 3's global layers: 131,072 x 8), original x factor for YaRN. Empty:
    one cache of max_context_tokens rows."""
    checkpoint_format: str = ""
    checkpoint_bytes: Count = 0
    """A quantised checkpoint's real stored size (scales and 16-bit parts included, MTP layers
    excluded); used instead of params x bits when planning in ``checkpoint_format``."""

    @property
    def resolved_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.attention_heads

    @property
    def resolved_active_params(self) -> int:
        return self.active_params or self.total_params

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def resolved_layer_types(self) -> tuple[LayerType, ...]:
        if self.layer_types:
            return self.layer_types
        return ("mla" if self.kv_lora_rank else "full",) * self.layers

    def count_layers(self, kind: LayerType) -> int:
        return sum(1 for t in self.resolved_layer_types if t == kind)

    @property
    def linear_conv_channels(self) -> int:
        """Channels of a linear-attention layer's convolution: q, k (key width) and v."""
        return (
            2 * self.linear_key_heads * self.linear_key_head_dim
            + self.linear_value_heads * self.linear_value_head_dim
        )


_SPEC_INFO = msgspec.inspect.type_info(ModelSpec)
assert isinstance(_SPEC_INFO, msgspec.inspect.StructType)
MODEL_LIMITS: dict[str, int] = {
    f.name: f.type.le
    for f in _SPEC_INFO.fields
    if isinstance(f.type, msgspec.inspect.IntType) and f.type.le is not None
}
"""Each bounded ModelSpec field and its largest value, read from the annotations above."""


_VALID: dict[int, ModelSpec] = {}
"""Specs that passed, by identity (each kept, so its id cannot be reused while listed): a
catalogue spec is checked once, not once per plan and split. Bounded by MAX_REMEMBERED."""
MAX_REMEMBERED = 512


def validate_model(spec: ModelSpec, field: str = "model_spec") -> ModelSpec:
    """Check an architecture for internal consistency; raise SizingError naming the field.
    A frozen spec that passed once passes again: it is remembered and not checked twice."""
    if _VALID.get(id(spec)) is spec:
        return spec
    _check_model(spec, field)
    if len(_VALID) >= MAX_REMEMBERED:
        _VALID.clear()
    _VALID[id(spec)] = spec
    return spec


def _check_model(spec: ModelSpec, field: str) -> None:
    def f(name: str) -> str:
        return f"{field}.{name}"

    require(bool(spec.slug.strip()), f("slug"), "must not be empty")
    for name in ("total_params", "layers", "hidden_size", "attention_heads", "kv_heads"):
        require(getattr(spec, name) > 0, f(name), "must be a positive integer")
    require(spec.max_context_tokens > 0, f("max_context_tokens"), "must be a positive integer")
    for name, most in MODEL_LIMITS.items():
        require(getattr(spec, name) <= most, f(name), f"must be at most {most:,}")
    for name in (
        "active_params",
        "replicated_params",
        "intermediate_size",
        "head_dim",
        "vocab_size",
        "experts",
        "experts_per_token",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "sliding_window_tokens",
        "checkpoint_bytes",
        "linear_key_heads",
        "linear_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel",
        "rotary_dim",
        "q_lora_rank",
        "dense_layers",
        "dense_intermediate_size",
    ):
        require(getattr(spec, name) >= 0, f(name), "must not be negative")
    require(len(spec.rope_cache_rows) <= 8, f("rope_cache_rows"), "at most 8 ropes")
    require(
        all(0 < rows <= 1 << 30 for rows in spec.rope_cache_rows),
        f("rope_cache_rows"),
        "each must be between 1 and 2**30",
    )
    require(
        bool(spec.checkpoint_format) == bool(spec.checkpoint_bytes),
        f("checkpoint_bytes"),
        "checkpoint_bytes and checkpoint_format go together",
    )
    require(
        spec.active_params <= spec.total_params,
        f("active_params"),
        "cannot exceed total_params",
    )
    require(
        spec.replicated_params <= spec.total_params,
        f("replicated_params"),
        "cannot exceed total_params",
    )
    require(
        spec.kv_heads <= spec.attention_heads,
        f("kv_heads"),
        "cannot exceed attention_heads",
    )
    require(
        spec.attention_heads % spec.kv_heads == 0,
        f("kv_heads"),
        "must divide attention_heads (each KV head serves a whole group of query heads)",
    )
    if not spec.head_dim:
        require(
            spec.hidden_size % spec.attention_heads == 0,
            f("attention_heads"),
            "must divide hidden_size when head_dim is not given",
        )
    if spec.experts or spec.experts_per_token:
        require(spec.experts >= 2, f("experts"), "an MoE model needs at least 2 experts")
        require(
            1 <= spec.experts_per_token <= spec.experts,
            f("experts_per_token"),
            "must be between 1 and experts",
        )
    if spec.dense_layers:
        require(spec.experts > 1, f("dense_layers"), "only an MoE model has dense layers")
        require(
            spec.dense_layers < spec.layers,
            f("dense_layers"),
            "an MoE model needs at least one MoE layer",
        )
        require(
            spec.dense_intermediate_size > 0,
            f("dense_intermediate_size"),
            "dense layers need their FFN width",
        )
    if spec.layer_types:
        require(
            len(spec.layer_types) == spec.layers,
            f("layer_types"),
            f"has {len(spec.layer_types)} entries for {spec.layers} layers",
        )
    kinds = set(spec.resolved_layer_types)
    if "mla" in kinds:
        require(spec.kv_lora_rank > 0, f("kv_lora_rank"), "MLA layers need a kv_lora_rank")
    elif spec.kv_lora_rank or spec.q_lora_rank:
        raise SizingError(f("layer_types"), "MLA sizes are set but no layer is 'mla'")
    if "sliding" in kinds:
        require(
            spec.sliding_window_tokens > 0,
            f("sliding_window_tokens"),
            "sliding layers need a window",
        )
    linear = (
        "linear_key_heads",
        "linear_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel",
    )
    if "linear" in kinds:
        for name in linear:
            require(getattr(spec, name) > 0, f(name), "linear layers need it")
        require(
            spec.linear_value_heads % spec.linear_key_heads == 0,
            f("linear_value_heads"),
            "must be a multiple of linear_key_heads",
        )
        require(
            kinds != {"linear"},
            f("layer_types"),
            "a model needs at least one attention layer besides its linear ones",
        )
    elif any(getattr(spec, name) for name in linear):
        raise SizingError(
            f("layer_types"), "linear-attention sizes are set but no layer is 'linear'"
        )
    require(
        spec.rotary_dim <= spec.resolved_head_dim,
        f("rotary_dim"),
        "cannot exceed the head size",
    )
    if spec.sliding_window_tokens:
        require(
            spec.sliding_window_tokens <= spec.max_context_tokens,
            f("sliding_window_tokens"),
            "cannot be larger than max_context_tokens",
        )
