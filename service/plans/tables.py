"""ORM tables of the saved plans: the plan, its audit trail, and the idempotency keys.

The migration migrations/versions/0003_plans.py is the schema of record; keep the two in step.
The request, answer and catalogue snapshot are stored as JSON (plain ``json`` on PostgreSQL, not
``jsonb``: jsonb reorders keys, and a reviewed plan should read back the way it was written).
"""

import datetime

from advanced_alchemy.base import IdentityAuditBase
from advanced_alchemy.types import DateTimeUTC
from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from service.catalogue.tables import SLUG_LENGTH

PRINCIPAL_LENGTH = 200
"""As api_keys.principal: authors and actors are principals."""
NAME_LENGTH = 200
IDEMPOTENCY_KEY_LENGTH = 200


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class PlanRow(IdentityAuditBase):
    __tablename__ = "plans"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    notes: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(24), index=True)
    author: Mapped[str] = mapped_column(String(PRINCIPAL_LENGTH), index=True)
    version: Mapped[int] = mapped_column(Integer)
    """Starts at 1, +1 on every change; the ETag. Writes check it in the UPDATE's WHERE."""
    workload: Mapped[str] = mapped_column(String(16))
    model_slug: Mapped[str] = mapped_column(String(SLUG_LENGTH), index=True)
    """The catalogue slug the request resolved to (or the inline model_spec's own slug)."""
    gpu_slug: Mapped[str] = mapped_column(String(SLUG_LENGTH), index=True)
    """The GPU of the answer (the best-ranked one when the request named none)."""
    request: Mapped[dict[str, object]] = mapped_column(JSON)
    answer: Mapped[dict[str, object]] = mapped_column(JSON)
    catalogue: Mapped[dict[str, object]] = mapped_column(JSON)
    """The catalogue rows the answer was computed from, as they were then."""


class PlanEventRow(IdentityAuditBase):
    __tablename__ = "plan_events"

    plan_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"),
        ForeignKey("plans.id", ondelete="CASCADE"),
        index=True,
    )
    kind: Mapped[str] = mapped_column(String(16))
    """created | edited | submitted | reviewed"""
    actor: Mapped[str] = mapped_column(String(PRINCIPAL_LENGTH))
    decision: Mapped[str | None] = mapped_column(String(24), nullable=True)
    comment: Mapped[str] = mapped_column(Text, default="")
    from_status: Mapped[str | None] = mapped_column(String(24), nullable=True)
    to_status: Mapped[str] = mapped_column(String(24))
    version: Mapped[int] = mapped_column(Integer)
    """The plan's version after this event."""
    at: Mapped[datetime.datetime] = mapped_column(DateTimeUTC(timezone=True), default=utc_now)


class IdempotencyKeyRow(IdentityAuditBase):
    __tablename__ = "plan_idempotency_keys"
    __table_args__ = (
        UniqueConstraint("author", "key", name="uq_plan_idempotency_keys_author_key"),
    )

    author: Mapped[str] = mapped_column(String(PRINCIPAL_LENGTH))
    key: Mapped[str] = mapped_column(String(IDEMPOTENCY_KEY_LENGTH))
    request_sha256: Mapped[str] = mapped_column(String(64))
    """Of the canonical body: a retry must carry the same body."""
    plan_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"),
        ForeignKey("plans.id", ondelete="CASCADE"),
        nullable=True,
    )
    """Set in the same transaction that inserts the key; NULL is never visible to others."""
