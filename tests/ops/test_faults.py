"""The database goes away and comes back, under a running app, on a real PostgreSQL.

The shared PostgreSQL server is never stopped: a loopback TCP proxy (tests/ops/proxy.py) sits
between the app and the server and is cut (listener closed, every connection aborted) and
restored. Runs when TEST_DATABASE_URL is set (CI sets it); skipped otherwise.
"""

import asyncio
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import create_engine, make_url, text

from service.app import create_app
from service.db import migrate, settle_abandoned
from service.settings import Settings, sync_url
from tests.conftest import fresh_postgresql, new_key
from tests.ops.proxy import TcpProxy
from tests.ops.support import PLAN_70B, metric

URL = os.environ.get("TEST_DATABASE_URL", "")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not URL,
        reason="needs a real PostgreSQL: set TEST_DATABASE_URL (CI does). The shared server is "
        "never stopped; the test cuts a proxy in front of it. No throwaway server here "
        "(initdb refuses to run as root).",
    ),
]
RETRY_AFTER = 7


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[str, TcpProxy]]:
    """A freshly migrated test database, and its URL through a proxy we can cut."""
    migrate(fresh_postgresql(URL))
    url = make_url(URL)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    try:
        yield url.set(port=proxy.port).render_as_string(hide_password=False), proxy
    finally:
        proxy.stop()


def plans_in_database() -> list[tuple[int, str]]:
    engine = create_engine(sync_url(URL))
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, name FROM plans ORDER BY id")).all()
    engine.dispose()
    return [(row[0], row[1]) for row in rows]


async def test_database_outage_503s_writes_keeps_computing_and_recovers_without_loss(
    proxied: tuple[str, TcpProxy],
) -> None:
    app_url, proxy = proxied
    app = create_app(
        Settings(
            database_url=app_url,
            catalogue_refresh_s=0.2,
            db_connect_timeout_s=2,
            db_statement_timeout_s=5,
            db_pool_timeout_s=2,
            retry_after_s=RETRY_AFTER,
            rate_limit_per_minute=0,
        )
    )
    planner = {"Authorization": f"Bearer {await new_key(URL, 'planner', 'alice')}"}
    first = {"name": "before the outage", "request": PLAN_70B}
    second = {"name": "during the outage", "request": {**PLAN_70B, "concurrency": 8}}

    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/readyz")).json()["status"] == "ready"
        computed = (await client.post("/plan", json=PLAN_70B)).json()
        assert (computed["gpu_count"], computed["budget_bytes"]) == (4, 272_000_000_000)
        matrix_before = (await client.post("/matrix", json={"models": ["llama-3.1-8b"]})).json()
        created = await client.post(
            "/plans", json=first, headers={**planner, "Idempotency-Key": "k1"}
        )
        assert created.status_code == 201
        first_id = created.json()["id"]

        proxy.cut()

        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.headers["content-type"].startswith("application/problem+json")
        assert ready.headers["retry-after"] == str(RETRY_AFTER)
        assert ready.json()["request_id"] == ready.headers["x-request-id"]
        assert "database does not answer" in ready.json()["detail"]

        write = await client.post(
            "/plans", json=second, headers={**planner, "Idempotency-Key": "k2"}
        )
        assert write.status_code == 503, write.text
        assert write.headers["content-type"].startswith("application/problem+json")
        assert write.headers["retry-after"] == str(RETRY_AFTER)
        problem = write.json()
        assert problem["type"] == "urn:gpu-planner:database-unavailable"
        assert problem["request_id"] == write.headers["x-request-id"]
        assert (await client.get("/plans", headers=planner)).status_code == 503
        for path in ("/gpus", "/models", "/formats", "/interconnects"):
            listed = await client.get(path)  # a lost connection, not a conflict: retry later
            assert (listed.status_code, listed.headers.get("retry-after")) == (
                503,
                str(RETRY_AFTER),
            ), listed.text

        # The computations answer from the catalogue loaded before the outage, unchanged.
        for _ in range(3):  # across several refresh intervals: the failed checks keep it
            during = await client.post("/plan", json=PLAN_70B)
            assert during.status_code == 200
            assert during.json() == computed
            await asyncio.sleep(0.25)
        matrix = await client.post("/matrix", json={"models": ["llama-3.1-8b"]})
        assert matrix.status_code == 200 and matrix.json() == matrix_before
        offload = await client.post(
            "/offload", json={"model": "llama-3.1-70b", "gpu": "rtx-4090", "weight_format": "bf16"}
        )
        assert offload.status_code == 200 and offload.json()["offloaded_bytes"] > 0

        scraped = (await client.get("/metrics")).text
        assert metric(scraped, "planner_database_errors_total", where="request") >= 2
        assert metric(scraped, "planner_database_errors_total", where="readiness") >= 1
        assert metric(scraped, "planner_database_errors_total", where="catalogue") >= 1

        proxy.restore()

        deadline = time.monotonic() + 20
        while (ready := await client.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, ready.text
            await asyncio.sleep(0.2)
        assert ready.json()["status"] == "ready"

        # The client retries the failed write with the same Idempotency-Key: one plan, once.
        retried = await client.post(
            "/plans", json=second, headers={**planner, "Idempotency-Key": "k2"}
        )
        assert retried.status_code == 201, retried.text
        again = await client.post(
            "/plans", json=second, headers={**planner, "Idempotency-Key": "k2"}
        )
        assert (again.status_code, again.json()["id"]) == (200, retried.json()["id"])
        replay = await client.post(
            "/plans", json=first, headers={**planner, "Idempotency-Key": "k1"}
        )
        assert (replay.status_code, replay.json()["id"]) == (200, first_id)
        saved = retried.json()["answer"]  # 8 users instead of 40: a fifth of the KV cache
        assert (saved["gpu_count"], saved["kv_cache_bytes"] * 5) == (4, computed["kv_cache_bytes"])

    assert plans_in_database() == [
        (first_id, "before the outage"),
        (retried.json()["id"], "during the outage"),
    ]


async def test_a_partition_is_a_503_at_the_deadline_and_leaves_nothing_half_written(
    proxied: tuple[str, TcpProxy],
) -> None:
    """The proxy is frozen: every connection stays open, nothing fails, nothing answers (the
    loopback kernel still acknowledges, so no TCP timer fires either). The deadline (1 s) is
    far below the connect (10 s), statement and pool (60 s) timeouts: only it can answer."""
    app_url, proxy = proxied
    app = create_app(
        Settings(
            database_url=app_url,
            catalogue_refresh_s=0.2,
            db_connect_timeout_s=10,
            db_statement_timeout_s=60,
            db_pool_timeout_s=60,
            db_request_deadline_s=1,
            db_readiness_timeout_s=0.5,
            retry_after_s=RETRY_AFTER,
            rate_limit_per_minute=0,
        )
    )
    planner = {"Authorization": f"Bearer {await new_key(URL, 'planner', 'pat')}"}
    before = plans_in_database()
    frozen_plan = {"name": "during the partition", "request": PLAN_70B}

    def unavailable(response: Any) -> dict[str, Any]:
        assert response.status_code == 503, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.headers["retry-after"] == str(RETRY_AFTER)
        assert response.json()["request_id"] == response.headers["x-request-id"]
        problem: dict[str, Any] = response.json()
        return problem

    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/readyz")).status_code == 200
        assert (await client.get("/gpus")).status_code == 200  # a pooled connection
        computed = (await client.post("/plan", json=PLAN_70B)).json()

        proxy.freeze()
        try:
            # asyncio.wait_for: a hang fails the test instead of stalling it (no timing asserted).
            ready = await asyncio.wait_for(client.get("/readyz"), 30)
            assert unavailable(ready)["detail"] == "database does not answer: TimeoutError"
            for path in ("/gpus", "/models", "/formats", "/interconnects", "/gpus/h100"):
                problem = unavailable(await asyncio.wait_for(client.get(path), 30))
                assert problem["type"] == "urn:gpu-planner:database-unavailable", path
                assert "did not answer within 1 s" in problem["detail"], path
            write = await asyncio.wait_for(
                client.post(
                    "/plans", json=frozen_plan, headers={**planner, "Idempotency-Key": "frozen"}
                ),
                30,
            )
            assert unavailable(write)["type"] == "urn:gpu-planner:database-unavailable"
            # Computations answer from the catalogue snapshot; its refresh is bounded too.
            for _ in range(3):
                during = await asyncio.wait_for(client.post("/plan", json=PLAN_70B), 30)
                assert (during.status_code, during.json()) == (200, computed)
                await asyncio.sleep(0.25)
        finally:
            proxy.thaw()
        await settle_abandoned()

        deadline = time.monotonic() + 20
        while (ready := await client.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, ready.text
            await asyncio.sleep(0.2)
        # The abandoned write committed nothing; its retry with the same key makes one plan.
        assert plans_in_database() == before
        retried = await client.post(
            "/plans", json=frozen_plan, headers={**planner, "Idempotency-Key": "frozen"}
        )
        assert retried.status_code == 201, retried.text
    assert plans_in_database() == [*before, (retried.json()["id"], "during the partition")]
