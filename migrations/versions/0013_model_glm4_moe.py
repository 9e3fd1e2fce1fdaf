"""Two new shipped models, GLM-4.5-Air and GLM-4.6 (service/catalogue/data/models_0013.json):
MoE (glm4_moe), their fields and parameter counts from their published config.json
(tests/data/hf_configs/glm-4.5-air.json, glm-4.6.json), so the shipped rows and the same
models imported (POST /models/import) agree. The serving model's public benchmark runs
(service/accuracy/cases/serving/) include both on A100, H100 and H200, which the catalogue
could not describe before.

A database that already holds a model under either slug (imported by its users) keeps theirs.
The downgrade deletes the shipped rows.

Revision ID: 0013
Revises: 0012

"""
import datetime
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
NEW_ROWS = DATA / "models_0013.json"


def upgrade() -> None:
    bind = op.get_bind()
    table = sa.Table('models', sa.MetaData(), autoload_with=bind)
    now = datetime.datetime.now(datetime.timezone.utc)
    taken = set(bind.execute(sa.select(table.c.slug)).scalars())
    rows = [r for r in json.loads(NEW_ROWS.read_text(encoding="utf-8")) if r["slug"] not in taken]
    for row in rows:
        unknown = set(row) - set(table.c.keys())
        assert not unknown, f"models_0013.json: {row['slug']}: no columns {sorted(unknown)}"
        row.update(created_at=now, updated_at=now)
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    models = sa.table('models', sa.column('slug'))
    slugs = [row["slug"] for row in json.loads(NEW_ROWS.read_text(encoding="utf-8"))]
    op.execute(models.delete().where(models.c.slug.in_(slugs)))
