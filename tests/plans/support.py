"""Shared by the saved-plan tests: the seeds' six-step plan and a cast of API keys."""

from typing import Any

import msgspec
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.conftest import new_key

Client = AsyncTestClient[Litestar]
GB = 10**9
GiB = 2**30

SIX_STEP = {
    "model": "llama-3.1-70b",
    "gpu": "h100",
    "concurrency": 40,
    "context_tokens": 8192,
    "capacity_basis": "marketed",
}
"""The seeds' step-by-step example: Llama 3.1 70B, 40 conversations of 8,192 tokens, bf16, on
the seeds' marketed capacity basis (the service's default is driver)."""
# By hand, with the catalogue's exact 70,553,706,496 parameters: weights 2 B each =
# 141,107,412,992 B; KV 2 (K and V) x 80 layers x 8 KV heads x 128 dims x 2 B = 327,680 B per
# token, x 40 x 8,192 = 107,374,182,400 B; together 248,481,595,392 B. One H100 holds
# 80 GB x 0.9 - 4 GB = 68 GB; 2 hold 136 GB (short); 4 hold 272 GB: 23,518,404,608 B spare.
SIX_STEP_NEEDED_BYTES = 141_107_412_992 + 107_374_182_400
SIX_STEP_GPU_COUNT = 4
SIX_STEP_SPARE_BYTES = 4 * 68 * GB - SIX_STEP_NEEDED_BYTES
assert SIX_STEP_SPARE_BYTES == 23_518_404_608


class Cast(msgspec.Struct):
    """One key per person; roles as named."""

    alice: dict[str, str]  # planner, the usual author
    carol: dict[str, str]  # planner, not the author
    bob: dict[str, str]  # reviewer
    dave: dict[str, str]  # reviewer
    rita: dict[str, str]  # reviewer who also writes plans
    vic: dict[str, str]  # viewer
    admin: dict[str, str]


async def cast(database_url: str, suffix: str = "") -> Cast:
    """Principals get ``suffix`` so each test module's people are its own."""

    async def key(role: str, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {await new_key(database_url, role, name + suffix)}"}

    return Cast(
        alice=await key("planner", "alice"),
        carol=await key("planner", "carol"),
        bob=await key("reviewer", "bob"),
        dave=await key("reviewer", "dave"),
        rita=await key("reviewer", "rita"),
        vic=await key("viewer", "vic"),
        admin=await key("admin", "admin"),
    )


def body(name: str = "70B chat on H100", **request: Any) -> dict[str, Any]:
    return {"name": name, "notes": "", "request": {**SIX_STEP, **request}}


async def create(client: Client, headers: dict[str, str], payload: dict[str, Any]) -> Any:
    response = await client.post("/plans", json=payload, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


async def act(
    client: Client,
    method: str,
    path: str,
    headers: dict[str, str],
    version: int | None,
    json: dict[str, Any] | None = None,
) -> Any:
    """A write with If-Match: the given version (None: no If-Match at all)."""
    extra = {} if version is None else {"If-Match": f'"{version}"'}
    return await client.request(method, path, json=json, headers={**headers, **extra})
