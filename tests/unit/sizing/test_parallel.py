"""Splits (part 7, "What if it does not fit on one GPU?")."""

import pytest

from service.sizing.errors import SizingError
from service.sizing.models import ModelSpec
from service.sizing.parallel import (
    default_splits,
    even_shares,
    kv_heads_per_gpu,
    split_for,
    split_problem,
    stage_layers,
    tensor_parallel_problem,
)
from tests.unit.sizing.specs import DEEPSEEK_V3, LLAMA_70B, QWEN25_7B


def test_one_node_is_pure_tensor_parallel() -> None:
    split = split_for(8, gpus_per_node=8)
    assert (split.tensor_parallel, split.pipeline_parallel, split.nodes) == (8, 1, 1)


def test_beyond_one_node_pipeline_stages_split_the_layers_across_nodes() -> None:
    split = split_for(16, gpus_per_node=8)
    assert (split.tensor_parallel, split.pipeline_parallel, split.nodes) == (8, 2, 2)


def test_a_partial_second_node_is_refused() -> None:
    with pytest.raises(SizingError) as info:
        split_for(12, gpus_per_node=8)
    assert info.value.field == "splits"


def test_split_refused_when_heads_do_not_divide() -> None:
    # Qwen2.5-7B has 28 attention heads: 28 / 8 is not whole.
    assert tensor_parallel_problem(QWEN25_7B, 8) == (
        "28 attention heads do not divide into 8 equal slices"
    )
    assert tensor_parallel_problem(QWEN25_7B, 4) is None
    assert tensor_parallel_problem(QWEN25_7B, 2) is None


def test_split_refused_when_kv_heads_neither_divide_nor_replicate() -> None:
    model = ModelSpec(
        slug="odd",
        total_params=1,
        layers=1,
        hidden_size=48 * 64,
        attention_heads=48,
        kv_heads=6,
        max_context_tokens=1024,
    )
    # 48 % 4 == 0, but 6 % 4 != 0 and 4 % 6 != 0.
    assert "KV heads" in (tensor_parallel_problem(model, 4) or "")
    assert tensor_parallel_problem(model, 12) is None  # 12 % 6 == 0: each head twice


def test_llama_70b_at_tp_16_replicates_its_8_kv_heads() -> None:
    assert tensor_parallel_problem(LLAMA_70B, 16) is None
    assert kv_heads_per_gpu(LLAMA_70B, 16) == 1
    assert kv_heads_per_gpu(LLAMA_70B, 4) == 2


def test_mla_needs_only_the_query_heads_to_divide() -> None:
    assert tensor_parallel_problem(DEEPSEEK_V3, 8) is None
    assert tensor_parallel_problem(DEEPSEEK_V3, 3) is not None


def test_stages_take_contiguous_runs_of_layers_busiest_first() -> None:
    stages = stage_layers(DEEPSEEK_V3, 2)
    assert [len(s) for s in stages] == [31, 30]


def test_more_stages_than_layers_is_refused() -> None:
    model = ModelSpec(
        slug="tiny",
        total_params=10,
        layers=2,
        hidden_size=64,
        attention_heads=8,
        kv_heads=8,
        max_context_tokens=64,
    )
    assert split_problem(model, split_for(32, 8)) is not None


def test_even_shares_add_up_exactly() -> None:
    assert even_shares(10, 4) == [3, 3, 2, 2]
    assert sum(even_shares(141_107_412_993, 16)) == 141_107_412_993


def test_default_ladder_is_1_2_4_8_in_a_node_then_2_and_4_nodes_of_pipeline_stages() -> None:
    # Seed: "Splits come in 1, 2, 4 or 8"; beyond one server, whole servers as pipeline stages
    # ("or two servers"), doubling up to four: 2 x 8 = 16, 4 x 8 = 32.
    assert default_splits(8) == (1, 2, 4, 8, 16, 32)
    # The catalogue's gpus_per_node bounds the node: 4 per node -> 1, 2, 4, then 8 and 16.
    assert default_splits(4) == (1, 2, 4, 8, 16)
    # A node that is not a power of two (GB200 NVL72: 72) is tried whole, then 144 and 288.
    assert default_splits(72) == (1, 2, 4, 8, 16, 32, 64, 72, 144, 288)
    assert default_splits(8, max_nodes=16) == (1, 2, 4, 8, 16, 32, 64, 128)
