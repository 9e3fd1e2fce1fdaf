"""Models describe linear-attention layers (Qwen3-Next's Gated DeltaNet: key and value heads,
their sizes, the convolution width) and the rotary dimension when only part of a head turns.

Every existing row is 0 for all six: no linear layers, rope over the whole head. Layer types
(a JSON list) may now hold "linear".

Revision ID: 0007
Revises: 0006

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

COLUMNS = (
    'linear_key_heads',
    'linear_value_heads',
    'linear_key_head_dim',
    'linear_value_head_dim',
    'linear_conv_kernel',
    'rotary_dim',
)


def upgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Integer(), server_default='0', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        for name in reversed(COLUMNS):
            batch_op.drop_column(name)
