"""/healthz and /readyz."""

from pathlib import Path

from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db import head_revision
from service.settings import Settings


async def test_healthz_and_readyz(client: AsyncTestClient[Litestar]) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "revision": head_revision()}


async def test_readyz_is_503_before_migrations(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    async with AsyncTestClient(app=create_app(settings)) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "head is" in response.json()["detail"]
