"""The client's speed() and traffic on plan/matrix, and the CLI's speed command, against a real
running server; the CLI's local mode must answer what the server answers."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.__main__ import main
from service.client import AsyncPlannerClient, PlannerClient, Unprocessable
from service.schemas.compute import TrafficMatrix
from service.schemas.plan import PlanAnswer
from service.schemas.speed import SpeedAnswer
from service.settings import Settings
from service.sizing.cost import CostedMatrix
from tests.loopback import served

SWEEP = {
    "model": "qwen3-8b",
    "gpu": "h100",
    "input_tokens": 1000,
    "output_tokens": 200,
    "concurrencies": [1, 8],
}
TRAFFIC = {"requests_per_s": 20, "input_tokens": 1000, "output_tokens": 200, "tpot_s": 0.05}


@pytest.fixture
def base_url(settings: Settings) -> Iterator[str]:
    with served(settings) as url:
        yield url


def test_speed_answers_the_clients_own_structs(base_url: str) -> None:
    with PlannerClient(base_url) as planner:
        report = planner.speed(**SWEEP)
        assert isinstance(report, SpeedAnswer)
        assert [r.concurrency for r in report.rows] == [1, 8]
        assert report.rows[1].output_tokens_per_s == pytest.approx(
            report.rows[1].requests_per_s * 200
        )
        sheet = planner.speed_csv(**SWEEP)
        assert sheet.splitlines()[0].startswith("concurrency,request_rate_per_s,ttft_s,")
        with pytest.raises(Unprocessable) as bad:
            planner.speed(**{**SWEEP, "tensor_parallel": 3})
        assert bad.value.fields == ["tensor_parallel"]


async def test_traffic_on_plan_and_matrix_through_the_async_client(base_url: str) -> None:
    async with AsyncPlannerClient(base_url) as planner:
        answer = await planner.plan(model="qwen3-8b", gpu="h100", traffic=TRAFFIC)
        assert isinstance(answer, PlanAnswer) and answer.traffic is not None
        chosen = answer.traffic.chosen
        assert chosen is not None and chosen.replicas is not None
        assert chosen.requests_per_s_per_replica is not None
        assert chosen.replicas * chosen.requests_per_s_per_replica == pytest.approx(20)
        m = await planner.matrix(
            models=["qwen3-8b"], formats=["bf16"], gpus=["h100"], traffic=TRAFFIC
        )
        assert isinstance(m, TrafficMatrix)
        t = m.rows[0].cells[0].traffic
        assert t is not None and t.feasible
        assert t.gpu_count == (t.replicas or 0) * (t.tensor_parallel or 0)
        plain = await planner.matrix(models=["qwen3-8b"], formats=["bf16"], gpus=["h100"])
        assert isinstance(plain, CostedMatrix)
        report = await planner.speed(**{**SWEEP, "concurrencies": None, "request_rates_per_s": [1]})
        assert report.loop == "open" and report.rows[0].stable


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv",
    [
        ["speed", "qwen3-8b", "--gpu", "h100", "--concurrency", "1,8,64"],
        ["speed", "qwen3-8b", "--gpu", "h100", "--tp", "2", "--rate", "0.5,5", "--input", "2000"],
        ["plan", "qwen3-8b", "--gpu", "h100", "--rps", "40", "--tpot", "0.05"],
    ],
)
def test_the_cli_local_mode_equals_the_server(
    base_url: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    local = cli_json(capsys, *argv)
    remote = cli_json(capsys, *argv, "--url", base_url)
    assert local == remote


def test_the_cli_prints_the_sweep_and_the_traffic(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speed", "qwen3-8b", "--gpu", "h100", "--concurrency", "1,8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[:3] == ["users", "TTFT", "TPOT"]
    assert main(["plan", "qwen3-8b", "--gpu", "h100", "--rps", "40"]) == 0
    assert "traffic: " in capsys.readouterr().out


def test_the_cli_names_bad_sweeps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speed", "qwen3-8b", "--gpu", "h100", "--concurrency", "0"]) == 2
    assert "concurrencies" in capsys.readouterr().err
    assert main(["speed", "qwen3-8b", "--gpu", "h100", "--rate", "fast"]) == 2
    assert "rate" in capsys.readouterr().err
    assert main(["plan", "qwen3-8b", "--tpot", "0.05"]) == 2
    assert "--rps" in capsys.readouterr().err
