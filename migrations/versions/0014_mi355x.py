"""One new shipped GPU, AMD Instinct MI355X (CDNA 4, gfx950; service/catalogue/data/gpus_0014.json),
and the Infinity Fabric generation it is joined by (interconnects_0014.json), each figure with
its source: public serving benchmark runs (service/accuracy/cases/serving/) were measured on
one, which the catalogue could not describe before. MI355X's seven links carry 76.8 GB/s a
direction each, against the 64 the `infinity-fabric` row assumes for MI300X's, so they get an
interconnect row of their own.

A database that already holds a GPU or an interconnect under one of these slugs (added by its
users) keeps theirs; the GPU row then points at whatever that interconnect row says.
The downgrade deletes the shipped rows (the GPU before the interconnect it references).

Revision ID: 0014
Revises: 0013

"""
import datetime
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0014'
down_revision: Union[str, Sequence[str], None] = '0013'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
NEW_ROWS = {"interconnects": DATA / "interconnects_0014.json", "gpus": DATA / "gpus_0014.json"}
"""In insertion order: the GPU row references the interconnect by slug."""


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.datetime.now(datetime.timezone.utc)
    for name, path in NEW_ROWS.items():
        table = sa.Table(name, sa.MetaData(), autoload_with=bind)
        taken = set(bind.execute(sa.select(table.c.slug)).scalars())
        rows = [r for r in json.loads(path.read_text(encoding="utf-8")) if r["slug"] not in taken]
        for row in rows:
            unknown = set(row) - set(table.c.keys())
            assert not unknown, f"{path.name}: {row['slug']}: no columns {sorted(unknown)}"
            row.update(created_at=now, updated_at=now)
        if rows:
            op.bulk_insert(table, rows)


def downgrade() -> None:
    for name, path in reversed(NEW_ROWS.items()):
        table = sa.table(name, sa.column('slug'))
        slugs = [row["slug"] for row in json.loads(path.read_text(encoding="utf-8"))]
        op.execute(table.delete().where(table.c.slug.in_(slugs)))
