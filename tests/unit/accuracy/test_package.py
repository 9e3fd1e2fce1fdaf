"""The accuracy reports run from an installed package (the Docker image has no tests/): their
cases live in service/accuracy/cases and pyproject.toml ships every one as package data."""

import tomllib
from pathlib import Path

import service
from service.accuracy.serving import RUNS_DIR
from service.accuracy.vllm import CASES_DIR

PACKAGE = Path(service.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def test_the_cases_are_inside_the_package() -> None:
    assert CASES_DIR.is_relative_to(PACKAGE) and RUNS_DIR.is_relative_to(PACKAGE)


def test_every_case_file_is_package_data() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]
    globs = data["package-data"]["service.accuracy"]
    root = PACKAGE / "accuracy"
    files = {p for p in (root / "cases").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    shipped = {p for pattern in globs for p in root.glob(pattern) if p.is_file()}
    assert files and files - shipped == set()
