"""Saved plans, their audit trail and idempotency keys.

JSON columns are plain ``json`` on PostgreSQL too (jsonb would reorder the stored keys).

Revision ID: 0003
Revises: 0002

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def _id() -> sa.Column:
    return sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False)


def _plan_ref(nullable: bool) -> sa.Column:
    return sa.Column('plan_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=nullable)


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    op.create_table('plans',
    _id(),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=24), nullable=False),
    sa.Column('author', sa.String(length=200), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('workload', sa.String(length=16), nullable=False),
    sa.Column('model_slug', sa.String(length=64), nullable=False),
    sa.Column('gpu_slug', sa.String(length=64), nullable=False),
    sa.Column('request', sa.JSON(), nullable=False),
    sa.Column('answer', sa.JSON(), nullable=False),
    sa.Column('catalogue', sa.JSON(), nullable=False),
    *_timestamps(),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_plans'))
    )
    with op.batch_alter_table('plans', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_plans_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_plans_author'), ['author'], unique=False)
        batch_op.create_index(batch_op.f('ix_plans_model_slug'), ['model_slug'], unique=False)
        batch_op.create_index(batch_op.f('ix_plans_gpu_slug'), ['gpu_slug'], unique=False)

    op.create_table('plan_events',
    _id(),
    _plan_ref(nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=200), nullable=False),
    sa.Column('decision', sa.String(length=24), nullable=True),
    sa.Column('comment', sa.Text(), nullable=False),
    sa.Column('from_status', sa.String(length=24), nullable=True),
    sa.Column('to_status', sa.String(length=24), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    *_timestamps(),
    sa.ForeignKeyConstraint(['plan_id'], ['plans.id'], name=op.f('fk_plan_events_plan_id_plans'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_plan_events'))
    )
    with op.batch_alter_table('plan_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_plan_events_plan_id'), ['plan_id'], unique=False)

    op.create_table('plan_idempotency_keys',
    _id(),
    sa.Column('author', sa.String(length=200), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('request_sha256', sa.String(length=64), nullable=False),
    _plan_ref(nullable=True),
    *_timestamps(),
    sa.ForeignKeyConstraint(['plan_id'], ['plans.id'], name=op.f('fk_plan_idempotency_keys_plan_id_plans'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_plan_idempotency_keys')),
    sa.UniqueConstraint('author', 'key', name='uq_plan_idempotency_keys_author_key')
    )


def downgrade() -> None:
    op.drop_table('plan_idempotency_keys')
    with op.batch_alter_table('plan_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_plan_events_plan_id'))
    op.drop_table('plan_events')
    with op.batch_alter_table('plans', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_plans_gpu_slug'))
        batch_op.drop_index(batch_op.f('ix_plans_model_slug'))
        batch_op.drop_index(batch_op.f('ix_plans_author'))
        batch_op.drop_index(batch_op.f('ix_plans_status'))
    op.drop_table('plans')
