"""Models describe linear-attention layers (Qwen3-Next's Gated DeltaNet: key and value heads,
their sizes, the convolution width), the rotary dimension when only part of a head turns, MLA's
compressed query width and an MoE model's leading dense layers (their count and FFN width),
which the vLLM method needs for the weights each rank and pipeline stage loads.

Every existing row gets 0 for all nine (no linear layers, rope over the whole head, no q LoRA,
no dense layers), except the shipped rows service/catalogue/data/model_updates.json lists for
this revision: DeepSeek-V3 gets its q_lora_rank 1536 and its 3 leading dense layers of 18,432
(its config.json). Layer types (a JSON list) may now hold "linear". A new shipped row,
Qwen3-Next 80B-A3B (service/catalogue/data/models_0007.json), is the first linear-attention
hybrid in the catalogue.

Revision ID: 0007
Revises: 0006

"""
import datetime
import json
from pathlib import Path
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
    'q_lora_rank',
    'dense_layers',
    'dense_intermediate_size',
)
DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "model_updates.json"
NEW_ROWS = DATA / "models_0007.json"


def upgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Integer(), server_default='0', nullable=False))
    for update in json.loads(UPDATES.read_text(encoding="utf-8")):
        if update["revision"] != revision:
            continue
        values = update["values"]
        models = sa.table('models', sa.column('slug'), *(sa.column(k) for k in values))
        op.execute(models.update().where(models.c.slug == update["slug"]).values(**values))
    bind = op.get_bind()
    table = sa.Table('models', sa.MetaData(), autoload_with=bind)
    now = datetime.datetime.now(datetime.timezone.utc)
    # A database that already holds a model under a shipped slug (imported by its users) keeps
    # theirs: the upgrade must not fail on the unique slug.
    taken = set(bind.execute(sa.select(table.c.slug)).scalars())
    rows = [r for r in json.loads(NEW_ROWS.read_text(encoding="utf-8")) if r["slug"] not in taken]
    for row in rows:
        unknown = set(row) - set(table.c.keys())
        assert not unknown, f"models_0007.json: {row['slug']}: no columns {sorted(unknown)}"
        row.update(created_at=now, updated_at=now)
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    models = sa.table('models', sa.column('slug'))
    slugs = [row["slug"] for row in json.loads(NEW_ROWS.read_text(encoding="utf-8"))]
    op.execute(models.delete().where(models.c.slug.in_(slugs)))
    with op.batch_alter_table('models', schema=None) as batch_op:
        for name in reversed(COLUMNS):
            batch_op.drop_column(name)
