"""Ship the catalogue rows: interconnects, GPUs, models and number formats.

The rows come from service/catalogue/data/*.json (derived by hand from the reference notes, with
sources per row). Those files are this revision's content: a later correction of a shipped row
goes into a new revision that updates it, so a database upgraded yesterday and one created today
agree.

Revision ID: 0002
Revises: 0001

"""
import datetime
import json
from pathlib import Path
from typing import Any, Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
# (table, data file) in foreign-key order: GPUs reference interconnects by slug.
TABLES = (
    ("interconnects", "interconnects.json"),
    ("gpus", "gpus.json"),
    ("models", "models.json"),
    ("number_formats", "formats.json"),
)


def rows(file_name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / file_name).read_text(encoding="utf-8"))


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.datetime.now(datetime.timezone.utc)
    for table_name, file_name in TABLES:
        table = sa.Table(table_name, sa.MetaData(), autoload_with=bind)
        data = rows(file_name)
        for row in data:
            unknown = set(row) - set(table.c.keys())
            assert not unknown, f"{file_name}: {row['slug']}: no columns {sorted(unknown)}"
            row.update(created_at=now, updated_at=now)
        op.bulk_insert(table, data)


def downgrade() -> None:
    bind = op.get_bind()
    for table_name, file_name in reversed(TABLES):
        table = sa.Table(table_name, sa.MetaData(), autoload_with=bind)
        slugs = [row["slug"] for row in rows(file_name)]
        op.execute(table.delete().where(table.c.slug.in_(slugs)))
