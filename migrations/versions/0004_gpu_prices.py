"""GPU prices: hourly cloud price and purchase price per GPU, optional, with currency and date.

Money is an integer of the currency's minor unit (cents); the date is ISO text (YYYY-MM-DD).
Shipped rows carry no prices (no citable source); admins set them through PUT /gpus/{slug}.

Revision ID: 0004
Revises: 0003

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.add_column(sa.Column('currency', sa.String(length=3), nullable=True))
        batch_op.add_column(sa.Column('hourly_price_cents', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('purchase_price_cents', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('price_observed_on', sa.String(length=10), nullable=True))
        batch_op.add_column(sa.Column('price_source', sa.Text(), server_default='', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.drop_column('price_source')
        batch_op.drop_column('price_observed_on')
        batch_op.drop_column('purchase_price_cents')
        batch_op.drop_column('hourly_price_cents')
        batch_op.drop_column('currency')
