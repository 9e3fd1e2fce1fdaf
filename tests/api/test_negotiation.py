"""Content negotiation on every API endpoint: 415 for a body that is not JSON, 400 for JSON
nested too deep or repeating a key, 406 for an Accept nothing can serve, inputs cut when
echoed in a problem (service/api/negotiation.py, service/api/problems.py)."""

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.api.negotiation import best_match
from service.api.problems import echo
from tests.conftest import new_key

Client = AsyncTestClient[Litestar]
ROOT = Path(__file__).resolve().parents[2]
PLAN = {
    "model": "llama-3.1-70b",
    "gpu": "h100-sxm",
    "concurrency": 40,
    "capacity_basis": "marketed",
    "weight_format": "bf16",
}
OFFLOAD = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "weight_format": "bf16"}
JSON_HEADERS = {"content-type": "application/json"}


@pytest.fixture
async def keys(database_url: str) -> dict[str, dict[str, str]]:
    return {
        role: {"Authorization": f"Bearer {await new_key(database_url, role, role)}"}
        for role in ("planner", "admin")
    }


def _problem(response: Any, status: int, field: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert [e["field"] for e in problem["errors"]] == [field], problem
    return problem


# Every JSON endpoint the issue names, with the key it needs.
BODY_ENDPOINTS = [
    ("/plan", None),
    ("/matrix", None),
    ("/offload", None),
    ("/plans", "planner"),
    ("/gpus", "admin"),
    ("/verify", None),
]


def _nested(levels: int) -> bytes:
    """{"model": [[...]]}: the object is one level, each array one more."""
    return b'{"model": ' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


@pytest.mark.parametrize(("path", "role"), BODY_ENDPOINTS)
async def test_deeply_nested_json_is_a_400_naming_the_body_without_a_traceback(
    client: Client,
    keys: dict[str, dict[str, str]],
    caplog: pytest.LogCaptureFixture,
    path: str,
    role: str | None,
) -> None:
    # 5,000 levels (10 KB): past msgspec's RecursionError (about 990 levels under uvicorn,
    # where the issue found it; the in-process client's stack is shallower), a 500 before.
    headers = JSON_HEADERS | (keys[role] if role else {})
    with caplog.at_level(logging.INFO):
        response = await client.post(path, content=_nested(5_000), headers=headers)
    problem = _problem(response, 400, "body")
    assert "64 levels" in problem["detail"]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_the_nesting_bound_is_64_levels(client: Client) -> None:
    # 64 levels (the object and 63 arrays) pass the bound and reach the decoder, which names
    # `model` (an array is not a slug); 65 levels are refused on the body.
    _problem(await client.post("/plan", content=_nested(64), headers=JSON_HEADERS), 400, "model")
    _problem(await client.post("/plan", content=_nested(65), headers=JSON_HEADERS), 400, "body")


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
@pytest.mark.parametrize(("path", "role"), BODY_ENDPOINTS)
async def test_a_body_that_is_not_json_is_a_415(
    client: Client,
    keys: dict[str, dict[str, str]],
    path: str,
    role: str | None,
    content_type: str | None,
) -> None:
    headers = (keys[role] if role else {}) | (
        {"content-type": content_type} if content_type else {}
    )
    response = await client.post(path, content=json.dumps(PLAN), headers=headers)
    problem = _problem(response, 415, "Content-Type")
    assert problem["suggestions"] == ["application/json"]


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/merge-patch+json"]
)
async def test_json_and_plus_json_bodies_are_accepted(client: Client, content_type: str) -> None:
    response = await client.post(
        "/plan", content=json.dumps(PLAN), headers={"content-type": content_type}
    )
    assert response.status_code == 200, response.text
    # The seed's example: 4 x H100 80 GB, 4 x (80 GB x 0.9 - 4 GB) = 272 GB of budget.
    assert (response.json()["gpu_count"], response.json()["budget_bytes"]) == (4, 272 * 10**9)


async def test_a_key_twice_in_one_object_is_a_400_naming_it(
    client: Client, keys: dict[str, dict[str, str]]
) -> None:
    twice = b'{"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpu": "a100-80gb"}'
    problem = _problem(await client.post("/plan", content=twice, headers=JSON_HEADERS), 400, "gpu")
    assert "twice" in problem["detail"]
    nested = (
        b'{"name": "n", "request": {"model": "llama-3.1-8b", "gpu": "h100-sxm", '
        b'"concurrency": 1, "concurrency": 2}}'
    )
    headers = JSON_HEADERS | keys["planner"]
    _problem(await client.post("/plans", content=nested, headers=headers), 400, "concurrency")
    # The same key in two different objects is no repeat, and colons inside strings are no
    # keys: the plan is saved.
    fine = {"name": "a:b", "notes": "12:00 UTC: x", "request": PLAN}
    assert (await client.post("/plans", json=fine, headers=keys["planner"])).status_code == 201


def _verify_body(log: str, *pairs: str) -> bytes:
    """A /verify body written by hand: the log as JSON encodes it, then ``pairs`` as they are."""
    return ('{"log": ' + json.dumps(log) + ", " + ", ".join(pairs) + "}").encode()


@pytest.mark.parametrize("quotes", [0, 500])
async def test_a_key_twice_beside_a_long_pasted_log_is_a_400_naming_it(
    client: Client, quotes: int
) -> None:
    # A log of 200 lines (over 4 kB, its timestamps full of colons): the key colons are then
    # counted after each quote; with 500 quotes in the log (each escaped: \") by the regex.
    lines = [f"INFO 11-29 19:48:{i % 60:02d} [x.py:1] line {i}" for i in range(200)]
    log = "\n".join(lines) + '"' * quotes
    twice = _verify_body(log, '"model": "llama-3.1-8b"', '"gpu": "h200"', '"gpu": "h100-sxm"')
    problem = _problem(
        await client.post("/verify", content=twice, headers=JSON_HEADERS), 400, "gpu"
    )
    assert "twice" in problem["detail"]
    # Quotes in the log followed by colons (\": in the body) are no keys: no repeat, so the
    # log is read (and holds no start-up line: the 422 on the log, past the JSON checks).
    colons = _verify_body(log + ' "a": 1, "b" : 2', '"model": "llama-3.1-8b"', '"gpu": "h200"')
    response = await client.post("/verify", content=colons, headers=JSON_HEADERS)
    _problem(response, 422, "log")


SERVED_BY_PLAN = ("application/json", "text/markdown", "text/csv", "image/svg+xml")


async def test_an_accept_the_endpoint_cannot_serve_is_a_406_listing_what_it_serves(
    client: Client,
) -> None:
    training = {**PLAN, "workload": "training"}
    for path, body, accept, served in [
        ("/plan", training, "text/csv", ["application/json"]),  # CSV is for inference plans
        ("/plan", training, "text/markdown", ["application/json"]),
        ("/plan", PLAN, "application/xml", [*SERVED_BY_PLAN]),
        ("/offload", OFFLOAD, "text/csv", ["application/json", "text/markdown"]),
        ("/offload", OFFLOAD, "application/xml", ["application/json", "text/markdown"]),
        ("/matrix", {"models": ["llama-3.1-8b"]}, "application/json;q=0", None),
    ]:
        response = await client.post(path, json=body, headers={"accept": accept})
        problem = _problem(response, 406, "Accept")
        if served is not None:
            assert problem["suggestions"] == served
    _problem(await client.get("/gpus", headers={"accept": "text/csv"}), 406, "Accept")


async def test_missing_accept_star_and_q_values_still_choose_a_rendering(client: Client) -> None:
    matrix = {"models": ["llama-3.1-8b"], "gpus": ["h100-sxm"], "formats": ["bf16"]}
    for accept, expected in [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("text/markdown;q=0.9, application/json;q=0.5", "text/markdown"),
        ("text/*", "text/markdown"),  # a tie between markdown and CSV: the server's order
        ("text/csv, */*;q=0.1", "text/csv"),
        ("text/csv;q=0, */*", "application/json"),
    ]:
        headers = {"accept": accept} if accept else {}
        response = await client.post("/matrix", json=matrix, headers=headers)
        assert response.status_code == 200, (accept, response.text)
        assert response.headers["content-type"].startswith(expected), accept


def test_best_match_follows_the_most_specific_range_and_q_zero() -> None:
    offered = ("application/json", "text/markdown", "text/csv")
    assert best_match(None, offered) == "application/json"
    assert best_match("", offered) == "application/json"
    # text/csv is named with q=0 (refused) though text/* takes the rest at 0.5.
    assert best_match("text/*;q=0.5, text/csv;q=0", offered) == "text/markdown"
    assert best_match("text/csv;q=0.4, text/markdown;q=0.6", offered) == "text/markdown"
    assert best_match("application/json;q=0, */*;q=0.1", offered) == "text/markdown"
    assert best_match("image/png", offered) is None
    assert best_match("text/csv;q=abc", offered) is None  # an unreadable q refuses the range


async def test_a_100_kb_input_comes_back_cut_to_200_characters(client: Client) -> None:
    # An unknown 100,000-character key: msgspec names it in the field and the message.
    long_key = "k" * 100_000
    response = await client.post("/plan", json={**PLAN, long_key: 1})
    problem = _problem(response, 400, "k" * 200 + "\u2026")
    assert len(response.content) < 1_000  # it was 200,237 bytes
    assert "k" * 201 not in problem["errors"][0]["message"]
    # Text with spaces escapes the run rule; the 2,000-character cap cuts it (2,000 and the
    # ellipsis). Slugs are bounded by the schema now (100 characters), so the cap is checked
    # on the one function every problem's text goes through.
    spaced = echo("a " * 50_000)
    assert len(spaced) == 2_001 and spaced == ("a " * 1_000) + "\u2026"


def test_the_spec_declares_406_on_every_api_operation_and_415_where_a_body_is_taken() -> None:
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            api = not path.startswith(("/healthz", "/readyz", "/chatops"))
            assert ("406" in responses) == api, (path, method)
            takes_json = "application/json" in operation.get("requestBody", {}).get("content", {})
            assert ("415" in responses) == takes_json, (path, method)
            if takes_json:
                assert "nests deeper than 64 levels" in responses["400"]["description"]
