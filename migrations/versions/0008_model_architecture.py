"""Models keep the checkpoint's model class as config.json names it (``architectures[0]``, e.g.
"LlamaForCausalLM"): vLLM 0.23-0.28 choose their model runner by this class name, so it must
survive the catalogue round trip.

Every existing row gets '' (unknown), except the shipped rows service/catalogue/data/
model_updates.json lists for this revision: each gets its config.json's class
(../shared/reference/models.json ``hf_config_fields.architectures[0]``). POST /models/import
fills it from config.json.

Revision ID: 0008
Revises: 0007

"""
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "model_updates.json"


def upgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('architecture', sa.String(length=128), server_default='', nullable=False)
        )
    # By slug, as 0007 corrects DeepSeek-V3: a shipped slug a database no longer holds (deleted
    # by its users) matches no row and nothing changes.
    for update in json.loads(UPDATES.read_text(encoding="utf-8")):
        if update["revision"] != revision:
            continue
        values = update["values"]
        models = sa.table('models', sa.column('slug'), *(sa.column(k) for k in values))
        op.execute(models.update().where(models.c.slug == update["slug"]).values(**values))


def downgrade() -> None:
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_column('architecture')
