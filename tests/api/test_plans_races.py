"""Real concurrent requests against a running server (uvicorn on a free loopback port, in a
thread): racing reviewers get exactly one winner, racing retries create exactly one plan.

On SQLite always and on PostgreSQL when TEST_DATABASE_URL is set: the version check sits in
the UPDATE's WHERE clause, which PostgreSQL re-evaluates after the winner commits and SQLite
runs one writer at a time.
"""

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from service.settings import Settings
from tests.conftest import new_key
from tests.loopback import served
from tests.plans.support import body

RACERS = 6


@pytest.fixture
def base_url(settings: Settings) -> Iterator[str]:
    with served(settings) as url:
        yield url


async def bearer(database_url: str, role: str, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {await new_key(database_url, role, name)}"}


async def test_racing_reviewers_one_wins_the_others_get_412(
    base_url: str, database_url: str
) -> None:
    author = await bearer(database_url, "planner", "race-author")
    reviewers = [await bearer(database_url, "reviewer", f"racer-{i}") for i in range(RACERS)]
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        made = await http.post("/plans", json=body("raced"), headers=author)
        assert made.status_code == 201, made.text
        path = f"/plans/{made.json()['id']}"
        sub = await http.post(f"{path}/submit", headers={**author, "If-Match": '"1"'})
        assert sub.status_code == 200, sub.text

        def review(i: int) -> Any:
            decision = "approve" if i % 2 else "reject"  # the winner's decision must stick
            return http.post(
                f"{path}/reviews",
                json={"decision": decision, "comment": f"racer {i}"},
                headers={**reviewers[i], "If-Match": '"2"'},
            )

        answers = await asyncio.gather(*(review(i) for i in range(RACERS)))
        statuses = Counter(a.status_code for a in answers)
        assert statuses == {200: 1, 412: RACERS - 1}, [a.text for a in answers]
        winner = next(a.json() for a in answers if a.status_code == 200)
        for loser in (a for a in answers if a.status_code == 412):
            assert loser.headers["content-type"].startswith("application/problem+json")

        plan = (await http.get(path, headers=author)).json()
        assert (plan["status"], plan["version"]) == (winner["status"], 3)
        history = (await http.get(f"{path}/history", headers=author)).json()
        reviews = [e for e in history["events"] if e["kind"] == "reviewed"]
        assert len(reviews) == 1
        assert reviews[0]["to_status"] == winner["status"]


async def test_racing_retries_with_one_idempotency_key_create_one_plan(
    base_url: str, database_url: str
) -> None:
    author = await bearer(database_url, "planner", "retrier")
    headers = {**author, "Idempotency-Key": "race-0b7c9d"}
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        answers = await asyncio.gather(
            *(
                http.post("/plans", json=body("retried at once"), headers=headers)
                for _ in range(RACERS)
            )
        )
        statuses = Counter(a.status_code for a in answers)
        assert statuses == {201: 1, 200: RACERS - 1}, [a.text for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1
        listed = await http.get("/plans", params={"author": "retrier"}, headers=author)
        assert [p["name"] for p in listed.json()["items"]] == ["retried at once"]
