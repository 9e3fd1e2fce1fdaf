"""The chat command language, parsed without a database."""

import pytest

from service.chatops.commands import (
    HelpCommand,
    ListCommand,
    MatrixCommand,
    OffloadCommand,
    PlanCommand,
    Unparsed,
    parse,
)


def test_the_six_step_example_parses_into_its_parts() -> None:
    assert parse("plan llama-3.1-70b on h100 bf16 40x8192") == PlanCommand(
        model="llama-3.1-70b", gpu="h100", weight_format="bf16", concurrency=40, context_tokens=8192
    )


def test_plan_parts_come_in_any_order_and_k_is_1024_tokens() -> None:
    # 8k = 8 x 1024 = 8,192 tokens.
    assert parse("PLAN Llama-3.1-70B 40x8k fp8 on 4 H100") == PlanCommand(
        model="llama-3.1-70b",
        gpu="h100",
        gpu_count=4,
        weight_format="fp8",
        concurrency=40,
        context_tokens=8192,
    )


def test_plan_without_a_gpu_ranks_and_takes_by() -> None:
    assert parse("plan llama-3.1-70b") == PlanCommand(model="llama-3.1-70b")
    assert parse("plan llama-3.1-70b by hourly").rank_by == "hourly_cost"  # type: ignore[union-attr]
    assert parse("plan llama-3.1-70b by buy").rank_by == "purchase_cost"  # type: ignore[union-attr]


def test_the_other_commands() -> None:
    assert parse("matrix llama-3.1-70b") == MatrixCommand(model="llama-3.1-70b")
    assert parse("matrix llama-3.1-70b fp8 int4") == MatrixCommand(
        model="llama-3.1-70b", formats=("fp8", "int4")
    )
    assert parse("offload llama-3.1-70b on 1 h100") == OffloadCommand(
        model="llama-3.1-70b", gpu="h100", gpu_count=1
    )
    assert parse("offload llama-3.1-70b on h100 fp8") == OffloadCommand(
        model="llama-3.1-70b", gpu="h100", weight_format="fp8"
    )
    assert parse("gpus") == ListCommand(what="gpus")
    assert parse("models") == ListCommand(what="models")
    assert parse("help") == HelpCommand()
    assert parse("   ") == HelpCommand()


@pytest.mark.parametrize(
    "text",
    [
        "frobnicate",
        "plan",
        "plan llama-3.1-70b on",
        "plan llama-3.1-70b on 0 h100",
        "plan llama-3.1-70b bf16 fp8",
        "plan llama-3.1-70b 40x8192 8x100",
        "plan llama-3.1-70b by speed",
        "matrix",
        "offload llama-3.1-70b",
        "offload llama-3.1-70b h100",
        "offload llama-3.1-70b on 1 h100 bf16 extra",
        "gpus please",
    ],
)
def test_text_that_is_not_a_command_says_why(text: str) -> None:
    answer = parse(text)
    assert isinstance(answer, Unparsed) and answer.reason


def test_a_capacity_basis_word_goes_anywhere_after_the_model() -> None:
    assert parse("plan llama-3.1-70b marketed on h100 bf16") == PlanCommand(
        model="llama-3.1-70b", gpu="h100", weight_format="bf16", capacity_basis="marketed"
    )
    assert parse("matrix llama-3.1-70b fp8 driver") == MatrixCommand(
        model="llama-3.1-70b", formats=("fp8",), capacity_basis="driver"
    )
    assert parse("offload llama-3.1-70b on 1 h100 marketed") == OffloadCommand(
        model="llama-3.1-70b", gpu="h100", capacity_basis="marketed"
    )
    # Without the word, the service's default (None here).
    assert parse("plan llama-3.1-70b").capacity_basis is None  # type: ignore[union-attr]
    assert isinstance(parse("plan llama-3.1-70b marketed driver"), Unparsed)
