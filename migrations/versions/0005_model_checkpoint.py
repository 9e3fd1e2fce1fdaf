"""Models keep a quantised checkpoint's stored size (imported from config.json), so a plan in
that format uses the real bytes (scales and 16-bit parts included) rather than params x bits.

Revision ID: 0005
Revises: 0004

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('checkpoint_format', sa.String(length=64), server_default='', nullable=False)
        )
        batch_op.add_column(
            sa.Column('checkpoint_bytes', sa.BigInteger(), server_default='0', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_column('checkpoint_bytes')
        batch_op.drop_column('checkpoint_format')
