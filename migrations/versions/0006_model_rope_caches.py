"""Models keep the rows of their rotary caches (one entry per distinct rope), which the vLLM
method counts as loaded weights: Gemma 3's global rope is built for 8x its context.

An empty list means one cache of max_context_tokens rows (every shipped model but Gemma 3, whose
shipped row stays text-only and default; POST /models/import fills the list from config.json).

Revision ID: 0006
Revises: 0005

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    json_list = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('rope_cache_rows', json_list, server_default='[]', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_column('rope_cache_rows')
