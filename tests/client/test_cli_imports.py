"""The offline CLI plans without the server's stack: no ORM, no web framework."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_ONLY = ("sqlalchemy", "litestar", "advanced_alchemy", "alembic")


def imported_by(*argv: str, modules: bool = False) -> set[str]:
    """The top-level packages ``python -m service ARGV`` imports (python -X importtime); with
    ``modules``, every module's full name."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "service", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    full = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    names = {name.split(".")[0] for name in full}
    assert "msgspec" in names  # the report was read
    return full if modules else names


def test_an_offline_plan_imports_no_orm_and_no_web_framework() -> None:
    names = imported_by("plan", "llama-3.1-70b", "--gpu", "h100")
    assert names.isdisjoint(SERVER_ONLY), sorted(names & set(SERVER_ONLY))


def test_an_offline_matrix_and_a_ranked_plan_neither() -> None:
    assert imported_by("matrix", "llama-3.1-8b", "--gpu", "h100").isdisjoint(SERVER_ONLY)
    assert imported_by("plan", "llama-3.1-70b", "--json").isdisjoint(SERVER_ONLY)


MODELS_NOT_USED = ("service.sizing.serving.loop", "service.sizing.vllm.predict")
"""The serving model and the vLLM method's core: a seed plan's answer names their types only."""


def test_an_offline_seed_plan_imports_neither_the_serving_model_nor_the_vllm_method() -> None:
    names = imported_by("plan", "llama-3.1-70b", "--gpu", "h100", modules=True)
    assert names.isdisjoint(MODELS_NOT_USED), sorted(names & set(MODELS_NOT_USED))
    assert "service.sizing.plan" in names  # the seed method's core is what it runs


def test_a_vllm_plan_does_import_the_vllm_method() -> None:
    """The check can fail: the same report names the module when the plan needs it."""
    names = imported_by("plan", "llama-3.1-8b", "--gpu", "h100", "--method", "vllm", modules=True)
    assert "service.sizing.vllm.predict" in names


def test_the_server_does_import_them() -> None:
    """The check can fail: the API spec is built by the app, which imports all four."""
    assert set(SERVER_ONLY) <= imported_by("openapi")
