"""GPUs keep whether two of them can read each other's memory over PCIe (``pcie_peer_to_peer``),
which vLLM's custom all-reduce needs on GPUs without NVLink: until now the core read it from the
product name ("GeForce"), a hardware fact taken from a spelling.

Every existing row gets true (the datacenter cards' driver allows it), except the shipped rows
service/catalogue/data/gpu_updates.json lists for this revision, each with its source (the
RTX 4090, whose driver refuses peer access).

Revision ID: 0015
Revises: 0014

"""
import json
from pathlib import Path
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = '0015'
down_revision: Union[str, Sequence[str], None] = '0014'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

DATA = Path(__file__).resolve().parents[2] / "service" / "catalogue" / "data"
UPDATES = DATA / "gpu_updates.json"


def upgrade() -> None:
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('pcie_peer_to_peer', sa.Boolean(), server_default=sa.true(), nullable=False)
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
        batch_op.drop_column('pcie_peer_to_peer')
