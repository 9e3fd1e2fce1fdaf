"""/plans: save, list, read, edit, submit, review, history, exports, roles, idempotency.

On SQLite always and on PostgreSQL when TEST_DATABASE_URL is set (the database_url fixture).
The numbers are the seeds' six-step plan, worked by hand in tests/plans/support.py.
"""

import base64
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from service.plans import store
from tests.conftest import new_key
from tests.plans.support import (
    GB,
    SIX_STEP_GPU_COUNT,
    SIX_STEP_NEEDED_BYTES,
    SIX_STEP_SPARE_BYTES,
    Cast,
    Client,
    act,
    body,
    cast,
    create,
)

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


@pytest.fixture
async def people(database_url: str) -> Cast:
    return await cast(database_url)


async def submitted(client: Client, people: Cast, **request: Any) -> Any:
    plan = await create(client, people.alice, body(**request))
    response = await act(client, "POST", f"/plans/{plan['id']}/submit", people.alice, 1)
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_saved_plan_keeps_request_answer_and_the_rows_used(
    client: Client, people: Cast
) -> None:
    response = await client.post("/plans", json=body(), headers=people.alice)
    assert response.status_code == 201, response.text
    plan = response.json()
    assert response.headers["etag"] == '"1"'
    assert response.headers["location"] == f"/plans/{plan['id']}"
    assert (plan["status"], plan["version"], plan["author"]) == ("draft", 1, "alice")
    assert (plan["model"], plan["gpu"], plan["workload"]) == (
        "llama-3.1-70b",
        "h100-sxm",
        "inference",
    )
    answer = plan["answer"]
    assert answer["gpu_count"] == SIX_STEP_GPU_COUNT == 4
    assert answer["weights_bytes"] == 141_107_412_992  # 70,553,706,496 x 2 B
    assert answer["kv_cache_bytes"] == 107_374_182_400  # 40 x 8,192 x 327,680 B
    assert answer["budget_bytes"] == 272 * GB  # 4 x (80 GB x 0.9 - 4 GB)
    assert answer["spare_bytes"] == 272 * GB - SIX_STEP_NEEDED_BYTES == 23_518_404_608
    assert (answer["fits"], answer["status"]) == (True, "tight")  # 8.6% spare: under 10%
    # The request as sent: no weight_format, so the checkpoint's (Llama ships in BF16).
    assert plan["request"]["gpu"] == "h100" and plan["request"]["weight_format"] is None
    assert answer["weight_format"] == "bf16"
    rows = plan["catalogue"]
    assert rows["model"]["slug"] == "llama-3.1-70b"
    assert rows["model"]["total_params"] == 70_553_706_496
    assert [g["slug"] for g in rows["gpus"]] == ["h100-sxm"]
    assert rows["gpus"][0]["memory_bytes"] == 80 * GB
    assert [i["slug"] for i in rows["interconnects"]] == ["nvlink-4", "pcie-5-x16"]
    assert rows["weight_format"]["slug"] == rows["kv_format"]["slug"] == "bf16"
    assert "updated_at" not in rows["gpus"][0]  # bookkeeping is not what the row says

    again = await client.get(f"/plans/{plan['id']}", headers=people.vic)
    assert again.status_code == 200 and again.headers["etag"] == '"1"'
    assert again.json() == plan


async def test_the_whole_life_cycle(client: Client, people: Cast) -> None:
    plan = await create(client, people.alice, body("life cycle"))
    path = f"/plans/{plan['id']}"

    # Edit the draft to 20 conversations: KV 20 x 8,192 x 327,680 = 53,687,091,200 B; with the
    # weights 194,794,504,192 B: still over 2 x 68 GB, so 4 GPUs, 272 GB - that = 77,205,495,808.
    edited = await act(
        client,
        "PATCH",
        path,
        people.alice,
        1,
        {
            "notes": "halve the users",
            "request": {
                "model": "llama-3.1-70b",
                "gpu": "h100",
                "concurrency": 20,
                "capacity_basis": "marketed",
            },
        },
    )
    assert edited.status_code == 200, edited.text
    assert edited.headers["etag"] == '"2"'
    e = edited.json()
    assert (e["status"], e["version"], e["notes"], e["name"]) == (
        "draft",
        2,
        "halve the users",
        "life cycle",
    )
    assert e["answer"]["kv_cache_bytes"] == 53_687_091_200
    assert e["answer"]["gpu_count"] == 4
    assert e["answer"]["spare_bytes"] == 272 * GB - 194_794_504_192 == 77_205_495_808

    submit = await act(client, "POST", f"{path}/submit", people.alice, 2)
    assert submit.status_code == 200 and submit.json()["status"] == "submitted"
    assert submit.headers["etag"] == '"3"'

    changes = await act(
        client,
        "POST",
        f"{path}/reviews",
        people.bob,
        3,
        {"decision": "request_changes", "comment": "add a second region"},
    )
    assert changes.status_code == 200, changes.text
    assert (changes.json()["status"], changes.json()["version"]) == ("changes_requested", 4)

    back = await act(client, "PATCH", path, people.alice, 4, {"notes": "two regions"})
    assert (back.json()["status"], back.json()["version"]) == ("draft", 5)
    assert (await act(client, "POST", f"{path}/submit", people.alice, 5)).status_code == 200
    approve = await act(client, "POST", f"{path}/reviews", people.dave, 6, {"decision": "approve"})
    assert approve.status_code == 200, approve.text
    assert (approve.json()["status"], approve.json()["version"]) == ("approved", 7)

    history = (await client.get(f"{path}/history", headers=people.vic)).json()
    assert (history["status"], history["version"]) == ("approved", 7)
    trail = [
        (e["kind"], e["actor"], e["from_status"], e["to_status"], e["version"], e["decision"])
        for e in history["events"]
    ]
    assert trail == [
        ("created", "alice", None, "draft", 1, None),
        ("edited", "alice", "draft", "draft", 2, None),
        ("submitted", "alice", "draft", "submitted", 3, None),
        ("reviewed", "bob", "submitted", "changes_requested", 4, "request_changes"),
        ("edited", "alice", "changes_requested", "draft", 5, None),
        ("submitted", "alice", "draft", "submitted", 6, None),
        ("reviewed", "dave", "submitted", "approved", 7, "approve"),
    ]
    assert history["events"][3]["comment"] == "add a second region"
    moments = [e["at"] for e in history["events"]]
    assert moments == sorted(moments)


async def expect_409(response: Any, state: str) -> None:
    assert response.status_code == 409, response.text
    problem = response.json()
    assert response.headers["content-type"].startswith("application/problem+json")
    assert f"is {state}" in problem["detail"]
    assert problem["errors"] == [{"field": "status", "message": f"the plan is {state}"}]


async def test_each_illegal_transition_is_409_naming_the_state(
    client: Client, people: Cast
) -> None:
    draft = await create(client, people.alice, body("draft"))
    d = f"/plans/{draft['id']}"
    await expect_409(
        await act(client, "POST", f"{d}/reviews", people.bob, 1, {"decision": "approve"}),
        "draft",
    )

    sub = await submitted(client, people)
    s = f"/plans/{sub['id']}"
    await expect_409(await act(client, "POST", f"{s}/submit", people.alice, 2), "submitted")
    await expect_409(await act(client, "PATCH", s, people.alice, 2, {"name": "x"}), "submitted")

    for decision, final in (("approve", "approved"), ("reject", "rejected")):
        plan = await submitted(client, people)
        p = f"/plans/{plan['id']}"
        decided = await act(
            client,
            "POST",
            f"{p}/reviews",
            people.bob,
            2,
            {"decision": decision, "comment": "reasons"},
        )
        assert decided.json()["status"] == final
        await expect_409(await act(client, "PATCH", p, people.alice, 3, {"name": "x"}), final)
        await expect_409(await act(client, "POST", f"{p}/submit", people.alice, 3), final)
        await expect_409(
            await act(client, "POST", f"{p}/reviews", people.dave, 3, {"decision": "approve"}),
            final,
        )
        assert "final" in (await act(client, "PATCH", p, people.alice, 3, {})).json()["detail"]
        unchanged = (await client.get(p, headers=people.vic)).json()
        assert (unchanged["status"], unchanged["version"]) == (final, 3)

    plan = await submitted(client, people)
    p = f"/plans/{plan['id']}"
    await act(
        client,
        "POST",
        f"{p}/reviews",
        people.bob,
        2,
        {"decision": "request_changes", "comment": "cheaper GPU?"},
    )
    # Changes requested: edit first (back to draft), then submit again.
    await expect_409(await act(client, "POST", f"{p}/submit", people.alice, 3), "changes_requested")
    await expect_409(
        await act(client, "POST", f"{p}/reviews", people.dave, 3, {"decision": "approve"}),
        "changes_requested",
    )


async def test_the_author_never_reviews_their_own_plan(client: Client, people: Cast) -> None:
    # rita is a reviewer who writes plans too; the admin role does not lift the rule either.
    for author in (people.rita, people.admin):
        plan = await create(client, author, body("my own"))
        path = f"/plans/{plan['id']}"
        assert (await act(client, "POST", f"{path}/submit", author, 1)).status_code == 200
        refused = await act(client, "POST", f"{path}/reviews", author, 2, {"decision": "approve"})
        assert refused.status_code == 403, refused.text
        problem = refused.json()
        assert problem["type"] == "urn:gpu-planner:self-review"
        assert "author of this plan and cannot review it" in problem["detail"]
        after = (await client.get(path, headers=people.vic)).json()
        assert (after["status"], after["version"]) == ("submitted", 2)
        history = (await client.get(f"{path}/history", headers=people.vic)).json()
        assert [e["kind"] for e in history["events"]] == ["created", "submitted"]


async def test_only_the_author_edits_or_submits(client: Client, people: Cast) -> None:
    plan = await create(client, people.alice, body())
    path = f"/plans/{plan['id']}"
    edit = await act(client, "PATCH", path, people.carol, 1, {"name": "mine now"})
    assert edit.status_code == 403 and "only the author (alice)" in edit.json()["detail"]
    submit = await act(client, "POST", f"{path}/submit", people.carol, 1)
    assert submit.status_code == 403
    problem = submit.json()
    assert problem["type"] == "urn:gpu-planner:not-permitted"
    assert problem["detail"] == "only the author (alice) may submit this plan; you are carol"
    unchanged = (await client.get(path, headers=people.vic)).json()
    assert (unchanged["name"], unchanged["status"], unchanged["version"]) == (
        plan["name"],
        "draft",
        1,
    )


async def test_if_match_is_required_and_must_be_current(client: Client, people: Cast) -> None:
    plan = await create(client, people.alice, body())
    path = f"/plans/{plan['id']}"
    for method, suffix, payload in (
        ("PATCH", "", {"name": "x"}),
        ("POST", "/submit", None),
    ):
        missing = await act(client, method, path + suffix, people.alice, None, payload)
        assert missing.status_code == 428, missing.text
        assert missing.json()["errors"][0]["field"] == "If-Match"
        stale = await act(client, method, path + suffix, people.alice, 7, payload)
        assert stale.status_code == 412, stale.text
        assert "now version 1" in stale.json()["detail"]
        assert stale.json()["errors"] == [
            {"field": "If-Match", "message": "the current version is 1"}
        ]
    for header in ('W/"1"', "*", "1", '"1', '"x"'):
        weak = await client.patch(path, json={}, headers={**people.alice, "If-Match": header})
        assert weak.status_code == 412, header  # strong comparison; * would skip the check
    listed = await client.patch(path, json={}, headers={**people.alice, "If-Match": '"9", "1"'})
    assert listed.status_code == 200 and listed.headers["etag"] == '"2"'
    sub = await act(client, "POST", f"{path}/submit", people.alice, 2)
    review = await act(client, "POST", f"{path}/reviews", people.bob, None, {"decision": "approve"})
    assert sub.status_code == 200 and review.status_code == 428
    assert review.json()["errors"] == [{"field": "If-Match", "message": "missing"}]
    # Nothing was decided: still submitted, at version 3 (created 1, edited 2, submitted 3).
    after = (await client.get(path, headers=people.vic)).json()
    assert (after["status"], after["version"]) == ("submitted", 3)


WRITES = [
    # (method, path, body, the highest role still refused)
    ("POST", "/plans", "create", "viewer"),
    ("PATCH", "/plans/{id}", {"name": "x"}, "viewer"),
    ("POST", "/plans/{id}/submit", None, "viewer"),
    ("POST", "/plans/{id}/reviews", {"decision": "approve"}, "planner"),
]
READS = ["/plans", "/plans/{id}", "/plans/{id}/history", "/plans/{id}/recheck"]


async def test_role_matrix_every_write_is_401_without_a_key_and_403_below_its_role(
    client: Client, people: Cast
) -> None:
    plan = await create(client, people.alice, body())
    too_low = {"viewer": people.vic, "planner": people.carol}
    for method, template, payload, refused_role in WRITES:
        path = template.format(id=plan["id"])
        json = body() if payload == "create" else payload
        headers = {"If-Match": '"1"'}
        for auth in ({}, {"Authorization": "Bearer gcp_not-a-key"}, {"Authorization": "Basic x"}):
            response = await client.request(method, path, json=json, headers={**headers, **auth})
            assert response.status_code == 401, (method, path, auth)
            assert response.headers["www-authenticate"].startswith("Bearer")
        response = await client.request(
            method, path, json=json, headers={**headers, **too_low[refused_role]}
        )
        assert response.status_code == 403, (method, path, response.text)
        assert f"this key is {refused_role}" in response.json()["detail"]
    for template in READS:
        path = template.format(id=plan["id"])
        assert (await client.get(path)).status_code == 401, path
        assert (await client.get(path, headers=people.vic)).status_code == 200, path
    unchanged = (await client.get(f"/plans/{plan['id']}", headers=people.vic)).json()
    assert unchanged == plan


async def test_an_idempotency_key_makes_a_retry_return_the_first_plan(
    client: Client, people: Cast
) -> None:
    key = {"Idempotency-Key": "4b8e2a52-retry-test"}
    first = await client.post("/plans", json=body("retried"), headers={**people.alice, **key})
    retry = await client.post("/plans", json=body("retried"), headers={**people.alice, **key})
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json() == first.json()
    listed = await client.get("/plans", params={"author": "alice"}, headers=people.vic)
    assert [p["id"] for p in listed.json()["items"] if p["name"] == "retried"] == [
        first.json()["id"]
    ]
    other_body = await client.post(
        "/plans", json=body("something else"), headers={**people.alice, **key}
    )
    assert other_body.status_code == 422, other_body.text
    assert other_body.json()["errors"][0]["field"] == "Idempotency-Key"
    assert f"(it created plan {first.json()['id']})" in other_body.json()["detail"]
    # Keys belong to their caller: carol's identical key is a new plan.
    carols = await client.post("/plans", json=body("retried"), headers={**people.carol, **key})
    assert carols.status_code == 201 and carols.json()["id"] != first.json()["id"]


def cursor_of(created_at: str, plan_id: int) -> str:
    """A cursor as the service writes one: unpadded url-safe base64 of [created_at, id]."""
    raw = json.dumps([created_at, plan_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def test_a_cursor_out_of_the_databases_range_is_422_naming_it(
    client: Client, people: Cast
) -> None:
    await create(client, people.alice, body("cursor range"))
    now = "2026-01-01T00:00:00+00:00"
    # In range: the largest signed 64-bit id (BIGINT, SQLite INTEGER), year 1 and 9999 in UTC.
    for good in (cursor_of(now, 2**63 - 1), cursor_of("0001-01-01T00:00:00+00:00", 1)):
        listed = await client.get("/plans", params={"cursor": good}, headers=people.vic)
        assert listed.status_code == 200, listed.text
    late = cursor_of("9999-12-31T23:59:59.999999+00:00", 1)
    page = await client.get("/plans", params={"cursor": late}, headers=people.vic)
    assert page.status_code == 200 and "cursor range" in [p["name"] for p in page.json()["items"]]
    bad = [
        cursor_of(now, 2**63),  # one past BIGINT
        cursor_of(now, 2**64),
        cursor_of(now, 0),  # ids start at 1
        cursor_of(now, -(2**63) - 1),
        cursor_of("0001-01-01T00:00:00+14:00", 1),  # 31 Dec of year 0 in UTC: no such datetime
        cursor_of("9999-12-31T23:00:00-14:00", 1),  # year 10000 in UTC
        cursor_of("2026-01-01T00:00:00+02:00", 1),  # the service writes UTC only
        cursor_of("2026-01-01T00:00:00", 1),  # no offset
    ]
    for cursor in bad:
        response = await client.get("/plans", params={"cursor": cursor}, headers=people.vic)
        # 422 (parses, makes no sense): the spec cannot state a cursor's range, and a value the
        # spec accepts must not be a 400 (tests/contract holds the API to that).
        assert response.status_code == 422, (cursor, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in response.json()["errors"]] == ["cursor"]


async def test_bad_input_is_a_problem_naming_the_field(client: Client, people: Cast) -> None:
    async def problem(response: Any, status: int, field: str) -> None:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert field in {e["field"] for e in response.json()["errors"]}, response.text

    post = client.post
    a = people.alice
    await problem(await post("/plans", json={**body(), "colour": 1}, headers=a), 400, "colour")
    await problem(await post("/plans", json={"request": {}}, headers=a), 400, "name")
    await problem(await post("/plans", json=body(name=" "), headers=a), 400, "name")
    await problem(
        await post("/plans", json=body(model="llama-70b-typo"), headers=a), 404, "request.model"
    )
    await problem(
        await post("/plans", json=body(weight_format="fp9"), headers=a),
        404,
        "request.weight_format",
    )
    await problem(
        await post("/plans", json=body(kv_format="int4"), headers=a), 422, "request.kv_format"
    )
    await problem(await client.get("/plans/999999", headers=a), 404, "plan_id")
    assert (await client.get("/plans/999999", headers=a)).json()["detail"] == "no plan 999999"
    await problem(await client.get(f"/plans/{2**60}", headers=a), 400, "plan_id")
    await problem(
        await client.get("/plans", params={"cursor": "bm90LWEtY3Vyc29y"}, headers=a), 422, "cursor"
    )
    await problem(await client.get("/plans", params={"limit": 0}, headers=a), 400, "limit")
    await problem(await client.get("/plans", params={"status": "done"}, headers=a), 400, "status")
    plan = await submitted(client, people)
    reviews = f"/plans/{plan['id']}/reviews"
    await problem(
        await act(client, "POST", reviews, people.bob, 2, {"decision": "maybe"}), 400, "decision"
    )
    await problem(
        await act(client, "POST", reviews, people.bob, 2, {"decision": "reject", "comment": " "}),
        422,
        "comment",
    )
    still = (await client.get(f"/plans/{plan['id']}", headers=a)).json()
    assert (still["status"], still["version"]) == ("submitted", 2)


async def test_list_filters_and_a_stable_cursor(
    client: Client, people: Cast, database_url: str
) -> None:
    # Her own author name: the module's database holds the other tests' plans too.
    lister = {"Authorization": f"Bearer {await new_key(database_url, 'planner', 'lister')}"}
    made = [
        await create(client, lister, body("f1")),
        await create(client, lister, body("f2", gpu="h200")),
        await create(client, lister, body("f3", model="llama-3.1-8b", concurrency=8)),
        await create(client, lister, body("f4")),
        await create(client, lister, body("f5", gpu="h200")),
    ]
    ids = [p["id"] for p in made]
    await act(client, "POST", f"/plans/{ids[3]}/submit", lister, 1)

    async def listed(**params: Any) -> list[int]:
        response = await client.get(
            "/plans", params={"author": "lister", **params}, headers=people.vic
        )
        assert response.status_code == 200, response.text
        return [p["id"] for p in response.json()["items"]]

    newest_first = ids[::-1]
    assert await listed() == newest_first
    assert await listed(gpu="h100") == [ids[3], ids[2], ids[0]]  # the alias of h100-sxm
    assert await listed(gpu="h200") == [ids[4], ids[1]]
    assert await listed(model="llama-3.1-8b") == [ids[2]]
    assert await listed(status="submitted") == [ids[3]]
    assert await listed(status="draft", gpu="h200") == [ids[4], ids[1]]
    assert await listed(author="nobody") == []
    third = made[2]["created_at"]
    assert await listed(created_after=third) == [ids[4], ids[3]]
    assert await listed(created_before=third) == [ids[1], ids[0]]
    assert await listed(created_after="2000-01-01T00:00:00") == newest_first  # naive = UTC

    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"author": "lister", "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = (await client.get("/plans", params=params, headers=people.vic)).json()
        seen += [p["id"] for p in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == newest_first and pages == 3  # 2 + 2 + 1

    summary = (
        await client.get("/plans", params={"author": "lister", "limit": 1}, headers=people.vic)
    ).json()["items"][0]
    # One H200 holds 141 GB x 0.9 - 4 GB = 122.9 GB; two hold 245.8 GB, short of the
    # 248,481,595,392 B needed; four hold 491.6 GB.
    assert (summary["gpu"], summary["gpu_count"], summary["fit_status"]) == ("h200", 4, "fits")
    assert summary["spare_bytes"] == 4 * 122_900_000_000 - SIX_STEP_NEEDED_BYTES


async def test_csv_list_and_markdown_plan(client: Client, people: Cast) -> None:
    plan = await submitted(
        client,
        people,
    )
    path = f"/plans/{plan['id']}"
    await act(
        client,
        "POST",
        f"{path}/reviews",
        people.bob,
        2,
        {"decision": "approve", "comment": "budget | ok"},
    )

    response = await client.get(
        "/plans", params={"status": "approved"}, headers={**people.vic, "Accept": "text/csv"}
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    row = next(r for r in rows if r["id"] == str(plan["id"]))
    assert {"spare_bytes", "spare_GB", "spare_GiB", "created_at_utc"} <= set(row)
    assert row["spare_bytes"] == str(SIX_STEP_SPARE_BYTES)
    assert row["spare_GB"] == "23.518"  # 23,518,404,608 / 10^9
    assert row["spare_GiB"] == "21.903"  # / 2^30 = 21.9032...
    assert (row["gpu_count"], row["fit_status"], row["status"]) == ("4", "tight", "approved")
    assert response.headers["content-disposition"] == 'attachment; filename="plans.csv"'
    # One plan a page, and alice has at least two (this one and the next): the CSV names the
    # next page in Link, with the same cursor as the JSON page.
    await create(client, people.alice, body("a second plan"))
    params = {"author": "alice", "limit": 1}
    first = await client.get("/plans", params=params, headers={**people.vic, "Accept": "text/csv"})
    assert len(list(csv.DictReader(io.StringIO(first.text)))) == 1
    cursor = (await client.get("/plans", params=params, headers=people.vic)).json()["next_cursor"]
    assert cursor is not None
    link = first.headers["link"]
    assert link.startswith("</plans?") and link.endswith('>; rel="next"')
    assert f"cursor={cursor}" in link
    # The link keeps the filters and the page size: following it gives alice's next plan.
    assert "author=alice" in link and "limit=1" in link
    second = await client.get(
        link[1 : link.index(">")], headers={**people.vic, "Accept": "text/csv"}
    )
    next_rows = list(csv.DictReader(io.StringIO(second.text)))
    assert len(next_rows) == 1 and next_rows[0]["author"] == "alice"
    first_id = next(csv.DictReader(io.StringIO(first.text)))["id"]
    assert next_rows[0]["id"] != first_id

    md = await client.get(path, headers={**people.vic, "Accept": "text/markdown"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.headers["etag"] == '"3"'
    text = md.text
    assert text.startswith(f"# Plan {plan['id']}: 70B chat on H100\n")
    assert "- State: **approved** (version 3)" in text
    assert "| concurrency | 40 |" in text and "zero_stage" not in text
    assert "**4 x h100-sxm** (tight), 23.5 GB spare (8.6%)" in text
    # Per GPU: 80 GB = 74.51 GiB; budget 68 GB; spare 23,518,404,608 / 4 = 5,879,601,152 B.
    assert "| capacity | 80.00 | 74.51 |" in text
    assert "| spare | 5.88 | 5.48 |" in text  # 5,879,601,152 / 2^30 = 5.4758 GiB
    assert "`spare_under_10_percent`" in text
    assert "## Decision trail" in text
    assert "| bob | reviewed: approve | submitted -> approved (v3) | budget \\| ok |" in text


async def test_training_and_inline_architecture_plans_round_trip(
    client: Client, people: Cast
) -> None:
    lora = await create(
        client,
        people.alice,
        {"name": "lora", "request": {"model": "llama-3.1-8b", "gpu": "h100", "workload": "lora"}},
    )
    computed = await client.post(
        "/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "workload": "lora"}
    )
    assert lora["answer"] == computed.json()  # the same evaluation as POST /plan
    got = await client.get(f"/plans/{lora['id']}", headers=people.vic)
    assert got.json() == lora
    md = await client.get(f"/plans/{lora['id']}", headers={**people.vic, "Accept": "text/markdown"})
    assert "| optimizer |" in md.text and "lora_rank" in md.text

    spec = {
        "slug": "llama-70b-seed",
        "total_params": 70_600_000_000,
        "layers": 80,
        "hidden_size": 8192,
        "attention_heads": 64,
        "kv_heads": 8,
        "max_context_tokens": 131072,
    }
    request = {
        "model_spec": spec,
        "gpu": "h100",
        "concurrency": 40,
        "context_tokens": 8192,
        "capacity_basis": "marketed",
    }
    inline = await create(client, people.alice, {"name": "seed", "request": request})
    # The seeds' rounded 70.6B: 141.2 GB + 107,374,182,400 B against 272 GB = 23,425,817,600.
    assert inline["answer"]["spare_bytes"] == 272 * GB - 141_200_000_000 - 107_374_182_400
    assert inline["model"] == "llama-70b-seed"
    assert inline["catalogue"]["model_spec"]["total_params"] == 70_600_000_000
    assert "model" not in inline["catalogue"]

    # A config.json plan keeps the architecture the importer read from it (it used to be a 500).
    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    request = {
        "config_json": {k: v for k, v in config.items() if not k.startswith("_")},
        "gpu": "h100",
        "concurrency": 4,
        "context_tokens": 8192,
    }
    imported = await create(client, people.alice, {"name": "byo", "request": request})
    assert imported["catalogue"]["model_spec"]["total_params"] == 8_030_261_248
    assert "model" not in imported["catalogue"]
    recheck = await client.get(f"/plans/{imported['id']}/recheck", headers=people.vic)
    assert recheck.status_code == 200, recheck.text
    assert recheck.json()["changed"] is False


async def test_a_failure_half_way_through_a_review_leaves_nothing(
    client: Client, people: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = await submitted(client, people)
    path = f"/plans/{plan['id']}"
    before = (await client.get(path, headers=people.vic)).text
    history = (await client.get(f"{path}/history", headers=people.vic)).text

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the disk is full")  # after the plan's UPDATE, before the event

    monkeypatch.setattr(store, "add_event", broken)
    failed = await act(client, "POST", f"{path}/reviews", people.bob, 2, {"decision": "approve"})
    assert failed.status_code == 500
    assert failed.headers["content-type"].startswith("application/problem+json")
    monkeypatch.undo()

    assert (await client.get(path, headers=people.vic)).text == before
    assert (await client.get(f"{path}/history", headers=people.vic)).text == history
    retry = await act(client, "POST", f"{path}/reviews", people.bob, 2, {"decision": "approve"})
    assert retry.status_code == 200 and retry.json()["version"] == 3


async def test_a_saved_plan_links_to_its_read_only_page(client: Client, people: Cast) -> None:
    # Review requests and chat messages link people to /plans/{id}/view (issue 18): every
    # answer about a saved plan names that page in a Link header, and the page is served.
    response = await client.post("/plans", json=body(), headers=people.alice)
    plan_id = response.json()["id"]
    expected = f'</plans/{plan_id}/view>; rel="alternate"; type="text/html"'
    assert response.headers["link"] == expected
    read = await client.get(f"/plans/{plan_id}", headers=people.bob)
    assert read.headers["link"] == expected
    page = await client.get(f"/plans/{plan_id}/view")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
