"""The chat ``speed`` command and ``plan ... serve``: parsed without I/O, then answered through
POST /chatops/slack (the serving figures are the model's own; here, their presence and shape)."""

import pytest

from service.chatops.commands import PlanCommand, SpeedCommand, Unparsed, parse
from tests.chatops.test_slack import Client, app, ask, everything

__all__ = ["app"]  # the signed app fixture of test_slack


def test_speed_parses_the_deployment_lengths_and_points() -> None:
    assert parse("speed qwen3-8b on 2 h100 fp8 2k/300 users 1 8 64") == SpeedCommand(
        model="qwen3-8b",
        gpu="h100",
        gpu_count=2,
        weight_format="fp8",
        input_tokens=2048,
        output_tokens=300,
        concurrencies=(1, 8, 64),
    )
    rates = parse("speed qwen3-8b on h100 rps 0.5, 2, 10")
    assert isinstance(rates, SpeedCommand) and rates.request_rates_per_s == (0.5, 2.0, 10.0)


@pytest.mark.parametrize(
    "text",
    ["speed qwen3-8b", "speed qwen3-8b on h100 users 1 rps 2", "speed qwen3-8b on h100 users 1.5"],
)
def test_speed_without_its_parts_says_why(text: str) -> None:
    assert isinstance(parse(text), Unparsed)


def test_plan_takes_the_traffic_after_serve() -> None:
    # 50ms -> 0.05 s, 1s -> 1 s; 2k = 2,048 prompt tokens.
    c = parse("plan qwen3-8b on h100 serve 40/s 2k/300 tpot 50ms ttft 1s")
    assert isinstance(c, PlanCommand)
    assert c.traffic == {
        "requests_per_s": 40.0,
        "input_tokens": 2048,
        "output_tokens": 300,
        "tpot_s": 0.05,
        "ttft_s": 1.0,
    }
    assert isinstance(parse("plan qwen3-8b serve fast"), Unparsed)
    assert isinstance(parse("plan qwen3-8b serve 40 tpot soon"), Unparsed)


async def test_speed_answers_a_table_of_the_points(client: Client) -> None:
    answer = await ask(client, "speed qwen3-8b on h100 2000/300 users 1 8 64")
    text = everything(answer)
    assert "output tokens/s" in str(answer["text"])
    table = text.split("```")[1].strip().splitlines()
    assert table[0].split()[:3] == ["users", "TTFT", "TPOT"]
    assert [line.split()[0] for line in table[1:]] == ["1", "8", "64"]


async def test_plan_with_serve_adds_the_traffic_and_why_not_cheaper(client: Client) -> None:
    answer = await ask(client, "plan qwen3-8b serve 40/s 2000/300 tpot 50ms")
    text = everything(answer)
    assert "*Traffic*:" in text and "GPUs" in text
    assert "/plan.svg?" in text and "traffic" not in text.split("/plan.svg?")[1]


async def test_a_deployment_that_does_not_start_is_a_message(client: Client) -> None:
    answer = await ask(client, "speed llama-3.1-70b on l40s bf16")
    assert "tensor_parallel" in str(answer["text"])
