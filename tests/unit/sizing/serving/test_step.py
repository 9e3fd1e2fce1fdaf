"""One engine step's time: the roofline of each kernel family plus the fixed costs, by hand."""

import msgspec
import pytest

from service.sizing.decode import distinct_experts
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.step import StepCosts, step_time

# Qwen3-8B (catalogue row): 8,190,735,360 parameters, 36 layers, 32 heads of 128, 8 KV heads.
QWEN3_8B_PARAMS = 8_190_735_360
QWEN3_8B_WEIGHTS = 2 * QWEN3_8B_PARAMS  # BF16: 16,381,470,720 B
QWEN3_8B_KV_PER_TOKEN = 36 * 8 * 128 * 2 * 2  # layers x KV heads x head_dim x (K, V) x 2 B
QWEN3_8B_ATTENTION = 4 * 32 * 128 * 36  # FLOPs per context token: QK^T and AV, per layer

H100 = {"peak_flops_per_s": 989e12, "hbm_bytes_per_s": 3.35e12}
EFF = Efficiency(
    flops_fraction=0.7, bandwidth_fraction=0.9, step_overhead_s=0.004, allreduce_latency_s=0.0
)


def qwen3_8b(tp: int = 1, link: float = 0.0) -> StepCosts:
    return StepCosts(
        tensor_parallel=tp,
        layers=36,
        hidden_size=4096,
        dense_weight_bytes=QWEN3_8B_WEIGHTS // tp,
        flops_per_token=2 * QWEN3_8B_PARAMS / tp,
        attention_flops_per_context_token=QWEN3_8B_ATTENTION / tp,
        kv_bytes_per_token=QWEN3_8B_KV_PER_TOKEN / tp,
        link_bytes_per_s=link,
        peak_flops_per_s=H100["peak_flops_per_s"],
        hbm_bytes_per_s=H100["hbm_bytes_per_s"],
    )


def test_one_sequence_of_decode_is_bound_by_reading_the_weights_and_its_kv() -> None:
    # Qwen3-8B BF16 on one H100, one sequence at 1,000 tokens of context:
    # weights 16,381,470,720 B / (3.35e12 x 0.9 = 3.015e12 B/s) = 5.43332 ms;
    # KV 1,000 x 147,456 B = 147,456,000 B / 3.015e12 = 0.048907 ms (its FLOPs, 1,000 x
    # 589,824 = 5.9e8, take 0.0012 ms at 692.3 TFLOPS: the bytes bound it);
    # GEMM FLOPs 2 x 8.19e9 = 1.638e10 / (989e12 x 0.7) = 0.02366 ms < the weights' 5.433 ms;
    # step = 5.43332 + 0.04891 + 4 (overhead) = 9.48223 ms.
    t = step_time(
        qwen3_8b(),
        EFF,
        prefill_tokens=0,
        prefill_context=0,
        decode_sequences=1,
        decode_context=1000,
    )
    assert t.total_s == pytest.approx(9.48223e-3, rel=1e-5)
    assert t.bound == "hbm-bandwidth"


def test_a_full_prefill_chunk_is_bound_by_flops() -> None:
    # 8,192 prompt tokens attending to no earlier context: 8,192 x 1.638147e10 FLOPs =
    # 1.341970e14 / 6.923e14 FLOP/s = 193.842 ms, far above the weights' 5.433 ms;
    # step = 193.842 + 4 = 197.842 ms.
    t = step_time(
        qwen3_8b(),
        EFF,
        prefill_tokens=8192,
        prefill_context=0,
        decode_sequences=0,
        decode_context=0,
    )
    assert t.total_s == pytest.approx(197.842e-3, rel=1e-5)
    assert t.bound == "compute"


def test_a_split_over_pcie_pays_far_more_for_its_all_reduces_than_over_nvlink() -> None:
    # TP 2, a step of 8,192 tokens: two all-reduces per layer of 8,192 x 4,096 x 2 B =
    # 67,108,864 B, of which a ring sends 2 (2 - 1) / 2 = 1x over each link:
    # PCIe 4.0 x16 at 32e9 B/s: 2.097152 ms each, x 72 = 150.995 ms;
    # NVLink 4 at 450e9 B/s: 0.149131 ms each, x 72 = 10.7374 ms.
    def comm(link: float) -> float:
        return step_time(
            qwen3_8b(tp=2, link=link),
            EFF,
            prefill_tokens=8192,
            prefill_context=0,
            decode_sequences=0,
            decode_context=0,
        ).interconnect_s

    assert comm(32e9) == pytest.approx(150.995e-3, rel=1e-5)
    assert comm(450e9) == pytest.approx(10.7374e-3, rel=1e-5)


def test_a_moe_step_reads_only_the_experts_its_tokens_touch() -> None:
    # E x (1 - (1 - k/E)^T), E = 128, k = 8: one token 8 experts; two 128 x (1 - (120/128)^2)
    # = 128 x 0.12109375 = 15.5; ten thousand tokens all 128.
    assert distinct_experts(128, 8, 1) == pytest.approx(8)
    assert distinct_experts(128, 8, 2) == pytest.approx(15.5)
    assert distinct_experts(128, 8, 10_000) == pytest.approx(128)
    # The step reads the dense part plus 15.5 experts of 1e8 B: (1e9 + 1.55e9) B / 3.015e12
    # = 0.845771 ms, + 4 ms overhead (the FLOPs, 2 tokens x 1e9, are negligible).
    moe = StepCosts(
        tensor_parallel=1,
        layers=1,
        hidden_size=1024,
        dense_weight_bytes=10**9,
        expert_bytes_per_expert=10**8,
        experts=128,
        experts_per_token=8,
        flops_per_token=1e9,
        attention_flops_per_context_token=0,
        kv_bytes_per_token=0,
        peak_flops_per_s=H100["peak_flops_per_s"],
        hbm_bytes_per_s=H100["hbm_bytes_per_s"],
    )
    t = step_time(
        moe, EFF, prefill_tokens=0, prefill_context=0, decode_sequences=2, decode_context=0
    )
    assert t.total_s == pytest.approx(4.845771e-3, rel=1e-5)


def test_the_experts_kernels_gain_efficiency_with_tokens_per_expert() -> None:
    # The MoE of the test above, with expert_efficiency 0.7 and expert_half_tokens 2. Two
    # decode tokens touch 15.5 experts: 2 x 8 / 15.5 = 1.032258 tokens each, so the grouped
    # GEMMs reach 0.7 x 1.032258 / (1.032258 + 2) = 0.238298 of the dense fractions. Experts
    # 15.5 x 1e8 B / (3.015e12 x 0.238298) = 2.157372 ms (their FLOPs, 2 x 0 here, do not
    # count: expert_flops_per_token is 0); dense 1e9 / 3.015e12 = 0.331675 ms; + 4 ms.
    # At 10,000 tokens all 128 experts: 10,000 x 8 / 128 = 625 tokens each, 0.7 x 625 / 627 =
    # 0.697767: 128 x 1e8 / (3.015e12 x 0.697767) = 6.084321 ms; the dense GEMMs'
    # 10,000 x 1e9 FLOPs / 692.3e12 = 14.444605 ms outweigh their bytes; + 4 ms.
    eff = Efficiency(
        flops_fraction=0.7,
        bandwidth_fraction=0.9,
        step_overhead_s=0.004,
        allreduce_latency_s=0.0,
        expert_efficiency=0.7,
        expert_half_tokens=2.0,
    )
    moe = StepCosts(
        tensor_parallel=1,
        layers=1,
        hidden_size=1024,
        dense_weight_bytes=10**9,
        expert_bytes_per_expert=10**8,
        experts=128,
        experts_per_token=8,
        flops_per_token=1e9,
        attention_flops_per_context_token=0,
        kv_bytes_per_token=0,
        peak_flops_per_s=H100["peak_flops_per_s"],
        hbm_bytes_per_s=H100["hbm_bytes_per_s"],
    )
    few = step_time(
        moe, eff, prefill_tokens=0, prefill_context=0, decode_sequences=2, decode_context=0
    )
    assert few.total_s == pytest.approx((0.331675 + 2.157372 + 4) * 1e-3, rel=1e-5)
    many = step_time(
        moe, eff, prefill_tokens=0, prefill_context=0, decode_sequences=10_000, decode_context=0
    )
    assert many.total_s == pytest.approx((14.444605 + 6.084321 + 4) * 1e-3, rel=1e-5)


def test_the_layer_overhead_counts_once_per_layer_per_step() -> None:
    # 36 layers x 100 us = 3.6 ms on top of the 4 ms per step.
    eff = Efficiency(
        flops_fraction=0.7,
        bandwidth_fraction=0.9,
        step_overhead_s=0.004,
        allreduce_latency_s=0.0,
        layer_overhead_s=100e-6,
    )
    t = step_time(
        qwen3_8b(),
        eff,
        prefill_tokens=0,
        prefill_context=0,
        decode_sequences=0,
        decode_context=0,
    )
    assert t.overhead_s == pytest.approx(7.6e-3)


def test_a_prefill_step_outside_a_cuda_graph_takes_at_least_its_kernels_launches() -> None:
    # Qwen3-8B on one H100, 360 kernels a step at 4 us each on the GPU, 40 us each to launch
    # outside a graph (no all-reduces on one GPU). 100 prompt tokens at no context: their
    # FLOPs 100 x 1.638147e10 = 1.638147e12 / 6.923e14 = 2.36624 ms, under the weights'
    # 5.43332 ms; GPU 5.43332 + 360 x 4 us = 6.87332 ms; the launches 360 x 40 us = 14.4 ms
    # outlast it: step 14.4 + 4 (per step) = 18.4 ms. In a graph (SGLang's decode, vLLM's
    # piecewise prefill) the same tokens cost 6.87332 + 4 = 10.87332 ms, and 100 decodes at no
    # context likewise whatever the flag. 8,192 prompt tokens: 193.842 + 1.44 = 195.282 ms of
    # GPU time hide the launches: 199.282 ms either way.
    eff = Efficiency(
        flops_fraction=0.7,
        bandwidth_fraction=0.9,
        step_overhead_s=0.004,
        allreduce_latency_s=0.0,
        kernel_overhead_s=4e-6,
        eager_kernel_overhead_s=40e-6,
    )
    graph = msgspec.structs.replace(qwen3_8b(), kernels=360)
    eager = msgspec.structs.replace(graph, eager_prefill=True)

    def step(costs: StepCosts, prompt: int, decodes: int) -> float:
        return step_time(
            costs,
            eff,
            prefill_tokens=prompt,
            prefill_context=0,
            decode_sequences=decodes,
            decode_context=0,
        ).total_s

    assert step(eager, 100, 0) == pytest.approx(18.4e-3, rel=1e-5)
    assert step(graph, 100, 0) == pytest.approx(10.87332e-3, rel=1e-5)
    assert step(eager, 0, 100) == pytest.approx(10.87332e-3, rel=1e-5)
    assert step(eager, 8192, 0) == pytest.approx(199.282e-3, rel=1e-5)
    assert step(graph, 8192, 0) == pytest.approx(199.282e-3, rel=1e-5)
