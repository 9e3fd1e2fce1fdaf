"""The offline catalogue (service.offline) builds its rows without the ORM: its columns and
defaults are spelled out, and must stay those of the tables, so that it holds the specs the
migrations' rows convert to."""

import json
from typing import Any

import msgspec
import pytest

from service.__main__ import main
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
    assert len(offline.gpus.entries) == 13 and len(offline.models.entries) == 20
    assert len(offline.links.entries) == 12  # 11 from migration 0002, MI355X's link from 0014


# Llama 3.1 70B in FP8 on one MI355X, the seeds' method on the default workload (8
# conversations of 8,192 tokens, 90% fill, 4 GB overhead, driver basis): weights 70,553,706,496
# params x 1 B; FP8 KV beside FP8 weights, 2 x 80 layers x 8 KV heads x 128 x 1 B = 163,840 B a
# token, x 65,536 tokens = 10,737,418,240 B; 81,291,124,736 B against 309,216,170,475 x 0.9
# (floored: 278,294,553,427) - 4,000,000,000 = 274,294,553,427 B: 193,003,428,691 B spare (70%).
MI355X_FP8_SPARE_BYTES = 274_294_553_427 - 70_553_706_496 - 10_737_418_240


def test_the_offline_catalogue_holds_the_mi355x_and_plans_on_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpu = LocalCatalogue().gpu("mi355")  # the alias
    assert (gpu.slug, gpu.vendor, gpu.architecture) == ("mi355x", "AMD", "CDNA 4 (gfx950)")
    assert (gpu.memory_bytes, gpu.driver_visible_bytes) == (288 * 10**9, 309_216_170_475)
    assert gpu.bf16_dense_flops_per_s == 2516.6e12 and gpu.fp8_dense_flops_per_s == 5033.2e12
    assert gpu.fp4_dense_flops_per_s == 10066.4e12  # 0016: MXFP4, twice FP8's
    assert gpu.nvlink is not None and gpu.nvlink.bytes_per_s_per_direction == 537_600_000_000
    # The CLI, no server: the same plan.
    assert main(["plan", "llama-3.1-70b", "--gpu", "mi355x", "--format", "fp8", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["gpu"], plan["gpu_count"], plan["fits"]) == ("mi355x", 1, True)
    assert (plan["kv_format"], plan["kv_cache_bytes"]) == ("fp8", 10_737_418_240)
    assert plan["spare_bytes"] == MI355X_FP8_SPARE_BYTES == 193_003_428_691
