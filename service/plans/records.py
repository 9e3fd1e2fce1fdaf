"""What the saved-plan operations answer: msgspec Structs, shared by the API and its renderers."""

import datetime
from typing import Any

import msgspec

from service.plans.workflow import Decision, EventKind, Status
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.spare import Status as FitStatus


class SavedPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A saved plan: the request, the answer computed then, and the catalogue rows it used."""

    id: int
    name: str
    notes: str
    status: Status
    """Where the plan is in the review workflow (the answer's own ``status`` says how it fits)."""
    author: str
    version: int
    """Its ETag: send it back in If-Match to change the plan."""
    workload: str
    model: str
    gpu: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    request: PlanRequest
    answer: PlanAnswer | TrainingAnswer
    catalogue: dict[str, Any]
    """The catalogue rows the answer used, as they were then (model or model_spec, gpus,
    interconnects, weight_format, kv_format): later catalogue edits never change it."""


class PlanSummary(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str
    status: Status
    author: str
    version: int
    workload: str
    model: str
    gpu: str
    weight_format: str
    fits: bool
    fit_status: FitStatus
    gpu_count: int
    spare_bytes: int
    spare_fraction: float
    created_at: datetime.datetime
    updated_at: datetime.datetime


class PlanPage(msgspec.Struct, frozen=True, kw_only=True):
    items: list[PlanSummary]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; null on the last page. Newest first."""


class PlanEvent(msgspec.Struct, frozen=True, kw_only=True):
    kind: EventKind
    actor: str
    at: datetime.datetime
    version: int
    """The plan's version after this event."""
    from_status: Status | None
    to_status: Status
    decision: Decision | None = None
    comment: str = ""


class PlanHistory(msgspec.Struct, frozen=True, kw_only=True):
    plan_id: int
    status: Status
    version: int
    events: list[PlanEvent]
    """Oldest first."""


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    fits: bool
    status: FitStatus
    gpu: str
    gpu_count: int
    spare_bytes: int
    spare_fraction: float


class Change(msgspec.Struct, frozen=True, kw_only=True):
    field: str
    before: Any
    after: Any


class CatalogueChange(msgspec.Struct, frozen=True, kw_only=True):
    row: str
    """``<table>/<slug>``, e.g. ``gpus/h100-sxm``."""
    field: str
    """A column, or ``(row)`` when the whole row was added or removed."""
    before: Any
    after: Any


class Recheck(msgspec.Struct, frozen=True, kw_only=True):
    """The stored answer against one computed now from today's catalogue; nothing is saved."""

    plan_id: int
    version: int
    changed: bool
    before: Outcome
    after: Outcome | None
    """Null when today's catalogue can no longer evaluate the request (see ``problem``)."""
    changes: list[Change]
    catalogue_changes: list[CatalogueChange]
    problem: str | None = None
    checked_at: datetime.datetime
