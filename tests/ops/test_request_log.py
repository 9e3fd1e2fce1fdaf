"""The request's JSON line, written directly when configure_logging's handler is the only one."""

import datetime
import io
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from litestar.testing import AsyncTestClient

from service.logs import _only_handler, _utc_now_iso, configure_logging

Client = AsyncTestClient  # type: ignore[type-arg]


@contextmanager
def alone() -> Iterator[io.StringIO]:
    """configure_logging's handler alone on the root logger (pytest adds its own for each test
    call: taken off here, put back after), writing to a buffer."""
    root = logging.getLogger()
    level = root.level
    kept = list(root.handlers)
    configure_logging("INFO")
    ours = [h for h in root.handlers if getattr(h, "planner_json", False)]
    for handler in list(root.handlers):
        if handler not in ours:
            root.removeHandler(handler)
    buffer = io.StringIO()
    ours[0].stream = buffer  # type: ignore[attr-defined]
    try:
        yield buffer
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in kept:
            root.addHandler(handler)
        root.setLevel(level)


async def test_the_line_written_directly_is_the_request_s_json(client: Client) -> None:
    with alone() as buffer:
        assert _only_handler(logging.INFO) is not None  # the direct path is the one taken
        answer = await client.get("/gpus/h100", headers={"X-Request-ID": "direct-1"})
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    mine = [line for line in lines if line.get("request_id") == "direct-1"]
    assert len(mine) == 1
    assert list(mine[0]) == [
        *("request_id", "method", "path", "route", "status", "duration_ms", "client"),
        *("principal", "event", "logger", "level", "ts"),
    ]
    assert (mine[0]["route"], mine[0]["status"], mine[0]["event"]) == (
        "/gpus/{slug}",
        answer.status_code,
        "request",
    )
    assert mine[0]["level"] == "info" and mine[0]["ts"].endswith("Z")


def test_another_handler_on_the_way_takes_the_record_path() -> None:
    assert _only_handler(logging.INFO) is None  # pytest's own handlers are on the root
    with alone():
        extra = logging.NullHandler()
        logging.getLogger("service.request").addHandler(extra)
        try:
            assert _only_handler(logging.INFO) is None
        finally:
            logging.getLogger("service.request").removeHandler(extra)
        assert _only_handler(logging.INFO) is not None
        logging.getLogger().handlers[0].setLevel("WARNING")
        assert _only_handler(logging.INFO) is None  # a handler above INFO would drop it


def test_the_request_line_s_time_is_written_as_datetime_isoformat_writes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stamp is formatted once per second: the same text as
    ``datetime.now(UTC).isoformat()`` with "Z", microseconds floored and left out when zero,
    across a second's boundary too."""
    stamps = [
        1_764_662_400_123_456_789,  # 2025-12-02T08:00:00 UTC and 123456.789 us: floored
        1_764_662_400_999_999_999,  # the same second, its last microsecond
        1_764_662_401_000_000_999,  # the next second, 0.999 us past it: no fraction at all
        1_764_662_401_000_001_000,  # one microsecond: six digits, zero-padded
    ]
    expected = [
        "2025-12-02T08:00:00.123456Z",
        "2025-12-02T08:00:00.999999Z",
        "2025-12-02T08:00:01Z",
        "2025-12-02T08:00:01.000001Z",
    ]
    for ns, text in zip(stamps, expected, strict=True):
        monkeypatch.setattr(time, "time_ns", lambda ns=ns: ns)
        assert _utc_now_iso() == text
        at = datetime.datetime.fromtimestamp(ns // 1000 / 1e6, tz=datetime.UTC)
        assert at.isoformat().replace("+00:00", "Z") == text
