"""ORM tables of the catalogue. Every row has a lowercase unique slug, aliases, notes and sources.

Sizes are bytes and bandwidths bytes per second (BigInteger: 192 GB does not fit in 32 bits).
The migration in migrations/versions/0001 is the schema of record; keep the two in step.
"""

from advanced_alchemy.base import IdentityAuditBase
from sqlalchemy import JSON, BigInteger, Boolean, Float, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

SLUG_LENGTH = 64
# advanced-alchemy's JsonB fails on SQLAlchemy 2.1 (util.portable_instancemethod is gone).
JsonList = JSON().with_variant(JSONB(), "postgresql")


class CatalogueRow:
    """Columns every catalogue table shares (a mixin; the tables add their own)."""

    slug: Mapped[str] = mapped_column(String(SLUG_LENGTH), unique=True, index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    aliases: Mapped[list[str]] = mapped_column(JsonList, default=list)
    """Short names people type (h100 -> h100-sxm); a lookup resolves one only when unambiguous."""
    notes: Mapped[str] = mapped_column(Text, default="")
    sources: Mapped[list[str]] = mapped_column(JsonList, default=list)


class Interconnect(CatalogueRow, IdentityAuditBase):
    __tablename__ = "interconnects"

    kind: Mapped[str] = mapped_column(String(16))
    bytes_per_s_per_direction: Mapped[int] = mapped_column(BigInteger)


class Gpu(CatalogueRow, IdentityAuditBase):
    __tablename__ = "gpus"

    vendor: Mapped[str] = mapped_column(String(64), default="")
    architecture: Mapped[str] = mapped_column(String(128), default="")
    memory_type: Mapped[str] = mapped_column(String(64), default="")
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    driver_visible_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    hbm_bytes_per_s: Mapped[int] = mapped_column(BigInteger)
    # Links by slug: stable public names, and a delete of a link still in use fails (409).
    nvlink: Mapped[str | None] = mapped_column(
        String(SLUG_LENGTH), ForeignKey("interconnects.slug", ondelete="RESTRICT"), nullable=True
    )
    host_link: Mapped[str | None] = mapped_column(
        String(SLUG_LENGTH), ForeignKey("interconnects.slug", ondelete="RESTRICT"), nullable=True
    )
    fp8: Mapped[bool] = mapped_column(Boolean, default=False)
    fp4: Mapped[bool] = mapped_column(Boolean, default=False)
    gpus_per_node: Mapped[int] = mapped_column(Integer, default=8)
    bf16_dense_tflops: Mapped[float] = mapped_column(Float, default=0.0)
    """0: not known from a reliable source."""
    fp8_dense_tflops: Mapped[float] = mapped_column(Float, default=0.0)
    """Dense FP8 tensor-core peak (migration 0011); 0: no FP8 tensor cores, or not known."""
    fp4_dense_tflops: Mapped[float] = mapped_column(Float, default=0.0)
    """Dense FP4 x FP4 tensor-core peak (migration 0016); 0: none, or not known."""
    torch_visible_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    """The device total torch.cuda.mem_get_info reports (migration 0017); 0: not measured."""
    tdp_w: Mapped[int] = mapped_column(Integer, default=0)
    pcie_peer_to_peer: Mapped[bool] = mapped_column(Boolean, default=True)
    """Two of these GPUs can read each other's memory over PCIe (migration 0015): false where
    the driver refuses it (GeForce cards); vLLM's custom all-reduce needs it without NVLink."""
    # Prices (migration 0004): optional, in the currency's minor unit (cents), never floats.
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    hourly_price_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    purchase_price_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    price_observed_on: Mapped[str | None] = mapped_column(String(10), nullable=True)
    """ISO date, stored as text so plan snapshots (JSON) keep it as written."""
    price_source: Mapped[str] = mapped_column(Text, default="")


class Model(CatalogueRow, IdentityAuditBase):
    __tablename__ = "models"

    total_params: Mapped[int] = mapped_column(BigInteger)
    active_params: Mapped[int] = mapped_column(BigInteger)
    """Read per decode step: MoE excludes the input embedding (a row lookup); dense = total."""
    active_params_incl_embedding: Mapped[int] = mapped_column(BigInteger, default=0)
    """MoE only (0 for dense): the active figure counting the input embedding too."""
    layers: Mapped[int] = mapped_column(Integer)
    hidden_size: Mapped[int] = mapped_column(Integer)
    intermediate_size: Mapped[int] = mapped_column(Integer, default=0)
    attention_heads: Mapped[int] = mapped_column(Integer)
    kv_heads: Mapped[int] = mapped_column(Integer)
    head_dim: Mapped[int] = mapped_column(Integer, default=0)
    vocab_size: Mapped[int] = mapped_column(Integer, default=0)
    max_context_tokens: Mapped[int] = mapped_column(Integer)
    experts: Mapped[int] = mapped_column(Integer, default=0)
    experts_per_token: Mapped[int] = mapped_column(Integer, default=0)
    kv_lora_rank: Mapped[int] = mapped_column(Integer, default=0)
    qk_rope_head_dim: Mapped[int] = mapped_column(Integer, default=0)
    sliding_window_tokens: Mapped[int] = mapped_column(Integer, default=0)
    layer_types: Mapped[list[str]] = mapped_column(JsonList, default=list)
    # Migration 0005: a quantised checkpoint's stored size, in its own format ('' / 0: none).
    checkpoint_format: Mapped[str] = mapped_column(String(64), default="", server_default="")
    checkpoint_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Migration 0009: parameters every tensor-parallel rank holds whole (0: all split).
    replicated_params: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Migration 0006: rows of each rotary cache ([]: one of max_context_tokens rows).
    rope_cache_rows: Mapped[list[int]] = mapped_column(JsonList, default=list, server_default="[]")
    # Migration 0007: linear-attention (Gated DeltaNet) sizes and the rotary dimension (0: none /
    # the whole head).
    linear_key_heads: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    linear_value_heads: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    linear_key_head_dim: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    linear_value_head_dim: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    linear_conv_kernel: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    rotary_dim: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Migration 0007 too: MLA's compressed query width and an MoE model's leading dense layers.
    q_lora_rank: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    dense_layers: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    dense_intermediate_size: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Migration 0008: config.json's architectures[0] ('': unknown), the class vLLM instantiates.
    architecture: Mapped[str] = mapped_column(String(128), default="", server_default="")


class Format(CatalogueRow, IdentityAuditBase):
    __tablename__ = "number_formats"

    value_bits: Mapped[int] = mapped_column(Integer)
    block_size: Mapped[int] = mapped_column(Integer, default=0)
    scale_bits: Mapped[int] = mapped_column(Integer, default=0)
    zero_point_bits: Mapped[int] = mapped_column(Integer, default=0)
    super_block_size: Mapped[int] = mapped_column(Integer, default=0)
    super_scale_bits: Mapped[int] = mapped_column(Integer, default=0)
    needs: Mapped[str] = mapped_column(String(8), default="any")
    kv_capable: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str] = mapped_column(Text, default="")


CatalogueTable = Interconnect | Gpu | Model | Format
