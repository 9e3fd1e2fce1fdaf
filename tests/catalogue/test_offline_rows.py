"""The offline catalogue (service.offline) builds its rows without the ORM: its columns and
defaults are spelled out, and must stay those of the tables, so that it holds the specs the
migrations' rows convert to."""

from typing import Any

import msgspec

from service.catalogue.memory import snapshot_of
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.offline import COLUMNS, DATA, DEFAULTS, SHIPPED, UPDATES, LocalCatalogue
from service.offline import _load as load

TABLES = {t.__tablename__: t for t in (Interconnect, Gpu, Model, Format)}
BOOKKEEPING = {"id", "created_at", "updated_at"}


def orm_defaults(table: type[Any]) -> dict[str, Any]:
    """What an INSERT fills in, read from the ORM's column defaults."""
    found = {}
    for column in table.__table__.columns:
        default = column.default
        if column.key in BOOKKEEPING or default is None or not hasattr(default, "arg"):
            continue
        arg = default.arg
        found[column.key] = arg(None) if callable(arg) else arg
    return found


def test_the_columns_and_defaults_are_the_tables() -> None:
    assert set(COLUMNS) == set(TABLES) == {name for name, _ in SHIPPED}
    for name, table in TABLES.items():
        assert set(COLUMNS[name]) == set(table.__table__.columns.keys()) - BOOKKEEPING, name
        assert len(COLUMNS[name]) == len(set(COLUMNS[name])), name
        assert DEFAULTS[name] == orm_defaults(table), name


def orm_rows(name: str, files: tuple[str, ...]) -> list[Any]:
    """The shipped rows as ORM objects, the way the migrations insert them (the former path)."""
    table = TABLES[name]
    columns = set(table.__table__.columns.keys())
    updates: dict[str, dict[str, Any]] = {}
    for update in load(UPDATES[name]) if name in UPDATES else []:
        updates.setdefault(update["slug"], {}).update(update["values"])
    rows = []
    for row in (r for f in files for r in load(f)):
        values = {**orm_defaults(table), **row, **updates.get(row["slug"], {})}
        rows.append(table(**{k: v for k, v in values.items() if k in columns}))
    return sorted(rows, key=lambda r: r.slug)


def test_the_offline_specs_are_those_of_the_orm_rows() -> None:
    assert (DATA / "gpus.json").exists()
    orm = snapshot_of({name: orm_rows(name, files) for name, files in SHIPPED})
    offline = LocalCatalogue().snapshot
    for table in ("links", "gpus", "models", "formats"):
        mine, theirs = getattr(offline, table), getattr(orm, table)
        assert [(e.slug, e.aliases) for e in mine.entries] == [
            (e.slug, e.aliases) for e in theirs.entries
        ]
        assert msgspec.json.encode([e.spec for e in mine.entries]) == msgspec.json.encode(
            [e.spec for e in theirs.entries]
        ), table
    assert offline.prices() == orm.prices()
    assert len(offline.gpus.entries) == 12 and len(offline.models.entries) == 20
