"""Models keep the parameters every tensor-parallel rank holds whole (``replicated_params``):
Qwen2.5-VL's vision tower keeps its Conv3d patch embedding, its norms and the biases of its
row-parallel layers unsplit on each rank (vLLM 0.8.2 ``qwen2_5_vl.py``), so its per-rank
weights are not total / TP. Every existing row gets 0 (all split); POST /models/import fills it.

Revision ID: 0009
Revises: 0008

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('replicated_params', sa.BigInteger(), server_default='0', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_column('replicated_params')
