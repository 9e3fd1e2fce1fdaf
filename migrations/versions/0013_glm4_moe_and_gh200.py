"""Two new shipped models, GLM-4.5-Air and GLM-4.6 (service/catalogue/data/models_0013.json):
MoE (glm4_moe), their fields and parameter counts from their published config.json
(tests/data/hf_configs/glm-4.5-air.json, glm-4.6.json), so the shipped rows and the same
models imported (POST /models/import) agree. The serving model's public benchmark runs
(service/accuracy/cases/serving/) include both on A100, H100 and H200, which the catalogue
could not describe before. And one new shipped GPU, GH200 (service/catalogue/data/gpus_0013.json,
each figure with its source): a calibration run of the serving model was served on it.

A database that already holds a model or a GPU under one of these slugs (imported by its users) keeps theirs.
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
NEW_ROWS = {"models": DATA / "models_0013.json", "gpus": DATA / "gpus_0013.json"}


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
    for name, path in NEW_ROWS.items():
        table = sa.table(name, sa.column('slug'))
        slugs = [row["slug"] for row in json.loads(path.read_text(encoding="utf-8"))]
        op.execute(table.delete().where(table.c.slug.in_(slugs)))
