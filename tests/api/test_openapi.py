"""The checked-in spec is the live one, and every operation documents its problems."""

import json
from pathlib import Path

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
