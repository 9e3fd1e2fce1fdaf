"""Shipped models carry their checkpoint's format and stored bytes, as imported rows do (0005):
DeepSeek-V3 ships in FP8 with 128 x 128 block scales, gpt-oss-20b and gpt-oss-120b with MXFP4
experts. Each value is what POST /models/import computes from the model's published config.json
(service/catalogue/data/model_updates.json lists them for this revision, with the arithmetic),
so a shipped row and the same model imported agree to the byte, and a plan that names no
weight_format sizes the checkpoint as published.

Only a row still without a checkpoint ('' / 0) is updated: a row its users re-imported or edited
keeps theirs. The downgrade clears exactly the values this revision set.

Revision ID: 0010
Revises: 0009

"""
import json
from pathlib import Path
from typing import Any, Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "model_updates.json"
MODELS = sa.table(
    'models', sa.column('slug'), sa.column('checkpoint_format'), sa.column('checkpoint_bytes')
)


def updates() -> list[dict[str, Any]]:
    return [u for u in json.loads(UPDATES.read_text(encoding="utf-8")) if u["revision"] == revision]


def upgrade() -> None:
    for update in updates():
        op.execute(
            MODELS.update()
            .where(MODELS.c.slug == update["slug"], MODELS.c.checkpoint_format == '')
            .values(**update["values"])
        )


def downgrade() -> None:
    for update in updates():
        values = update["values"]
        op.execute(
            MODELS.update()
            .where(
                MODELS.c.slug == update["slug"],
                MODELS.c.checkpoint_format == values["checkpoint_format"],
                MODELS.c.checkpoint_bytes == values["checkpoint_bytes"],
            )
            .values(checkpoint_format='', checkpoint_bytes=0)
        )
