"""GPUs keep their dense FP8 tensor-core peak (``fp8_dense_tflops``), which the serving-speed
model's prefill (compute-bound) needs for FP8 checkpoints, and the two shipped rows that had no
BF16 peak (H100 NVL, RTX 4090) get theirs.

Every existing row gets 0 (unknown or no FP8 tensor cores, as the A100s), except the shipped
rows service/catalogue/data/gpu_updates.json lists for this revision, each with its datasheet.

Revision ID: 0011
Revises: 0010

"""
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "gpu_updates.json"


def upgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('fp8_dense_tflops', sa.Float(), server_default='0', nullable=False)
        )
    # By slug: a shipped slug a database no longer holds matches no row and nothing changes.
    for update in json.loads(UPDATES.read_text(encoding="utf-8")):
        if update["revision"] != revision:
            continue
        values = update["values"]
        gpus = sa.table('gpus', sa.column('slug'), *(sa.column(k) for k in values))
        op.execute(gpus.update().where(gpus.c.slug == update["slug"]).values(**values))


def downgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.drop_column('fp8_dense_tflops')
