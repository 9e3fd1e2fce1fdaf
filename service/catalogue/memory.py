"""The whole catalogue in memory, as the sizing core's specs: what the computations read.

The server's cache (service.catalogue.cache) keeps one Snapshot of the database's rows; the
offline CLI and the reports build one from the shipped JSON (service.offline). Names resolve
as in the database (service.catalogue.names). Pure: no database, no ORM (the rows are any
objects with the columns as attributes), so the offline CLI imports neither.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from service.catalogue.convert import (
    gpu_price_of,
    gpu_spec_of,
    link_spec_of,
    model_spec_of,
    number_format_of,
)
from service.catalogue.names import choose, normalise
from service.sizing.cost import GpuPrice
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import ModelSpec

Spec = TypeVar("Spec")
MAX_RESOLVED = 4096
"""At most this many name lookups are remembered per snapshot (``Snapshot.resolved``): names
are the callers' spellings, so a bound keeps an odd caller from growing the memory."""
TABLE_KINDS = {
    "interconnects": "interconnect",
    "gpus": "gpu",
    "models": "model",
    "number_formats": "number format",
}
"""Each catalogue table's name and what a 404 calls its rows (service.catalogue.lookup.KIND)."""


@dataclass(frozen=True)
class Entry(Generic[Spec]):
    """One catalogue row as the snapshot keeps it: what resolution needs, and the core's spec."""

    slug: str
    aliases: list[str]
    spec: Spec


@dataclass(frozen=True)
class Table(Generic[Spec]):
    kind: str
    entries: list[Entry[Spec]]  # sorted by slug, like the database lookups
    by_slug: dict[str, Entry[Spec]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_slug", {e.slug: e for e in self.entries})

    def resolve(self, name: str, field: str) -> Spec:
        """Same rules as lookup.resolve: exact slug, else alias, else "<name>-" prefix."""
        entry = self.by_slug.get(normalise(name))
        if entry is None:
            entry = choose(self.entries, name, self.kind, field)
        return entry.spec


@dataclass(frozen=True)
class Snapshot:
    """The whole catalogue at one fingerprint, as the core's specs; immutable once built."""

    fingerprint: str
    links: Table[LinkSpec]
    gpus: Table[GpuSpec]
    models: Table[ModelSpec]
    formats: Table[NumberFormat]
    rows: dict[str, list[Any]]
    """The detached ORM rows by table name, for readers that need columns the specs lack."""

    def gpu_spec(self, name: str, field: str = "gpu") -> GpuSpec:
        return self.gpus.resolve(name, field)

    def all_gpu_specs(self) -> list[GpuSpec]:
        return [e.spec for e in self.gpus.entries]

    def model_spec(self, name: str, field: str = "model") -> ModelSpec:
        return self.models.resolve(name, field)

    def all_model_specs(self) -> list[ModelSpec]:
        return [e.spec for e in self.models.entries]

    def link_spec(self, name: str, field: str = "link") -> LinkSpec:
        return self.links.resolve(name, field)

    def number_format(self, name: str, field: str) -> NumberFormat:
        return self.formats.resolve(name, field)

    @cached_property
    def resolved(self) -> dict[Any, Any]:
        """Lookups already made on this snapshot, by the names as a request gave them
        (service.plans.served.specs_from): a snapshot never changes, so neither does what a
        name resolves to in it. Filled up to MAX_RESOLVED entries, then left as it is."""
        return {}

    @cached_property
    def _prices(self) -> dict[str, GpuPrice]:
        return {row.slug: gpu_price_of(row) for row in self.rows["gpus"]}

    def prices(self) -> dict[str, GpuPrice]:
        """Every GPU's prices by slug (a GPU without prices: an unpriced GpuPrice), converted
        once per snapshot; a copy, the caller's to change."""
        return dict(self._prices)


def _table(kind: str, rows: Sequence[Any], convert: Callable[[Any], Spec]) -> Table[Spec]:
    ordered = sorted(rows, key=lambda r: r.slug)
    return Table(kind, [Entry(r.slug, list(r.aliases), convert(r)) for r in ordered])


def snapshot_of(rows: dict[str, list[Any]], fingerprint: str = "") -> Snapshot:
    """The snapshot of catalogue ``rows`` (by table name), converted to the core's specs."""
    kind = TABLE_KINDS
    links = _table(kind["interconnects"], rows["interconnects"], link_spec_of)
    link_specs = {e.slug: e.spec for e in links.entries}
    return Snapshot(
        fingerprint=fingerprint,
        links=links,
        gpus=_table(kind["gpus"], rows["gpus"], lambda r: gpu_spec_of(r, link_specs)),
        models=_table(kind["models"], rows["models"], model_spec_of),
        formats=_table(kind["number_formats"], rows["number_formats"], number_format_of),
        rows=rows,
    )
