"""The catalogue cache: two replicas on one database, and how often a replica checks."""

import asyncio
import time

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.catalogue.cache import CatalogueCache
from service.db import create_engine
from service.settings import Settings
from tests.ops.support import PLAN_70B

REFRESH_S = 0.5
H200_SIZED = 141_000_000_000


async def test_an_edit_on_one_replica_is_served_by_the_other_within_the_refresh_interval(
    database_url: str, admin_headers: dict[str, str]
) -> None:
    settings = Settings(
        database_url=database_url, catalogue_refresh_s=REFRESH_S, rate_limit_per_minute=0
    )
    replica_a, replica_b = create_app(settings), create_app(settings)
    async with AsyncTestClient(app=replica_a) as a, AsyncTestClient(app=replica_b) as b:
        before = (await b.post("/plan", json=PLAN_70B)).json()
        assert (before["gpu_count"], before["per_gpu"]["capacity_bytes"]) == (4, 80_000_000_000)
        assert (await a.post("/plan", json=PLAN_70B)).json() == before

        gpu = (await a.get("/gpus/h100-sxm")).json()
        gpu["memory_bytes"] = H200_SIZED
        edited = await a.put("/gpus/h100-sxm", json=gpu, headers=admin_headers)
        assert edited.status_code == 200, edited.text
        edited_at = time.monotonic()

        # The writer reads its own write at once (its cache is expired by the write).
        mine = (await a.post("/plan", json=PLAN_70B)).json()
        assert mine["per_gpu"]["capacity_bytes"] == H200_SIZED
        # 141 GB x 0.9 - 4 GB = 122.9 GB per GPU; still 4 GPUs (2 hold 245.8 GB < 248 GB)
        assert (mine["gpu_count"], mine["budget_bytes"]) == (4, 491_600_000_000)

        # The other replica: within REFRESH_S (plus the request that starts the check).
        while True:
            theirs = (await b.post("/plan", json=PLAN_70B)).json()
            if theirs["per_gpu"]["capacity_bytes"] == H200_SIZED:
                break
            assert time.monotonic() - edited_at < REFRESH_S + 5, "replica B never saw the edit"
            await asyncio.sleep(0.05)
        seen_after = time.monotonic() - edited_at
        assert theirs == mine
        cache_b: CatalogueCache = replica_b.state.cache
        # At most one fingerprint check per interval: the ~dozens of polls above did not each
        # hit the database, and the snapshot was loaded twice (startup, after the edit).
        assert cache_b.checks <= 2 + seen_after / REFRESH_S + 1
        assert cache_b.loads == 2

        gpu["memory_bytes"] = 80_000_000_000  # leave the module's database as it was
        assert (await a.put("/gpus/h100-sxm", json=gpu, headers=admin_headers)).status_code == 200


async def test_checks_at_most_once_per_interval_and_reloads_only_on_change(
    database_url: str,
) -> None:
    now = [1000.0]
    engine = create_engine(database_url)
    cache = CatalogueCache(engine, refresh_s=5.0, clock=lambda: now[0])
    try:
        first = await cache.current()  # nothing yet: this request waits for the load
        assert (cache.checks, cache.loads) == (1, 1)
        assert len(first.all_gpu_specs()) >= 11
        assert first.gpu_spec("h100").slug == "h100-sxm"  # aliases resolve like the database

        for _ in range(50):
            assert await cache.current() is first
        now[0] += 4.9
        assert await cache.current() is first
        assert cache.checks == 1  # 51 reads, no check before the interval is up

        now[0] += 0.2
        assert await cache.current() is first  # due: checked in the background
        await cache.settled()
        assert (cache.checks, cache.loads) == (2, 1)  # same fingerprint: nothing reloaded
        assert await cache.current() is first

        cache.expire()  # a write on this replica: the next read waits for a check
        assert await cache.current() is first
        assert (cache.checks, cache.loads) == (3, 1)
    finally:
        await cache.close()
        await engine.dispose()


async def test_unknown_and_ambiguous_names_in_the_snapshot_are_problems_like_the_database(
    client: AsyncTestClient,  # type: ignore[type-arg]
) -> None:
    unknown = await client.post("/plan", json={**PLAN_70B, "gpu": "h1000"})
    assert unknown.status_code == 404
    assert unknown.json()["errors"][0]["field"] == "gpu"
    assert unknown.json()["suggestions"][0] == "h100-sxm"
    ambiguous = await client.post("/plan", json={**PLAN_70B, "gpu": "a100"})
    assert ambiguous.status_code == 404
    assert ambiguous.json()["suggestions"] == ["a100-40gb", "a100-80gb"]


@pytest.mark.parametrize("field", ["model", "weight_format"])
async def test_unknown_model_or_format_names_the_field(
    client: AsyncTestClient,  # type: ignore[type-arg]
    field: str,
) -> None:
    answer = await client.post("/plan", json={**PLAN_70B, field: "nope-9000"})
    assert answer.status_code == 404
    assert answer.json()["errors"][0]["field"] == field
