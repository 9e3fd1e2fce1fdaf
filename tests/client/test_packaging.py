"""``pip install gpu-capacity-planner`` is the Python client: httpx and msgspec, no server.

The service's own dependencies (Litestar, SQLAlchemy, ...) are the ``server`` extra. Checked on
the metadata pip built when it installed this checkout (importlib.metadata: the Requires-Dist
lines, with their markers), on what those requirements pull in transitively among the installed
distributions, and on what importing the client really loads (a fresh interpreter's
sys.modules).
"""

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DIST = "gpu-capacity-planner"
SERVER_ONLY = {"litestar", "sqlalchemy", "advanced-alchemy", "alembic", "uvicorn", "psycopg"}
SERVER_MODULES = ("litestar", "sqlalchemy", "advanced_alchemy", "alembic", "uvicorn", "psycopg")


def _requirements(extra: str | None) -> set[str]:
    """The distribution's Requires-Dist names that apply with ``extra`` (None: a plain install)."""
    found = set()
    for line in importlib.metadata.requires(DIST) or []:
        req = Requirement(line)
        env = {"extra": extra or ""}
        if req.marker is None or req.marker.evaluate(env):
            found.add(canonicalize_name(req.name))
    return found


def _closure(names: set[str]) -> set[str]:
    """Every installed distribution a plain install of ``names`` brings, markers evaluated
    without extras (an uninstalled requirement of a requirement cannot be a server package
    here: the server packages are all installed in this environment)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


def test_a_plain_install_requires_httpx_and_msgspec_only() -> None:
    assert _requirements(None) == {"httpx", "msgspec"}
    assert {"litestar", "sqlalchemy"} <= _requirements("server")


def test_the_installed_metadata_is_this_checkouts() -> None:
    # A stale install (pyproject.toml changed since) would make the test above prove nothing.
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {canonicalize_name(Requirement(d).name) for d in declared} == _requirements(None)


def test_nothing_a_plain_install_pulls_in_is_a_server_package() -> None:
    brought = _closure(_requirements(None))
    assert {"httpx", "msgspec"} <= brought
    assert not brought & SERVER_ONLY, brought & SERVER_ONLY


def test_importing_the_client_loads_no_server_module() -> None:
    code = (
        "import sys, service.client; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *SERVER_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout
