"""service.db.migrate: a benchmark's quiet migration."""

import logging
import sqlite3
from pathlib import Path

import pytest

from service.db import downgrade, head_revision, migrate


def test_a_quiet_migration_prints_no_revision_lines(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Not quiet, alembic.ini's logging prints a line per revision (with its docstring); quiet,
    # none, even after that configuration, and the logger's level is given back.
    url = f"sqlite+aiosqlite:///{tmp_path / 'quiet.db'}"
    migrate(url)
    assert "Running upgrade 0015 -> 0016" in capfd.readouterr().err
    downgrade(url, "0015")
    capfd.readouterr()
    level = logging.getLogger("alembic").level
    migrate(url, quiet=True)
    assert "Running upgrade" not in capfd.readouterr().err
    assert logging.getLogger("alembic").level == level
    with sqlite3.connect(tmp_path / "quiet.db") as db:  # and it did migrate
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (head_revision(),)
        ]
