"""Request ids, one JSON log line per request, and the Prometheus metrics."""

import json
import logging
import re
import uuid

import pytest
from litestar.testing import AsyncTestClient
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from service.observability import (
    LATENCY_BUCKETS,
    RequestMetrics,
    configure_logging,
    new_request_id,
)
from tests.conftest import new_key
from tests.ops.support import PLAN_70B, metric

Client = AsyncTestClient  # type: ignore[type-arg]
HEX32 = re.compile(r"[0-9a-f]{32}")


async def test_a_sane_incoming_request_id_is_kept_and_returned(client: Client) -> None:
    answer = await client.get("/healthz", headers={"X-Request-ID": "edge-7f3a.01:b"})
    assert answer.headers["x-request-id"] == "edge-7f3a.01:b"


@pytest.mark.parametrize("incoming", ["has spaces", "x" * 129, "semi;colon", ""])
async def test_an_insane_request_id_is_replaced_by_a_fresh_one(
    client: Client, incoming: str
) -> None:
    first = await client.get("/healthz", headers={"X-Request-ID": incoming})
    second = await client.get("/healthz", headers={"X-Request-ID": incoming})
    assert HEX32.fullmatch(first.headers["x-request-id"])
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def test_a_new_request_id_is_a_version_4_uuid_in_hex() -> None:
    ids = [new_request_id() for _ in range(200)]
    assert len(set(ids)) == 200
    for request_id in ids:
        assert HEX32.fullmatch(request_id)
        parsed = uuid.UUID(hex=request_id)
        # RFC 4122: version 4 in the 13th digit, the variant's bits 10 at the 17th.
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert request_id[12] == "4" and request_id[16] in "89ab"


async def test_every_problem_carries_the_request_id(client: Client) -> None:
    unknown_slug = await client.get("/gpus/h1000", headers={"X-Request-ID": "r-404"})
    assert (unknown_slug.status_code, unknown_slug.json()["request_id"]) == (404, "r-404")
    no_route = await client.get("/nowhere")
    assert no_route.json()["request_id"] == no_route.headers["x-request-id"]
    bad_body = await client.post("/plan", json={**PLAN_70B, "concurrency": "many"})
    assert bad_body.status_code == 400
    assert bad_body.json()["request_id"] == bad_body.headers["x-request-id"]
    assert bad_body.json()["errors"][0]["field"] == "concurrency"
    too_big = await client.post(
        "/plan",
        content=b"{" + b" " * (2**20 + 1) + b"}",
        headers={"content-type": "application/json"},
    )
    assert too_big.status_code == 413
    assert too_big.json()["request_id"] == too_big.headers["x-request-id"]
    unauthorised = await client.post("/plans", json={"name": "x", "request": PLAN_70B})
    assert unauthorised.status_code == 401
    assert unauthorised.json()["request_id"] == unauthorised.headers["x-request-id"]


async def test_one_json_log_line_per_request(
    client: Client, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.INFO, logger="service.request"):
        answer = await client.get("/gpus/h100", headers={"X-Request-ID": "log-me"})
    lines = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    mine = [line for line in lines if line.get("request_id") == "log-me"]
    assert len(mine) == 1
    line = mine[0]
    assert line["event"] == "request"
    assert (line["method"], line["path"], line["route"], line["status"]) == (
        "GET",
        "/gpus/h100",
        "/gpus/{slug}",
        answer.status_code,
    )
    assert line["duration_ms"] > 0

    # The same record rendered by the root handler is one JSON object per line.
    configure_logging("INFO")
    capsys.readouterr()
    logging.getLogger("service.request").info("probe %s", 1, extra={"request_id": "x"})
    printed = capsys.readouterr().out.strip().splitlines()
    assert json.loads(printed[-1])["event"] == "probe 1"


async def test_metrics_count_requests_plans_reviews_and_outcomes(
    client: Client, database_url: str
) -> None:
    alice = {"Authorization": f"Bearer {await new_key(database_url, 'planner', 'alice')}"}
    bob = {"Authorization": f"Bearer {await new_key(database_url, 'reviewer', 'bob')}"}

    computed = await client.post("/plan", json=PLAN_70B)
    assert computed.json()["status"] == "tight"
    # One server of 8 RTX 4090s holds 8 x 17.6 GB < 141.1 GB of weights (16 would fit).
    one_server = {**PLAN_70B, "gpu": "rtx-4090", "splits": [1, 2, 4, 8]}
    assert (await client.post("/plan", json=one_server)).json()["status"] == ("does_not_fit")
    body = {"name": "metrics", "request": PLAN_70B}
    created = await client.post("/plans", json=body, headers={**alice, "Idempotency-Key": "m1"})
    replayed = await client.post("/plans", json=body, headers={**alice, "Idempotency-Key": "m1"})
    assert (created.status_code, replayed.status_code) == (201, 200)
    plan_id = created.json()["id"]
    submitted = await client.post(f"/plans/{plan_id}/submit", headers={**alice, "If-Match": '"1"'})
    assert submitted.status_code == 200
    reviewed = await client.post(
        f"/plans/{plan_id}/reviews",
        json={"decision": "approve", "comment": "ok"},
        headers={**bob, "If-Match": '"2"'},
    )
    assert reviewed.json()["status"] == "approved"
    await client.get(f"/plans/{plan_id}", headers=bob)
    await client.get(f"/plans/{plan_id + 1000}", headers=bob)

    text = (await client.get("/metrics")).text
    assert (
        metric(text, "planner_http_requests_total", method="POST", route="/plan", status="200") == 2
    )
    assert metric(text, "planner_http_request_duration_seconds_count", route="/plan") == 2
    assert metric(text, "planner_http_request_duration_seconds_sum", route="/plan") > 0
    # Route templates, never raw ids: both plan reads land in one series per status.
    assert metric(text, "planner_http_requests_total", route="/plans/{plan_id}", status="200") == 1
    assert metric(text, "planner_http_requests_total", route="/plans/{plan_id}", status="404") == 1
    assert f'/plans/{plan_id}"' not in text
    assert metric(text, "planner_plans_created_total") == 1  # the replay made no plan
    assert metric(text, "planner_plans_reviewed_total", result="approved") == 1
    assert metric(text, "planner_plan_outcomes_total", source="compute", status="tight") == 1
    assert metric(text, "planner_plan_outcomes_total", source="compute", status="does_not_fit") == 1
    assert metric(text, "planner_plan_outcomes_total", source="saved", status="tight") == 1
    assert metric(text, "planner_database_errors_total", where="request") == 0


def test_the_request_series_expose_what_prometheus_client_s_own_metrics_expose() -> None:
    """RequestMetrics counts in plain numbers; its exposition is the one a Counter and a
    Histogram with the same names, labels and buckets write for the same answers (the oracle:
    prometheus_client itself), bucket edges included (0.001 lands in le="0.001", as the
    library's bisect_left puts it)."""
    observed = [
        (("GET", "/healthz", 200), 0.0004),
        (("POST", "/plan", 200), 0.001),  # on an edge: counted in le="0.001"
        (("POST", "/plan", 200), 0.0123),
        (("GET", "/gpus/{slug}", 404), 0.3),
        (("POST", "/plan", 200), 42.0),  # past the last bucket: +Inf only
        (("GET", "/healthz", 200), 0.0025),
    ]
    ours = CollectorRegistry()
    requests = RequestMetrics(LATENCY_BUCKETS)
    ours.register(requests)
    theirs = CollectorRegistry()
    counter = Counter(
        "planner_http_requests",
        "HTTP requests answered, by method, route template and status",
        ["method", "route", "status"],
        registry=theirs,
    )
    histogram = Histogram(
        "planner_http_request_duration_seconds",
        "Time from the request's arrival to the end of its answer",
        ["method", "route", "status"],
        buckets=LATENCY_BUCKETS,
        registry=theirs,
    )
    for labels, seconds in observed:
        requests.observe(requests.series_of(*labels), seconds)
        method, route, status = labels
        counter.labels(method, route, str(status)).inc()
        histogram.labels(method, route, str(status)).observe(seconds)
    assert generate_latest(ours) == generate_latest(theirs)
    text = generate_latest(ours).decode()
    # By hand: /plan's three answers, 0.001 s in the first bucket, 42 s in +Inf only.
    assert 'planner_http_request_duration_seconds_bucket{le="0.001",method="POST"' in text
    assert metric(text, "planner_http_request_duration_seconds_count", route="/plan") == 3
    assert metric(text, "planner_http_requests_total", route="/healthz") == 2
