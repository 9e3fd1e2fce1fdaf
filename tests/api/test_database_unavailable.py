"""A database that does not answer is a 503 with Retry-After on every read that needs it (the
catalogue lists included): only a real constraint violation is a 409 (the client must not
retry it), a lost or unreachable database is a 503 (the client may)."""

from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import Settings

RETRY_AFTER_S = 7
CATALOGUE_LISTS = ["/gpus", "/models", "/formats", "/interconnects"]


@pytest.mark.parametrize("path", CATALOGUE_LISTS)
async def test_catalogue_lists_are_503_with_retry_after_when_the_database_is_gone(
    tmp_path: Path, path: str
) -> None:
    # SQLite cannot open a directory as its database file: every connection attempt fails
    # (sqlite3.OperationalError "unable to open database file"), as a vanished volume does.
    gone = tmp_path / "planner.db"
    gone.mkdir()
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{gone}",
        retry_after_s=RETRY_AFTER_S,
        rate_limit_per_minute=0,
    )
    async with AsyncTestClient(app=create_app(settings)) as client:
        response = await client.get(path)
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.headers["retry-after"] == str(RETRY_AFTER_S)
    assert response.json()["type"] == "urn:gpu-planner:database-unavailable"
