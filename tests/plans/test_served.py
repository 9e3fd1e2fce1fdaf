"""POST /plan's lookups on the serving snapshot: remembered by the names given, errors never."""

import msgspec
import pytest

import service.plans.served as served
from service.catalogue.errors import NotFound
from service.catalogue.memory import Snapshot
from service.offline import local_catalogue
from service.plans.served import specs_from
from service.schemas.plan import PlanRequest


def _request(**fields: object) -> PlanRequest:
    return msgspec.convert({"concurrency": 40, **fields}, PlanRequest)


def _fresh_snapshot() -> Snapshot:
    """The shipped catalogue's snapshot with nothing remembered yet."""
    snapshot = local_catalogue().snapshot
    snapshot.resolved.clear()
    return snapshot


def test_a_named_lookup_is_remembered_and_answers_the_same_specs() -> None:
    snapshot = _fresh_snapshot()
    data = _request(model="llama-3.1-70b", gpu="H100 SXM")
    first = specs_from(snapshot, data)
    assert list(snapshot.resolved) == [("llama-3.1-70b", "H100 SXM", None, None)]
    second = specs_from(snapshot, data)
    assert second[0] is first[0] and second[1][0] is first[1][0]  # the same specs, not copies
    assert second[1] is not first[1] and second[4] is not first[4]  # each caller's own lists
    # What the snapshot resolves without the memo: the same model, GPU and formats.
    assert first[0] is snapshot.model_spec("llama-3.1-70b")
    assert first[1] == [snapshot.gpu_spec("h100-sxm")]
    assert (first[2].slug, first[3].slug) == ("bf16", "bf16")


def test_a_name_that_does_not_resolve_is_not_remembered_and_fails_again() -> None:
    snapshot = _fresh_snapshot()
    data = _request(model="llama-3.1-70b", gpu="h1000")
    for _ in range(2):
        with pytest.raises(NotFound) as raised:
            specs_from(snapshot, data)
        assert (raised.value.field, raised.value.slug) == ("gpu", "h1000")
    assert snapshot.resolved == {}


def test_an_inline_model_is_not_remembered() -> None:
    snapshot = _fresh_snapshot()
    spec = msgspec.to_builtins(snapshot.model_spec("llama-3.1-8b"))
    specs_from(snapshot, _request(model_spec=spec, gpu="h100-sxm"))
    assert snapshot.resolved == {}


def test_no_more_than_the_bound_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _fresh_snapshot()
    monkeypatch.setattr(served, "MAX_RESOLVED", 2)
    for spelling in ("h100-sxm", "H100-SXM", "h100 sxm", "H100 SXM"):
        _, gpus, *_ = specs_from(snapshot, _request(model="llama-3.1-70b", gpu=spelling))
        assert gpus[0].slug == "h100-sxm"  # past the bound: still resolved, just not kept
    assert len(snapshot.resolved) == 2
