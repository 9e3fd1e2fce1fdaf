"""The checked-in spec is the live one, and every operation documents its problems."""

import json
from pathlib import Path
from typing import Any

from service.__main__ import openapi_json

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_checked_in_spec_equals_the_live_one() -> None:
    live = openapi_json()
    assert json.loads(SPEC.read_text()) == json.loads(live), (
        "openapi/openapi.json drifted from the app: run `make openapi` and commit it"
    )
    assert SPEC.read_text() == live


def test_every_error_response_is_problem_json() -> None:
    spec = json.loads(openapi_json())
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "500" in responses, f"{method} {path}"
            for status, response in responses.items():
                if int(status) >= 400:
                    assert list(response["content"]) == ["application/problem+json"], (
                        f"{method.upper()} {path} {status}"
                    )


def test_every_rate_limited_operation_declares_429_with_retry_after() -> None:
    # The limiter wraps every route but the probes and the scrape (UNLIMITED_PATHS): those
    # never answer 429, every other operation may, with a Retry-After of whole seconds.
    spec = json.loads(openapi_json())
    checked = 0
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            if path in ("/healthz", "/readyz", "/metrics"):
                assert "429" not in responses, f"{method.upper()} {path}"
                continue
            limited = responses.get("429")
            assert limited is not None, f"{method.upper()} {path} does not declare 429"
            assert list(limited["content"]) == ["application/problem+json"]
            header = limited["headers"]["Retry-After"]
            assert header["schema"] == {"type": "integer", "minimum": 1}, f"{method} {path}"
            checked += 1
    assert checked > 30  # every catalogue, compute, plans, verify and chatops operation


_BOUND_KEYWORDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
)


def _missing_bounds(decoder: dict[str, Any], spec: dict[str, Any], where: str) -> list[str]:
    """The bounds in msgspec's schema of a body (what its decoder refuses) that the spec lacks
    at the same place: a property, a list's items, or the branch of a nullable union (Litestar
    may state a nullable field's bounds beside its oneOf instead)."""
    missing = [
        f"{where}: {key}={decoder[key]!r}"
        for key in _BOUND_KEYWORDS
        if key in decoder and spec.get(key) != decoder[key]
    ]
    for name, sub in decoder.get("properties", {}).items():
        missing += _missing_bounds(sub, spec.get("properties", {}).get(name, {}), f"{where}.{name}")
    if "items" in decoder:
        missing += _missing_bounds(decoder["items"], spec.get("items", {}), f"{where}[]")
    for branch in decoder.get("anyOf", []):
        if "type" not in branch or branch["type"] == "null":
            continue
        twins = [
            b for b in spec.get("oneOf", spec.get("anyOf", [])) if b.get("type") == branch["type"]
        ]
        beside = {k: v for k, v in spec.items() if k in _BOUND_KEYWORDS}
        missing += _missing_bounds(branch, {**beside, **(twins[0] if twins else {})}, where)
    return missing


def test_the_spec_states_every_bound_the_request_decoders_enforce() -> None:
    import msgspec

    from service.api.catalogue_schemas import ModelImportBody
    from service.api.plans_schemas import CreatePlanBody, EditPlanBody, ReviewBody
    from service.api.verify import VerifyRequest
    from service.schemas.catalogue import FormatBody, GpuBody, InterconnectBody, ModelBody
    from service.schemas.compute import MatrixRequest, OffloadRequest
    from service.schemas.plan import PlanRequest
    from service.schemas.speed import SpeedRequest

    spec = json.loads(openapi_json())
    bodies = [
        PlanRequest,
        MatrixRequest,
        OffloadRequest,
        VerifyRequest,
        GpuBody,
        ModelBody,
        FormatBody,
        InterconnectBody,
        ModelImportBody,
        CreatePlanBody,
        EditPlanBody,
        ReviewBody,
        SpeedRequest,
    ]
    json_bodies = {
        content["schema"]["$ref"].rsplit("/", 1)[-1]
        for item in spec["paths"].values()
        for operation in item.values()
        for content in operation.get("requestBody", {}).get("content", {}).values()
        if "$ref" in content.get("schema", {})
    }
    assert json_bodies == {body.__name__ for body in bodies}  # none left out
    _, decoders = msgspec.json.schema_components(bodies)
    components = spec["components"]["schemas"]
    missing = [
        gap
        for name, decoder in decoders.items()
        for gap in _missing_bounds(decoder, components[name], name)
    ]
    assert missing == []


async def test_splits_bounds_are_the_same_in_the_spec_and_the_server(client: Any) -> None:
    # The core's rule (validate_splits): 1 to 64 GPU counts, each 1 to 65,536.
    components = json.loads(openapi_json())["components"]["schemas"]
    # Null (omitted) means each GPU's default ladder; a list is bounded.
    splits = components["MatrixRequest"]["properties"]["splits"]
    assert (splits["minItems"], splits["maxItems"]) == (1, 64)
    assert splits["oneOf"][0]["items"] == {"type": "integer", "minimum": 1, "maximum": 65_536}
    plan_splits = components["PlanRequest"]["properties"]["splits"]
    assert (plan_splits["minItems"], plan_splits["maxItems"]) == (1, 64)
    assert plan_splits["oneOf"][0]["items"] == {"type": "integer", "minimum": 1, "maximum": 65_536}
    one = {"models": ["llama-3.1-8b"], "formats": ["bf16"], "gpus": ["h100"]}
    for bad, field in (([], "splits"), ([1] * 65, "splits"), ([2, 65_537], "splits[1]")):
        response = await client.post("/matrix", json={**one, "splits": bad})
        assert response.status_code == 400, response.text
        assert [e["field"] for e in response.json()["errors"]] == [field]
    for good in ([65_536], [1] * 64):  # the bounds themselves are accepted
        response = await client.post("/matrix", json={**one, "splits": good})
        assert response.status_code == 200, response.text
