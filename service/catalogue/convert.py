"""Catalogue rows -> the sizing core's spec Structs.

Rows carry the specs' fields under the same names, so msgspec converts them (checking the
Literal-typed columns on the way); only a GPU's links need resolving to their specs.
"""

from typing import TYPE_CHECKING

import msgspec

from service.sizing.cost import GpuPrice
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec, compute_capability_of
from service.sizing.models import ModelSpec

if TYPE_CHECKING:  # any object with the columns as attributes converts (the offline rows too)
    from service.catalogue.tables import Format, Gpu, Interconnect, Model


def link_spec_of(row: "Interconnect") -> LinkSpec:
    return msgspec.convert(row, LinkSpec, from_attributes=True)


def pcie_peer_to_peer(row: "Gpu") -> bool:
    """The row's ``pcie_peer_to_peer`` (migration 0015). A saved plan's snapshot taken before
    that migration has no such column: it keeps the answer it was planned with, when the
    GeForce line (PCIe peer-to-peer disabled in the driver) was told by the product name."""
    stored: bool | None = getattr(row, "pcie_peer_to_peer", None)
    if stored is not None:
        return stored
    return not (row.vendor == "NVIDIA" and "GeForce" in row.name.split())


PRE_0017_RESERVE_BYTES: dict[str, int] = {
    **{"h100-sxm": 494_000_000, "a100-80gb": 805_000_000, "a100-40gb": 655_000_000},
    **{"h200": 634_975_683, "l40s": 728_298_946, "rtx-4090": 0, "mi300x": -314_000_000},
    "mi355x": 0,
}
"""Before migration 0017 the vllm method took torch's total as nvidia-smi's less these, looked
up by the shipped GPU's slug (0017 stores the same totals in the rows)."""


def torch_visible_total(row: "Gpu") -> int:
    """The row's ``torch_visible_bytes`` (migration 0017). A saved plan's snapshot taken before
    that migration has no such column: it keeps the answer it was planned with, when the total
    was nvidia-smi's less a reserve found by the row's slug (0: the default reserve)."""
    stored: int | None = getattr(row, "torch_visible_bytes", None)
    if stored is not None:
        return stored
    reserve = PRE_0017_RESERVE_BYTES.get(row.slug)
    if reserve is None:
        return 0
    return (row.driver_visible_bytes or row.memory_bytes) - reserve


def gpu_spec_of(row: "Gpu", links: dict[str, LinkSpec]) -> GpuSpec:
    """``links`` maps interconnect slugs to specs; the foreign keys guarantee they exist."""
    return GpuSpec(
        slug=row.slug,
        name=row.name,
        memory_bytes=row.memory_bytes,
        driver_visible_bytes=row.driver_visible_bytes,
        torch_visible_bytes=torch_visible_total(row),
        hbm_bytes_per_s=row.hbm_bytes_per_s,
        nvlink=links[row.nvlink] if row.nvlink else None,
        host_link=links[row.host_link] if row.host_link else None,
        fp8=row.fp8,
        fp4=row.fp4,
        gpus_per_node=row.gpus_per_node,
        architecture=row.architecture,
        vendor=row.vendor or "",
        compute_capability=compute_capability_of(row.architecture or ""),
        peer_to_peer=pcie_peer_to_peer(row),
        bf16_dense_flops_per_s=(row.bf16_dense_tflops or 0.0) * 1e12,
        fp8_dense_flops_per_s=(getattr(row, "fp8_dense_tflops", 0.0) or 0.0) * 1e12,
        fp4_dense_flops_per_s=(getattr(row, "fp4_dense_tflops", 0.0) or 0.0) * 1e12,
    )


def model_spec_of(row: "Model") -> ModelSpec:
    """A column a row does not carry (a saved plan's snapshot taken before the migration that
    added it) takes the spec's default, which is what the migration gave existing rows."""
    fields = {
        name: value
        for name in ModelSpec.__struct_fields__
        if (value := getattr(row, name, None)) is not None
    }
    return msgspec.convert(fields, ModelSpec)


def number_format_of(row: "Format") -> NumberFormat:
    return msgspec.convert(row, NumberFormat, from_attributes=True)


def gpu_price_of(row: "Gpu") -> GpuPrice:
    return GpuPrice(
        gpu=row.slug,
        currency=row.currency,
        hourly_price_cents=row.hourly_price_cents,
        purchase_price_cents=row.purchase_price_cents,
        price_observed_on=row.price_observed_on,
        price_source=row.price_source or "",
    )
