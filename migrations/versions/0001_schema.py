"""Catalogue and API key schema.

Sizes are BigInteger bytes; links are referenced by slug so a link in use cannot be deleted.

Revision ID: 0001
Revises: 

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('api_keys',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False),
    sa.Column('principal', sa.String(length=200), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('key_sha256', sa.String(length=64), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_key_sha256'), ['key_sha256'], unique=True)

    op.create_table('interconnects',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('bytes_per_s_per_direction', sa.BigInteger(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('aliases', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('sources', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_interconnects'))
    )
    with op.batch_alter_table('interconnects', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_interconnects_slug'), ['slug'], unique=True)

    op.create_table('models',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False),
    sa.Column('total_params', sa.BigInteger(), nullable=False),
    sa.Column('active_params', sa.BigInteger(), nullable=False),
    sa.Column('active_params_incl_embedding', sa.BigInteger(), nullable=False),
    sa.Column('layers', sa.Integer(), nullable=False),
    sa.Column('hidden_size', sa.Integer(), nullable=False),
    sa.Column('intermediate_size', sa.Integer(), nullable=False),
    sa.Column('attention_heads', sa.Integer(), nullable=False),
    sa.Column('kv_heads', sa.Integer(), nullable=False),
    sa.Column('head_dim', sa.Integer(), nullable=False),
    sa.Column('vocab_size', sa.Integer(), nullable=False),
    sa.Column('max_context_tokens', sa.Integer(), nullable=False),
    sa.Column('experts', sa.Integer(), nullable=False),
    sa.Column('experts_per_token', sa.Integer(), nullable=False),
    sa.Column('kv_lora_rank', sa.Integer(), nullable=False),
    sa.Column('qk_rope_head_dim', sa.Integer(), nullable=False),
    sa.Column('sliding_window_tokens', sa.Integer(), nullable=False),
    sa.Column('layer_types', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('aliases', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('sources', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_models'))
    )
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_models_slug'), ['slug'], unique=True)

    op.create_table('number_formats',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False),
    sa.Column('value_bits', sa.Integer(), nullable=False),
    sa.Column('block_size', sa.Integer(), nullable=False),
    sa.Column('scale_bits', sa.Integer(), nullable=False),
    sa.Column('zero_point_bits', sa.Integer(), nullable=False),
    sa.Column('super_block_size', sa.Integer(), nullable=False),
    sa.Column('super_scale_bits', sa.Integer(), nullable=False),
    sa.Column('needs', sa.String(length=8), nullable=False),
    sa.Column('kv_capable', sa.Boolean(), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('aliases', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('sources', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_number_formats'))
    )
    with op.batch_alter_table('number_formats', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_number_formats_slug'), ['slug'], unique=True)

    op.create_table('gpus',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), sa.Identity(always=False, start=1, increment=1), nullable=False),
    sa.Column('vendor', sa.String(length=64), nullable=False),
    sa.Column('architecture', sa.String(length=128), nullable=False),
    sa.Column('memory_type', sa.String(length=64), nullable=False),
    sa.Column('memory_bytes', sa.BigInteger(), nullable=False),
    sa.Column('driver_visible_bytes', sa.BigInteger(), nullable=False),
    sa.Column('hbm_bytes_per_s', sa.BigInteger(), nullable=False),
    sa.Column('nvlink', sa.String(length=64), nullable=True),
    sa.Column('host_link', sa.String(length=64), nullable=True),
    sa.Column('fp8', sa.Boolean(), nullable=False),
    sa.Column('fp4', sa.Boolean(), nullable=False),
    sa.Column('gpus_per_node', sa.Integer(), nullable=False),
    sa.Column('bf16_dense_tflops', sa.Float(), nullable=False),
    sa.Column('tdp_w', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('aliases', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('sources', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['host_link'], ['interconnects.slug'], name=op.f('fk_gpus_host_link_interconnects'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['nvlink'], ['interconnects.slug'], name=op.f('fk_gpus_nvlink_interconnects'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gpus'))
    )
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_gpus_slug'), ['slug'], unique=True)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gpus_slug'))

    op.drop_table('gpus')
    with op.batch_alter_table('number_formats', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_number_formats_slug'))

    op.drop_table('number_formats')
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_models_slug'))

    op.drop_table('models')
    with op.batch_alter_table('interconnects', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_interconnects_slug'))

    op.drop_table('interconnects')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_key_sha256'))

    op.drop_table('api_keys')
