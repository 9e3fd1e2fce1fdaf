"""Catalogue rows -> the sizing core's spec Structs."""

from typing import cast

from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.sizing.cost import GpuPrice
from service.sizing.formats import NativeSupport, NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import LayerType, ModelSpec


def link_spec_of(row: Interconnect) -> LinkSpec:
    return LinkSpec(
        slug=row.slug,
        name=row.name,
        kind=row.kind,  # type: ignore[arg-type]  # the column holds the Literal's values only
        bytes_per_s_per_direction=row.bytes_per_s_per_direction,
    )


def gpu_spec_of(row: Gpu, links: dict[str, LinkSpec]) -> GpuSpec:
    """``links`` maps interconnect slugs to specs; the foreign keys guarantee they exist."""
    return GpuSpec(
        slug=row.slug,
        name=row.name,
        memory_bytes=row.memory_bytes,
        driver_visible_bytes=row.driver_visible_bytes,
        hbm_bytes_per_s=row.hbm_bytes_per_s,
        nvlink=links[row.nvlink] if row.nvlink else None,
        host_link=links[row.host_link] if row.host_link else None,
        fp8=row.fp8,
        fp4=row.fp4,
        gpus_per_node=row.gpus_per_node,
    )


def model_spec_of(row: Model) -> ModelSpec:
    return ModelSpec(
        slug=row.slug,
        name=row.name,
        total_params=row.total_params,
        active_params=row.active_params,
        layers=row.layers,
        hidden_size=row.hidden_size,
        intermediate_size=row.intermediate_size,
        attention_heads=row.attention_heads,
        kv_heads=row.kv_heads,
        head_dim=row.head_dim,
        vocab_size=row.vocab_size,
        max_context_tokens=row.max_context_tokens,
        experts=row.experts,
        experts_per_token=row.experts_per_token,
        kv_lora_rank=row.kv_lora_rank,
        qk_rope_head_dim=row.qk_rope_head_dim,
        sliding_window_tokens=row.sliding_window_tokens,
        layer_types=tuple(cast("list[LayerType]", row.layer_types)),
        checkpoint_format=row.checkpoint_format,
        checkpoint_bytes=row.checkpoint_bytes,
    )


def number_format_of(row: Format) -> NumberFormat:
    return NumberFormat(
        slug=row.slug,
        name=row.name,
        value_bits=row.value_bits,
        block_size=row.block_size,
        scale_bits=row.scale_bits,
        zero_point_bits=row.zero_point_bits,
        super_block_size=row.super_block_size,
        super_scale_bits=row.super_scale_bits,
        needs=cast("NativeSupport", row.needs),
        kv_capable=row.kv_capable,
        description=row.description,
    )


def gpu_price_of(row: Gpu) -> GpuPrice:
    return GpuPrice(
        gpu=row.slug,
        currency=row.currency,
        hourly_price_cents=row.hourly_price_cents,
        purchase_price_cents=row.purchase_price_cents,
        price_observed_on=row.price_observed_on,
        price_source=row.price_source or "",
    )
