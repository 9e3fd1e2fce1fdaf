"""A catalogue edit after approval: the stored plan stays byte-for-byte the same, and recheck
reports what today's catalogue would answer. Its own module: it edits the module's catalogue."""

import pytest

from tests.plans.support import (
    GB,
    SIX_STEP_NEEDED_BYTES,
    SIX_STEP_SPARE_BYTES,
    Cast,
    Client,
    act,
    body,
    cast,
    create,
)


@pytest.fixture
async def people(database_url: str) -> Cast:
    return await cast(database_url)


async def test_a_catalogue_edit_never_changes_an_approved_plan(
    client: Client, people: Cast
) -> None:
    plan = await create(client, people.alice, body("approved before the edit"))
    path = f"/plans/{plan['id']}"
    await act(client, "POST", f"{path}/submit", people.alice, 1)
    approved = await act(client, "POST", f"{path}/reviews", people.bob, 2, {"decision": "approve"})
    assert approved.status_code == 200

    quiet = (await client.get(f"{path}/recheck", headers=people.vic)).json()
    assert quiet["changed"] is False and quiet["changes"] == [] == quiet["catalogue_changes"]

    before_json = (await client.get(path, headers=people.vic)).content
    before_md = (await client.get(path, headers={**people.vic, "Accept": "text/markdown"})).content
    before_history = (await client.get(f"{path}/history", headers=people.vic)).content

    gpu = (await client.get("/gpus/h100-sxm")).json()
    edited = await client.put(
        "/gpus/h100-sxm", json={**gpu, "memory_bytes": 64 * GB}, headers=people.admin
    )
    assert edited.status_code == 200, edited.text

    assert (await client.get(path, headers=people.vic)).content == before_json
    md = await client.get(path, headers={**people.vic, "Accept": "text/markdown"})
    assert md.content == before_md
    stored = (await client.get(path, headers=people.vic)).json()
    assert stored["catalogue"]["gpus"][0]["memory_bytes"] == 80 * GB
    assert stored["answer"]["spare_bytes"] == SIX_STEP_SPARE_BYTES

    recheck = await client.get(f"{path}/recheck", headers=people.vic)
    assert recheck.status_code == 200, recheck.text
    report = recheck.json()
    # A 64 GB H100 holds 64 GB x 0.9 - 4 GB = 53.6 GB; four hold 214.4 GB, short of the
    # 248,481,595,392 B needed; eight hold 428.8 GB: 180,318,404,608 B spare (42%: fits).
    after_spare = 8 * 53_600_000_000 - SIX_STEP_NEEDED_BYTES
    assert after_spare == 180_318_404_608
    assert report["changed"] is True
    assert report["before"] == {
        "fits": True,
        "status": "tight",
        "gpu": "h100-sxm",
        "gpu_count": 4,
        "spare_bytes": SIX_STEP_SPARE_BYTES,
        "spare_fraction": SIX_STEP_SPARE_BYTES / (272 * GB),
    }
    after = report["after"]
    assert (after["fits"], after["status"], after["gpu_count"]) == (True, "fits", 8)
    assert after["spare_bytes"] == after_spare
    assert after["spare_fraction"] == pytest.approx(after_spare / (428.8 * GB))
    changes = {c["field"]: (c["before"], c["after"]) for c in report["changes"]}
    assert set(changes) == {"status", "gpu_count", "spare_bytes", "spare_fraction"}
    assert changes["gpu_count"] == (4, 8)
    assert changes["status"] == ("tight", "fits")
    assert changes["spare_bytes"] == (SIX_STEP_SPARE_BYTES, after_spare)
    assert report["catalogue_changes"] == [
        {"row": "gpus/h100-sxm", "field": "memory_bytes", "before": 80 * GB, "after": 64 * GB}
    ]

    # Recheck saves nothing.
    assert (await client.get(path, headers=people.vic)).content == before_json
    assert (await client.get(f"{path}/history", headers=people.vic)).content == before_history


async def test_recheck_reports_a_row_the_catalogue_no_longer_has(
    client: Client, people: Cast
) -> None:
    spec = {
        "slug": "tiny-test-model",
        "name": "Tiny",
        "total_params": 1_000_000_000,
        "layers": 16,
        "hidden_size": 2048,
        "attention_heads": 16,
        "kv_heads": 4,
        "max_context_tokens": 32768,
    }
    made = await client.post("/models", json=spec, headers=people.admin)
    assert made.status_code == 201, made.text
    plan = await create(
        client,
        people.alice,
        {"name": "tiny", "request": {"model": "tiny-test-model", "gpu": "l40s"}},
    )
    assert (await client.delete("/models/tiny-test-model", headers=people.admin)).status_code == 204
    report = (await client.get(f"/plans/{plan['id']}/recheck", headers=people.vic)).json()
    assert report["changed"] is True and report["after"] is None
    assert "tiny-test-model" in report["problem"]
    assert report["before"]["gpu_count"] == 1
    stored = (await client.get(f"/plans/{plan['id']}", headers=people.vic)).json()
    assert stored == plan
