"""Request and answer Structs of the catalogue endpoints (one Struct per resource: the body of a
create or replace is the row as it is answered). Bounds keep every value storable and every
computation on it finite; unknown fields are ignored."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.sizing.models import (
    MAX_CONV_KERNEL,
    MAX_EXPERTS,
    MAX_LAYERS,
    MAX_SAFE_INT,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
)

# PostgreSQL text cannot hold NUL; refuse it at the edge instead of failing in the database.
_NO_NUL = r"^[^\x00]*$"
SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"

Slug = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        pattern=SLUG_PATTERN,
        description="Lowercase, stable once published.",
    ),
]
Name = Annotated[str, Meta(max_length=200, pattern=_NO_NUL)]
LongText = Annotated[str, Meta(max_length=4000, pattern=_NO_NUL)]
# Items are checked by msgspec (a 400 naming e.g. aliases[2]); service.api.openapi states their
# bounds, which Litestar's renderer drops.
MAX_SOURCE_LENGTH = 1000
Source = Annotated[str, Meta(min_length=1, max_length=MAX_SOURCE_LENGTH, pattern=_NO_NUL)]
Sources = Annotated[list[Source], Meta(max_length=50)]
Alias = Annotated[str, Meta(min_length=1, max_length=64, pattern=SLUG_PATTERN)]
Aliases = Annotated[list[Alias], Meta(max_length=20, description="Slug-shaped short names.")]
PositiveBytes = Annotated[int, Meta(gt=0, le=MAX_SAFE_INT)]
Bytes = Annotated[int, Meta(ge=0, le=MAX_SAFE_INT)]
PositiveCount = Annotated[int, Meta(gt=0, le=MAX_SAFE_INT)]
Count = Annotated[int, Meta(ge=0, le=MAX_SAFE_INT)]
# Architecture sizes: far above any real model, low enough that a per-layer loop stays cheap.
Layers = Annotated[int, Meta(gt=0, le=MAX_LAYERS)]
Width = Annotated[int, Meta(gt=0, le=MAX_WIDTH)]
OptionalWidth = Annotated[int, Meta(ge=0, le=MAX_WIDTH)]
Tokens = Annotated[int, Meta(gt=0, le=MAX_TOKENS)]
OptionalTokens = Annotated[int, Meta(ge=0, le=MAX_TOKENS)]
Bits = Annotated[int, Meta(ge=0, le=64)]
BlockSize = Annotated[int, Meta(ge=0, le=2**20)]
Currency = Annotated[str, Meta(pattern=r"^[A-Z]{3}$", description="ISO 4217, e.g. USD")]
Money = Annotated[int, Meta(ge=0, le=MAX_SAFE_INT, description="Integer minor units (cents)")]
IsoDate = Annotated[
    str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", extra_json_schema={"format": "date"})
]


class InterconnectBody(msgspec.Struct, kw_only=True):
    slug: Slug
    name: Name = ""
    kind: Literal["nvlink", "pcie", "c2c", "infiniband", "other"]
    bytes_per_s_per_direction: PositiveBytes
    aliases: Aliases = []
    notes: LongText = ""
    sources: Sources = []


class GpuBody(msgspec.Struct, kw_only=True):
    slug: Slug
    name: Name = ""
    vendor: Name = ""
    architecture: Name = ""
    memory_type: Name = ""
    memory_bytes: PositiveBytes
    """Marketed capacity in decimal bytes (80 GB -> 80000000000)."""
    driver_visible_bytes: Bytes = 0
    """nvidia-smi "Total" in bytes (81,559 MiB -> 85520809984); 0 when unknown."""
    torch_visible_bytes: Bytes = 0
    """The device total torch.cuda.mem_get_info reports, where vLLM's memory budget starts
    (85026809984 on an H100 SXM); 0 when not measured: driver_visible_bytes less 494,000,000
    (the H100's difference)."""
    hbm_bytes_per_s: PositiveBytes
    nvlink: Slug | None = None
    """Interconnect slug of the GPU-to-GPU fabric; null: splits run over PCIe."""
    host_link: Slug | None = None
    fp8: bool = False
    fp4: bool = False
    gpus_per_node: Annotated[int, Meta(gt=0, le=4096)] = 8
    # 0 = unknown, not null: Litestar drops lower bounds of nullable numbers from the spec.
    bf16_dense_tflops: Annotated[float, Meta(ge=0, le=1e7)] = 0.0
    fp8_dense_tflops: Annotated[float, Meta(ge=0, le=1e7)] = 0.0
    """Dense (no sparsity) FP8 tensor-core peak; 0: none, or unknown."""
    fp4_dense_tflops: Annotated[float, Meta(ge=0, le=1e7)] = 0.0
    """Dense (no sparsity) FP4 tensor-core peak, both operands 4-bit (MXFP4 x MXFP4); 0: none,
    or unknown."""
    tdp_w: Annotated[int, Meta(ge=0, le=100_000)] = 0
    pcie_peer_to_peer: bool = True
    """Two of these GPUs can read each other's memory over PCIe; false where the driver refuses
    it (GeForce cards), which turns vLLM's custom all-reduce off on splits without NVLink."""
    aliases: Aliases = []
    notes: LongText = ""
    sources: Sources = []
    # Prices: optional (null: unknown). Non-negative, checked in the controller (422): Litestar
    # drops the lower bound of a nullable integer from the spec.
    currency: Currency | None = None
    """ISO 4217 code of both prices (USD, EUR); required when a price is set."""
    hourly_price_cents: Money | None = None
    """Cloud price of one GPU for one hour, in the currency's minor unit (cents)."""
    purchase_price_cents: Money | None = None
    """Price to buy one GPU, in the currency's minor unit (cents)."""
    price_observed_on: IsoDate | None = None
    """The day the prices were seen (YYYY-MM-DD)."""
    price_source: LongText = ""
    """Where the prices come from (a quote, a price list, a URL)."""


class ModelBody(msgspec.Struct, kw_only=True):
    slug: Slug
    name: Name = ""
    architecture: Annotated[str, Meta(max_length=128, pattern=_NO_NUL)] = ""
    """config.json's architectures[0], the model class vLLM instantiates (e.g.
    "LlamaForCausalLM"; vLLM 0.23-0.28 choose their model runner by it); empty: unknown. Set by
    POST /models/import."""
    total_params: PositiveCount
    active_params: Count = 0
    """Read per token; MoE rows exclude the input embedding; 0 or total_params: dense."""
    active_params_incl_embedding: Count = 0
    """MoE: active params counting the input embedding too (vendors quote either); 0: dense."""
    layers: Layers
    hidden_size: Width
    intermediate_size: OptionalWidth = 0
    attention_heads: Width
    kv_heads: Width
    head_dim: OptionalWidth = 0
    vocab_size: Annotated[int, Meta(ge=0, le=MAX_VOCAB)] = 0
    max_context_tokens: Tokens
    experts: Annotated[int, Meta(ge=0, le=MAX_EXPERTS)] = 0
    experts_per_token: Annotated[int, Meta(ge=0, le=MAX_EXPERTS)] = 0
    kv_lora_rank: OptionalWidth = 0
    qk_rope_head_dim: OptionalWidth = 0
    sliding_window_tokens: OptionalTokens = 0
    layer_types: Annotated[
        list[Literal["full", "sliding", "mla", "linear"]], Meta(max_length=4096)
    ] = []
    """One entry per layer; empty: every layer full attention (MLA when kv_lora_rank). linear:
    linear attention with a fixed state per sequence (needs the linear_* sizes)."""
    linear_key_heads: OptionalWidth = 0
    """Linear-attention (Gated DeltaNet) layers: key heads, value heads, their sizes and the
    convolution width (Qwen3-Next: 16, 32, 128, 128, 4); 0 when no layer is linear."""
    linear_value_heads: OptionalWidth = 0
    linear_key_head_dim: OptionalWidth = 0
    linear_value_head_dim: OptionalWidth = 0
    linear_conv_kernel: Annotated[int, Meta(ge=0, le=MAX_CONV_KERNEL)] = 0
    rotary_dim: OptionalWidth = 0
    """Dimensions of a head that rotary embedding turns (Qwen3-Next: 64 of 256); 0: all."""
    q_lora_rank: OptionalWidth = 0
    """MLA: the compressed query's width (DeepSeek-V3: 1536); 0: a plain query projection."""
    dense_layers: Annotated[int, Meta(ge=0, le=MAX_LAYERS)] = 0
    """MoE models: leading layers with a dense FFN (DeepSeek-V3: 3), of width
    dense_intermediate_size (18432)."""
    dense_intermediate_size: OptionalWidth = 0
    checkpoint_format: Annotated[str, Meta(max_length=64, pattern=r"^([a-z0-9][a-z0-9._-]*)?$")] = (
        ""
    )
    checkpoint_bytes: Bytes = 0
    """A quantised checkpoint's stored size in checkpoint_format (set by POST /models/import)."""
    replicated_params: Count = 0
    """Parameters every tensor-parallel rank holds whole (Qwen2.5-VL's vision patch embedding,
    norms and row-parallel biases); 0: all split. Set by POST /models/import."""
    rope_cache_rows: Annotated[list[int], Meta(max_length=8)] = []
    """Rows of each rotary cache vLLM builds (one per distinct rope; Gemma 3: [131072, 1048576]);
    empty: one cache of max_context_tokens rows. Set by POST /models/import. Each must be
    between 1 and 2**30 (a 422 naming rope_cache_rows otherwise: the spec cannot carry bounds on
    list items)."""
    aliases: Aliases = []
    notes: LongText = ""
    sources: Sources = []


class FormatBody(msgspec.Struct, kw_only=True):
    slug: Slug
    name: Name = ""
    value_bits: Annotated[int, Meta(gt=0, le=64)]
    block_size: BlockSize = 0
    scale_bits: Bits = 0
    zero_point_bits: Bits = 0
    super_block_size: BlockSize = 0
    super_scale_bits: Bits = 0
    needs: Literal["any", "fp8", "fp4"] = "any"
    kv_capable: bool = False
    description: LongText = ""
    aliases: Aliases = []
    notes: LongText = ""
    sources: Sources = []


# One page type per kind: plain Structs render to the same OpenAPI whatever was imported first
# (advanced-alchemy's generic OffsetPagination dataclass did not).
class GpuPage(msgspec.Struct, frozen=True):
    items: list[GpuBody]
    limit: int
    offset: int
    total: int


class InterconnectPage(msgspec.Struct, frozen=True):
    items: list[InterconnectBody]
    limit: int
    offset: int
    total: int


class ModelPage(msgspec.Struct, frozen=True):
    items: list[ModelBody]
    limit: int
    offset: int
    total: int


class FormatPage(msgspec.Struct, frozen=True):
    items: list[FormatBody]
    limit: int
    offset: int
    total: int
