"""GPUs keep their dense FP4 tensor-core peak (``fp4_dense_tflops``), both operands 4-bit: the
serving-speed model's prefill runs an AMD Quark MXFP4 checkpoint's linear layers at it where the
weights stay packed (MXFP4 x MXFP4 GEMMs), and took FP8's, half of it, for want of the figure.

Every existing row gets 0 (none, or not known), except the shipped rows
service/catalogue/data/gpu_updates.json lists for this revision, each with its datasheet
(B200, GB200, MI355X).

Revision ID: 0016
Revises: 0015

"""
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0016'
down_revision: Union[str, Sequence[str], None] = '0015'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "gpu_updates.json"


def upgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('fp4_dense_tflops', sa.Float(), server_default='0', nullable=False)
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
        batch_op.drop_column('fp4_dense_tflops')
