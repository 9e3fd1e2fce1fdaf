"""The Python client and the CLI against a real running server (uvicorn on a free loopback port,
in a thread, on the module's freshly migrated database), and the CLI's local mode against it.

Retry behaviour (429/503 with Retry-After) is checked on an httpx MockTransport: a real server
cannot be made to answer 503 on cue; the waits go to a recording sleep, not the clock.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.__main__ import main
from service.client import (
    AsyncPlannerClient,
    BadRequest,
    NotFound,
    PlannerClient,
    RateLimited,
    Unavailable,
    Unreachable,
    retry_after_s,
)
from service.schemas.plan import PlanAnswer
from service.settings import Settings
from service.sizing.cost import CostedMatrix
from service.sizing.offload import Offload
from tests.loopback import served

ROOT = Path(__file__).resolve().parents[2]
# The seeds size on the marketed decimal GB ("80 GB x 0.9"); the service's default is driver.
SIX_STEP = {
    "model": "llama-3.1-70b",
    "gpu": "h100",
    "concurrency": 40,
    "context_tokens": 8192,
    "capacity_basis": "marketed",
}


@pytest.fixture
def base_url(settings: Settings) -> Iterator[str]:
    with served(settings) as url:
        yield url


def test_sync_client_answers_the_services_structs(base_url: str) -> None:
    # 141,107,412,992 B weights + 107,374,182,400 B KV in 4 x 68 GB: 23,518,404,608 B spare.
    with PlannerClient(base_url) as planner:
        answer = planner.plan(**SIX_STEP)
        assert isinstance(answer, PlanAnswer)
        assert (answer.gpu, answer.gpu_count, answer.spare_bytes) == ("h100-sxm", 4, 23_518_404_608)
        gpu = planner.gpu("h100")
        assert gpu.slug == "h100-sxm" and gpu.memory_bytes == 80 * 10**9
        assert planner.gpus().total == 13 and planner.models().total == 20  # MI355X: 0014
        assert planner.model("llama-3.1-70b").total_params == 70_553_706_496


async def test_async_client_matrix_and_offload(base_url: str) -> None:
    async with AsyncPlannerClient(base_url) as planner:
        m = await planner.matrix(models=["llama-3.1-70b"], formats=["fp8"], gpus=["h100"])
        assert isinstance(m, CostedMatrix)
        # FP8: 70,553,706,496 + 10,737,418,240 B KV = 81,291,124,736 B: 2 H100s (136 GB).
        assert m.rows[0].cells[0].gpu_count == 2
        o = await planner.offload(model="llama-3.1-70b", gpu="h100", resident_bytes=60 * 10**9)
        assert isinstance(o, Offload)
        # 141,107,412,992 - 60,000,000,000 B cross PCIe 5 x16 at 64 GB/s.
        assert o.offloaded_bytes == 81_107_412_992
        csv_text = await planner.plan_csv(model="llama-3.1-70b")
        assert csv_text.splitlines()[0].startswith("rank,model,gpu,")
        # The catalogue reads, async: the alias resolves; 13 GPUs and 20 models ship, so a
        # page of 2 starting at 12 holds the last GPU only.
        gpu = await planner.gpu("h100")
        assert (gpu.slug, gpu.memory_bytes) == ("h100-sxm", 80 * 10**9)
        assert (await planner.model("llama-3.1-70b")).total_params == 70_553_706_496
        page = await planner.gpus(limit=2, offset=12)
        assert (page.total, len(page.items)) == (13, 1)
        assert (await planner.models()).total == 20


def test_errors_carry_the_problem(base_url: str) -> None:
    with PlannerClient(base_url) as planner:
        with pytest.raises(NotFound) as unknown:
            planner.plan(model="llama-3.1-70b", gpu="h1000")
        assert unknown.value.status == 404 and unknown.value.fields == ["gpu"]
        assert unknown.value.problem is not None
        assert "h100-sxm" in unknown.value.problem.suggestions
        with pytest.raises(BadRequest) as bad:
            planner.gpus(limit=0)
        assert bad.value.fields == ["limit"]


def test_a_dead_server_is_unreachable() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    planner = PlannerClient(f"http://127.0.0.1:{port}", max_retries=0)
    with planner, pytest.raises(Unreachable):
        planner.gpus()


def _answers(*responses: httpx.Response) -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return seen, httpx.MockTransport(handle)


PROBLEM_503 = {"type": "about:blank", "title": "Service Unavailable", "status": 503, "detail": "db"}
PAGE = {"items": [], "limit": 500, "offset": 0, "total": 0}


def test_503_is_retried_after_retry_after() -> None:
    seen, transport = _answers(
        httpx.Response(503, json=PROBLEM_503, headers={"Retry-After": "2"}),
        httpx.Response(429, json={**PROBLEM_503, "status": 429}),
        httpx.Response(200, json=PAGE),
    )
    waits: list[float] = []
    with PlannerClient("http://planner", transport=transport, sleep=waits.append) as planner:
        assert planner.gpus().total == 0
    # Retry-After: 2 honoured; the 429 without one backs off 0.5 s x 2^1 = 1 s.
    assert waits == [2.0, 1.0] and len(seen) == 3


def test_retries_are_bounded() -> None:
    _, transport = _answers(*[httpx.Response(503, json=PROBLEM_503) for _ in range(3)])
    waits: list[float] = []
    with (
        PlannerClient(
            "http://planner", transport=transport, sleep=waits.append, max_retries=2
        ) as planner,
        pytest.raises(Unavailable) as failed,
    ):
        planner.gpus()
    assert waits == [0.5, 1.0]  # two retries, then the third 503 is raised
    assert failed.value.problem is not None and failed.value.problem.detail == "db"


def test_a_retry_after_that_is_no_number_is_ignored() -> None:
    # "²" (a latin-1 header byte) passes str.isdigit() but float() raises: the client read it
    # as delta-seconds and crashed; it is neither seconds nor an HTTP date, so it is absent.
    assert retry_after_s(httpx.Response(429, headers=[(b"Retry-After", b"\xb2")])) is None
    assert retry_after_s(httpx.Response(429, headers={"Retry-After": "7"})) == 7.0


def test_a_retry_after_beyond_the_bound_is_not_waited_for() -> None:
    _, transport = _answers(httpx.Response(429, headers={"Retry-After": "3600"}, text="slow"))
    waits: list[float] = []
    planner = PlannerClient("http://planner", transport=transport, sleep=waits.append)
    with planner, pytest.raises(RateLimited):
        planner.gpus()
    assert waits == []


async def test_the_async_client_retries_too() -> None:
    responses = [httpx.Response(503, headers={"Retry-After": "1"}), httpx.Response(200, json=PAGE)]

    async def handle(request: httpx.Request) -> httpx.Response:
        return responses.pop(0)

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with AsyncPlannerClient(
        "http://planner", transport=httpx.MockTransport(handle), sleep=sleep
    ) as planner:
        assert (await planner.gpus()).total == 0
    assert waits == [1.0]


# --- the CLI -------------------------------------------------------------------------------------

CLI_PLAN = [
    "plan",
    "llama-3.1-70b",
    "--gpu",
    "h100",
    "--format",
    "fp8",
    "--users",
    "40",
    "--capacity-basis",
    "marketed",
]


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv",
    [
        [*CLI_PLAN, "--context", "8192"],
        ["plan", "llama-3.1-70b", "--users", "40"],
        ["plan", "deepseek-v3", "--format", "fp8", "--gpu", "h200", "--context", "32768"],
        ["plan", "gpt-oss-120b", "--gpu", "h100"],  # no --format: the MXFP4 checkpoint
        ["matrix", "llama-3.1-70b", "mixtral-8x7b", "--format", "bf16", "--format", "int4"],
        ["offload", "llama-3.1-70b", "--gpu", "h100", "--count", "2", "--batch", "4"],
        ["plan", "llama-3.1-8b", "--gpu", "h100", "--method", "vllm", "--vllm-version", "0.19.0"],
        ["plan", "llama-3.1-70b", "--gpu", "mi355", "--format", "fp8"],  # MI355X: 0014
    ],
)
def test_the_cli_local_mode_equals_the_server(
    base_url: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    local = cli_json(capsys, *argv)
    remote = cli_json(capsys, *argv, "--url", base_url)
    assert local == remote


def test_the_cli_prints_a_readable_table(base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # FP8: 70,553,706,496 + 53,687,091,200 B in 2 x 68 GB: 11,759,202,304 B = 11.8 GB
    # (10.95 GiB) spare, 8.6%; per GPU 5,879,601,152 B.
    assert main([*CLI_PLAN, "--url", base_url]) == 0
    out = capsys.readouterr().out
    assert "2 x h100-sxm: tight, 11.8 GB (11.0 GiB) spare (8.6%)" in out
    assert "spare                    5,879,601,152   5.88   5.48" in out
    assert "warnings:" in out


def test_the_cli_prints_what_vllm_will_log(
    base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.19 on the catalogue H100 at 0.9: 76,524,128,985 B usable - 16,094,076,928 weights
    # (with the 32 MiB rotary cache) - 2,048,812,646 sampler peak - 257,698,038 non-torch =
    # 58,123,541,373 B of KV = 27,715 blocks of 2,097,152 B = 443,440 tokens.
    argv = ["plan", "llama-3.1-8b", "--gpu", "h100", "--method", "vllm", "--vllm-version", "0.19"]
    assert main([*argv, "--url", base_url]) == 0
    out = capsys.readouterr().out
    assert "(vLLM method, v1-0.19)" in out
    assert "GPU KV cache size: 443,440 tokens" in out
    assert "KV cache                  58,123,541,373  54.13" in out
    assert main(["plan", "llama-3.1-8b", "--gpu", "h100", "--vllm-version", "0.19.0"]) == 2
    assert "goes with --method vllm" in capsys.readouterr().err


def test_the_cli_plans_deepseek_v3_fp8_on_two_h100_servers_like_the_service(
    base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The FP8 checkpoint's 673,150,552,416 B / 8 = 84,143,819,052 B per H100 > 68 GB: the
    # default ladder's 16 GPUs, 2 nodes of TP 8; per GPU 68 GB - 673,150,552,416 / 16
    # (42,071,909,526) B of weights - 8 x 8,192 x 31 x 576 B (1,170,210,816) of latent KV
    # = 24,757,879,658 B spare.
    argv = ["plan", "deepseek-v3", "--gpu", "h100", "--format", "fp8"]
    argv += ["--capacity-basis", "marketed"]
    local = cli_json(capsys, *argv)
    assert local == cli_json(capsys, *argv, "--url", base_url)
    assert (local["gpu_count"], local["tensor_parallel"], local["pipeline_parallel"]) == (16, 8, 2)
    assert local["per_gpu"]["spare_bytes"] == 24_757_879_658
    matrix = cli_json(capsys, "matrix", "deepseek-v3", "--format", "fp8", "--gpu", "h100")
    cell = matrix["rows"][0]["cells"][0]
    assert (cell["gpu_count"], cell["pipeline_parallel"]) == (16, 2)


def test_the_cli_names_bad_input(base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "llama-3.1-70b", "--gpu", "h1000"]) == 2
    assert "closest: h100-sxm" in capsys.readouterr().err
    assert main(["plan", "llama-3.1-70b", "--gpu", "h1000", "--url", base_url]) == 2
    err = capsys.readouterr().err
    assert "404" in err and "gpu: no gpu 'h1000'" in err
    assert main(["plan", "llama-3.1-70b", "--users", "0"]) == 2
    assert "concurrency" in capsys.readouterr().err


def test_python_m_service_plan_runs_without_a_server_or_database(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'absent.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "service", *CLI_PLAN, "--context", "8192"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "2 x h100-sxm: tight" in done.stdout
    assert not (tmp_path / "absent.db").exists()  # no database was touched


async def test_both_clients_agree(base_url: str) -> None:
    def sync_plan() -> PlanAnswer:
        with PlannerClient(base_url) as planner:
            answer = planner.plan(**SIX_STEP)
            assert isinstance(answer, PlanAnswer)
            return answer

    async with AsyncPlannerClient(base_url) as planner:
        async_answer = await planner.plan(**SIX_STEP)
    assert await asyncio.to_thread(sync_plan) == async_answer


def test_the_cli_plans_a_config_json_locally_and_remotely_alike(
    base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # gpt-oss-120b as published, in MXFP4 on one H100: 65,248,815,744 B of weights and
    # 8 x (18,432 x 8,192 + 18,432 x 128) = 1,226,833,920 B of FP8 KV in 68 GB.
    config = Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "gpt-oss-120b.json"
    argv = ["plan", "--config", str(config), "--gpu", "h100", "--format", "mxfp4"]
    argv += ["--capacity-basis", "marketed"]
    local = cli_json(capsys, *argv)
    assert local == cli_json(capsys, *argv, "--url", base_url)
    assert local["model"] == "gpt-oss-120b"  # named after the file
    assert local["weights_bytes"] == 65_248_815_744
    assert local["spare_bytes"] == 68 * 10**9 - 65_248_815_744 - 1_226_833_920
    assert main(["plan", "llama-3.1-70b", "--config", str(config)]) == 2
    assert "not both" in capsys.readouterr().err
