"""The review workflow as pure rules: states, transitions, who may act, and version checks.

    draft --submit--> submitted --review--> approved | rejected | changes_requested
      ^                                                          |
      +------------------------- edit --------------------------+

Approved and rejected plans are final (immutable). An edit of a draft keeps it a draft; an edit
of a plan with changes requested puts it back to draft. Only the author edits or submits; the
author never reviews. No I/O here: the store applies what these functions decide.
"""

from typing import Literal

Status = Literal["draft", "submitted", "approved", "rejected", "changes_requested"]
Decision = Literal["approve", "reject", "request_changes"]
EventKind = Literal["created", "edited", "submitted", "reviewed"]
Action = Literal["edit", "submit", "review"]

STATUSES: tuple[Status, ...] = ("draft", "submitted", "approved", "rejected", "changes_requested")
FINAL: frozenset[Status] = frozenset({"approved", "rejected"})

ALLOWED_FROM: dict[Action, tuple[Status, ...]] = {
    "edit": ("draft", "changes_requested"),
    "submit": ("draft",),
    "review": ("submitted",),
}

DECIDES: dict[Decision, Status] = {
    "approve": "approved",
    "reject": "rejected",
    "request_changes": "changes_requested",
}

NEEDS_COMMENT: frozenset[Decision] = frozenset({"reject", "request_changes"})
"""A refusal must say why, or the author cannot act on it; an approval may be silent."""


class IllegalTransition(Exception):
    """``action`` is not possible from ``current`` (409, naming the current state)."""

    def __init__(self, action: Action, current: str) -> None:
        allowed = " or ".join(ALLOWED_FROM[action])
        final = " (final: approved and rejected plans never change)" if current in FINAL else ""
        message = f"cannot {action} a plan that is {current}{final}; {action} needs {allowed}"
        super().__init__(message)
        self.current = current
        self.message = message


class NotPermitted(Exception):
    """The caller's role suffices but this plan is not theirs to act on (403)."""

    def __init__(self, message: str, *, type_: str = "urn:gpu-planner:not-permitted") -> None:
        super().__init__(message)
        self.message = message
        self.type_ = type_


class PreconditionRequired(Exception):
    """A write on an existing plan came without If-Match (428)."""

    def __init__(self) -> None:
        message = (
            "If-Match is required: send the ETag of the version you read "
            '(GET /plans/{id} answers it, e.g. ETag: "3")'
        )
        super().__init__(message)
        self.message = message


class PreconditionFailed(Exception):
    """If-Match names a version that is no longer current (412): someone changed it first."""

    def __init__(self, current_version: int) -> None:
        message = (
            f"the plan changed since you read it: it is now version {current_version}; "
            "GET it again, check, and retry with the new ETag"
        )
        super().__init__(message)
        self.message = message
        self.current_version = current_version


def etag(version: int) -> str:
    """A strong entity tag for ``version``: the quoted number."""
    return f'"{version}"'


def if_match_versions(header: str | None) -> set[int] | None:
    """The versions an If-Match header names: None when absent or blank (428).

    ``*`` names none: it would skip the very check If-Match is here for. A malformed tag names no
    version, so it fails as stale (412) rather than passing.
    """
    if header is None or not header.strip():
        return None
    versions = set()
    for raw in header.split(","):
        tag = raw.strip()
        if tag.startswith("W/"):
            continue  # If-Match compares strongly: a weak tag never matches (RFC 9110 13.1.1)
        value = tag[1:-1] if len(tag) >= 2 and tag[0] == tag[-1] == '"' else ""
        # ASCII digits only: "²" and other Unicode digits pass isdigit() but not int().
        if value.isascii() and value.isdigit() and len(value) <= 18:
            versions.add(int(value))
    return versions


def check_version(header: str | None, current_version: int) -> int:
    """The version the caller read, when it is the current one; else 428 or 412."""
    versions = if_match_versions(header)
    if versions is None:
        raise PreconditionRequired
    if current_version not in versions:
        raise PreconditionFailed(current_version)
    return current_version


def check_transition(action: Action, current: str) -> None:
    if current not in ALLOWED_FROM[action]:
        raise IllegalTransition(action, current)


def after_edit(current: str) -> Status:
    check_transition("edit", current)
    return "draft"


def after_submit(current: str) -> Status:
    check_transition("submit", current)
    return "submitted"


def after_review(current: str, decision: Decision) -> Status:
    check_transition("review", current)
    return DECIDES[decision]


def check_author(action: Action, author: str, actor: str) -> None:
    """Only the author edits or submits a plan."""
    if actor != author:
        raise NotPermitted(f"only the author ({author}) may {action} this plan; you are {actor}")


def check_reviewer(author: str, reviewer: str) -> None:
    """Four eyes: whoever wrote a plan never approves it, whatever their role."""
    if reviewer == author:
        raise NotPermitted(
            f"{reviewer} is the author of this plan and cannot review it: "
            "another reviewer must decide",
            type_="urn:gpu-planner:self-review",
        )
