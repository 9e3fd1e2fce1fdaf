"""How a name a person typed finds its catalogue row: the exact slug; else the rows listing it
as an alias; else the rows whose slug starts with "<name>-". One match wins; several are
ambiguous (404 listing them); none is a 404 suggesting the closest slugs (difflib).

Pure: the database lookups (service.catalogue.lookup) and the in-memory catalogue
(service.catalogue.memory) both resolve with these rules.
"""

import difflib
import functools
from collections.abc import Sequence
from typing import Protocol, TypeVar

from service.catalogue.errors import NotFound


class Named(Protocol):
    """A catalogue row or a snapshot entry: what resolution looks at."""

    @property
    def slug(self) -> str: ...

    @property
    def aliases(self) -> list[str]: ...


N = TypeVar("N", bound=Named)


@functools.lru_cache(maxsize=4096)
def normalise(name: str) -> str:
    """What people type -> slug spelling: 'H100 SXM' -> 'h100-sxm' (remembered: every request
    resolves its names, mostly the same few)."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def closest(name: str, rows: Sequence[Named], n: int = 3) -> list[str]:
    """The slugs nearest to ``name``, matching on slugs and aliases alike."""
    owner: dict[str, str] = {}
    for row in rows:
        owner.setdefault(row.slug, row.slug)
        for alias in row.aliases:
            owner.setdefault(alias, row.slug)
    matches = difflib.get_close_matches(name, list(owner), n=n * 2, cutoff=0.5)
    return list(dict.fromkeys(owner[m] for m in matches))[:n]


def choose(rows: Sequence[N], name: str, kind: str, field: str, *, status: int = 404) -> N:
    """Alias, then "<name>-" prefix, among ``rows`` (sorted by slug); the exact slug was tried."""
    key = normalise(name)
    candidates = [r for r in rows if key in r.aliases] or [
        r for r in rows if key and r.slug.startswith(key + "-")
    ]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        slugs = [r.slug for r in candidates]
        raise NotFound(
            field=field, slug=name, kind=kind, suggestions=slugs, ambiguous=True, status=status
        )
    raise NotFound(field=field, slug=name, kind=kind, suggestions=closest(key, rows), status=status)
