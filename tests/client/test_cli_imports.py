"""The offline CLI plans without the server's stack: no ORM, no web framework."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_ONLY = ("sqlalchemy", "litestar", "advanced_alchemy", "alembic")


def imported_by(*argv: str) -> set[str]:
    """The top-level packages ``python -m service ARGV`` imports (python -X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "service", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    names = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "msgspec" in names  # the report was read
    return names


def test_an_offline_plan_imports_no_orm_and_no_web_framework() -> None:
    names = imported_by("plan", "llama-3.1-70b", "--gpu", "h100")
    assert names.isdisjoint(SERVER_ONLY), sorted(names & set(SERVER_ONLY))


def test_an_offline_matrix_and_a_ranked_plan_neither() -> None:
    assert imported_by("matrix", "llama-3.1-8b", "--gpu", "h100").isdisjoint(SERVER_ONLY)
    assert imported_by("plan", "llama-3.1-70b", "--json").isdisjoint(SERVER_ONLY)


def test_the_server_does_import_them() -> None:
    """The check can fail: the API spec is built by the app, which imports all four."""
    assert set(SERVER_ONLY) <= imported_by("openapi")
