"""The review workflow's rules, without a database."""

import pytest

from service.plans import workflow
from service.plans.workflow import (
    IllegalTransition,
    NotPermitted,
    PreconditionFailed,
    PreconditionRequired,
)

# The rules as the workflow's docstring and the issue state them, written out here (not read
# from the module): allowing e.g. an edit of a submitted plan must fail these tests.
EVERY_STATE = ("draft", "submitted", "approved", "rejected", "changes_requested")
LEGAL = {
    ("edit", "draft"): "draft",
    ("edit", "changes_requested"): "draft",
    ("submit", "draft"): "submitted",
    ("review", "submitted"): "approved",  # the review below approves
}


def test_the_states_are_the_five_of_the_workflow() -> None:
    assert set(workflow.STATUSES) == set(EVERY_STATE)


def test_the_happy_paths() -> None:
    assert workflow.after_edit("draft") == "draft"
    assert workflow.after_edit("changes_requested") == "draft"
    assert workflow.after_submit("draft") == "submitted"
    assert workflow.after_review("submitted", "approve") == "approved"
    assert workflow.after_review("submitted", "reject") == "rejected"
    assert workflow.after_review("submitted", "request_changes") == "changes_requested"


@pytest.mark.parametrize("state", EVERY_STATE)
def test_every_other_transition_is_illegal_and_names_the_state(state: str) -> None:
    moves = {
        "edit": lambda: workflow.after_edit(state),
        "submit": lambda: workflow.after_submit(state),
        "review": lambda: workflow.after_review(state, "approve"),
    }
    for action, move in moves.items():
        if (action, state) in LEGAL:
            assert move() == LEGAL[action, state]
            continue
        with pytest.raises(IllegalTransition) as refused:
            move()
        assert refused.value.current == state
        assert f"cannot {action} a plan that is {state}" in refused.value.message


@pytest.mark.parametrize("state", ["approved", "rejected"])
def test_final_states_accept_nothing(state: str) -> None:
    for move in (workflow.after_edit, workflow.after_submit):
        with pytest.raises(IllegalTransition, match="final"):
            move(state)
    with pytest.raises(IllegalTransition, match="final"):
        workflow.after_review(state, "approve")


def test_the_author_never_reviews_and_only_the_author_edits() -> None:
    with pytest.raises(NotPermitted) as refused:
        workflow.check_reviewer(author="ann", reviewer="ann")
    assert refused.value.type_ == "urn:gpu-planner:self-review"
    workflow.check_reviewer(author="ann", reviewer="ben")
    with pytest.raises(NotPermitted, match="only the author"):
        workflow.check_author("edit", author="ann", actor="ben")
    workflow.check_author("submit", author="ann", actor="ann")


@pytest.mark.parametrize(
    ("header", "versions"),
    [
        (None, None),
        ("", None),
        ("  ", None),
        ('"3"', {3}),
        ('"3", "4"', {3, 4}),
        ('W/"3"', set()),  # If-Match compares strongly
        ("*", set()),  # would skip the check it exists for
        ("3", set()),
        ('"three"', set()),
        ('"' + "9" * 19 + '"', set()),  # no version gets that far; no huge ints either
        ('"\u00b2"', set()),  # "²" passes isdigit() but int() raises (a ValueError before)
    ],
)
def test_if_match_parsing(header: str | None, versions: set[int] | None) -> None:
    assert workflow.if_match_versions(header) == versions


def test_check_version() -> None:
    assert workflow.check_version('"2"', 2) == 2
    with pytest.raises(PreconditionRequired):
        workflow.check_version(None, 2)
    with pytest.raises(PreconditionFailed) as stale:
        workflow.check_version('"1"', 2)
    assert stale.value.current_version == 2
    assert workflow.etag(2) == '"2"'
