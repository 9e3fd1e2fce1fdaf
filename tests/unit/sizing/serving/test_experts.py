"""Expert parallelism: whole experts per GPU, the busiest GPU's reads and copies, by hand."""

import math

import pytest

from service.offline import local_catalogue
from service.sizing.errors import SizingError
from service.sizing.serving.deploy import Deployment, step_costs
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.experts import (
    busiest_copies_factor,
    busiest_touched,
    expected_max_normal,
)
from service.sizing.serving.step import StepCosts, step_time
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.predict import predict_vllm

EFF = Efficiency(
    flops_fraction=0.7, bandwidth_fraction=0.9, step_overhead_s=0.004, allreduce_latency_s=0.0
)


def test_the_largest_of_n_normal_draws_has_its_textbook_mean() -> None:
    # One draw: its mean, 0. Two: E[max(X, Y)] = E|X - Y| / 2 = sqrt(2) x sqrt(2 / pi) / 2
    # = 1 / sqrt(pi) = 0.5641896. Three: 3 / (2 sqrt(pi)) = 0.8462844 (the textbook values).
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-7)
    assert expected_max_normal(3) == pytest.approx(3 / (2 * math.sqrt(math.pi)), abs=1e-7)


def test_the_busiest_gpu_reads_more_than_the_mean_and_at_most_its_experts() -> None:
    # 64 local experts, each touched with q = 15.5 / 128 = 0.12109375, over 2 GPUs: mean
    # 64 x q = 7.75; variance 7.75 x (1 - q) = 7.75 x 0.87890625 = 6.8115234, sd 2.6098895;
    # busiest 7.75 + 0.5641896 x 2.6098895 = 7.75 + 1.4724728 = 9.2224728.
    assert busiest_touched(64, 15.5 / 128, 2) == pytest.approx(9.2224728, rel=1e-6)
    # Every expert touched: no spread, all 64.
    assert busiest_touched(64, 1.0, 2) == 64
    # Copies: 8,192 tokens x 8 = 65,536 over 2 GPUs: 1 + 0.5641896 x sqrt(1 / 65,536)
    # = 1 + 0.5641896 / 256 = 1.0022039; with one GPU, 1.
    assert busiest_copies_factor(65_536, 2) == pytest.approx(1.0022039, rel=1e-7)
    assert busiest_copies_factor(65_536, 1) == 1.0


def moe(expert_parallel: int, per_expert: int) -> StepCosts:
    return StepCosts(
        tensor_parallel=2,
        layers=1,
        hidden_size=1024,
        dense_weight_bytes=10**9,
        expert_bytes_per_expert=per_expert,
        experts=128,
        experts_per_token=8,
        expert_parallel=expert_parallel,
        flops_per_token=1e9,
        attention_flops_per_context_token=0,
        kv_bytes_per_token=0,
        peak_flops_per_s=989e12,
        hbm_bytes_per_s=3.35e12,
    )


def test_an_expert_parallel_decode_step_waits_for_the_gpu_that_reads_the_most_experts() -> None:
    # The rule: with EP of e over the TP group a GPU holds E / e whole experts and reads those
    # the step's tokens touch; the step ends when the busiest GPU has read its own.
    # 128 experts of 1e8 B each, top-8, two decode tokens touch 128 x (1 - (120/128)^2) = 15.5.
    # Split over TP 2 (each GPU 0.5e8 B of every expert): 15.5 x 0.5e8 = 7.75e8 B, the mean.
    # EP 2 (64 whole experts a GPU): the busiest reads 9.2224728 (above) x 1e8 = 9.2224728e8 B.
    # Step: (1e9 + 9.2224728e8) B / (3.35e12 x 0.9 = 3.015e12 B/s) = 0.6375613 ms + 4 ms
    # overhead (no link: the all-reduces are free here); the split 1.775e9 / 3.015e12 =
    # 0.5887231 ms + 4 ms.
    def step(costs: StepCosts) -> float:
        return step_time(
            costs, EFF, prefill_tokens=0, prefill_context=0, decode_sequences=2, decode_context=0
        ).total_s

    assert step(moe(2, 10**8)) == pytest.approx(4.6375613e-3, rel=1e-6)
    assert step(moe(1, 10**8 // 2)) == pytest.approx(4.5887231e-3, rel=1e-6)


def _deepseek_costs(expert_parallel: int) -> StepCosts:
    cat = local_catalogue()
    model, gpu = cat.model("deepseek-r1"), cat.gpu("h200")
    config = EngineConfig(tensor_parallel_size=8, max_model_len=4096, quantization="fp8")
    d = Deployment(
        model=model,
        gpu=gpu,
        weight_format="fp8",
        tensor_parallel=8,
        expert_parallel=expert_parallel,
    )
    return step_costs(d, predict_vllm(model, gpu, config))


def test_expert_parallel_keeps_the_bytes_and_gathers_only_the_local_routed_copies() -> None:
    split, ep = _deepseek_costs(1), _deepseek_costs(8)
    # Each GPU holds 256 / 8 = 32 whole experts: one of them is 8 of the split's slices, and
    # the GPU's expert bytes are the same.
    assert ep.expert_bytes_per_expert == pytest.approx(8 * split.expert_bytes_per_expert, abs=8)
    assert ep.dense_weight_bytes == split.dense_weight_bytes
    # A token's routed copies' gather, write and sum back (3 hidden-sized vectors of 2 B each)
    # happen on the GPU of the copy's expert only: 8 copies x 3 x 7,168 x 2 B x (1 - 1/8)
    # = 301,056 B less per MoE layer, x 58 MoE layers (61 - 3 dense) = 17,461,248 B a token.
    assert split.activation_bytes_per_token - ep.activation_bytes_per_token == pytest.approx(
        17_461_248
    )
    assert (split.expert_parallel, ep.expert_parallel) == (1, 8)


def test_an_expert_parallel_size_must_divide_the_group_and_the_experts() -> None:
    with pytest.raises(SizingError):
        _deepseek_costs(3)
