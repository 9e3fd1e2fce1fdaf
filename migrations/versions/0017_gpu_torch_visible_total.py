"""GPUs keep the device total that torch.cuda.mem_get_info reports (``torch_visible_bytes``),
where vLLM's memory budget starts: the vllm method read it as nvidia-smi's total less a reserve
looked up by the GPU's slug, so a GPU added under another slug lost the figure measured for its
kind.

Every existing row gets 0 (not measured: driver_visible_bytes less the H100's 494,000,000 B),
except the shipped rows service/catalogue/data/gpu_updates.json lists for this revision, each
with the start-up log or error message its total was read from.

Revision ID: 0017
Revises: 0016

"""
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0017'
down_revision: Union[str, Sequence[str], None] = '0016'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "gpu_updates.json"


def upgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('torch_visible_bytes', sa.BigInteger(), server_default='0', nullable=False)
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
        batch_op.drop_column('torch_visible_bytes')
