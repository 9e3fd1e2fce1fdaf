"""Request bodies and parameters of /plans. Unknown body fields are refused (400, named)."""

from typing import Annotated

import msgspec
from msgspec import Meta

from service.plans.tables import NAME_LENGTH
from service.plans.workflow import Decision
from service.schemas.plan import PlanRequest

NOTES_LENGTH = 20_000
COMMENT_LENGTH = 20_000
# No NUL: PostgreSQL text cannot hold it. A name must show something.
PlanName = Annotated[
    str, Meta(min_length=1, max_length=NAME_LENGTH, pattern=r"^[^\x00]*[^\x00\s][^\x00]*$")
]
Notes = Annotated[str, Meta(max_length=NOTES_LENGTH, pattern=r"^[^\x00]*$")]
Comment = Annotated[str, Meta(max_length=COMMENT_LENGTH, pattern=r"^[^\x00]*$")]
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]+$"
"""Visible ASCII, as a header value: a UUID is the usual choice."""


class CreatePlanBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: PlanName
    notes: Notes = ""
    request: PlanRequest
    """The same body as POST /plan."""


class EditPlanBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Only what is given changes; a new ``request`` replaces the old one whole. Every edit
    recomputes the answer (and the catalogue snapshot) against today's catalogue."""

    name: PlanName | None = None
    notes: Notes | None = None
    request: PlanRequest | None = None


class ReviewBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    decision: Decision
    comment: Comment = ""
    """Required (not blank) to reject or request changes."""
