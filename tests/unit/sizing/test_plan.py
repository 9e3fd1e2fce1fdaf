"""The plan: the six-step method of part 7 and its worked examples."""

import msgspec
import pytest

from service.sizing import advice
from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS
from service.sizing.parallel import Split
from service.sizing.plan import (
    Plan,
    Workload,
    budget_bytes_per_gpu,
    plan,
    plan_split,
)
from service.sizing.ranking import rank_gpus
from tests.unit.sizing.specs import (
    A100_80,
    ALL_GPUS,
    B200,
    DEEPSEEK_V3,
    GPT_OSS_120B,
    H100,
    H200,
    L40S,
    LLAMA_8B,
    LLAMA_70B,
    LLAMA_70B_SEED,
    QWEN3_NEXT_80B,
    QWEN25_7B,
    seed_workload,
)

BF16, FP8 = FORMATS["bf16"], FORMATS["fp8"]
GB = 10**9
SIX_STEP = seed_workload(concurrency=40, context_tokens=8192)


def codes(p: Plan) -> set[str]:
    return {w.code for w in p.warnings}


def test_usable_memory_per_h100_is_68_gb() -> None:
    # Step 3: "80 GB x 0.9 = 72 GB, minus about 4 GB per GPU ... = 68 GB".
    assert budget_bytes_per_gpu(H100, seed_workload()) == 68 * GB


def test_six_step_bf16_needs_4_h100s_with_23_gb_spare() -> None:
    # Step 4: "248.6 / 68 = 3.7, so 4 H100s, with 23 GB spare."
    # 4 x 68 GB - 141.2 GB - 107,374,182,400 B = 23,425,817,600 B.
    p = plan(LLAMA_70B_SEED, H100, BF16, BF16, SIX_STEP)
    assert p.fits and p.gpu_count == 4 and p.tensor_parallel == 4
    assert p.weights_bytes == 141_200_000_000
    assert p.kv_cache_bytes == 107_374_182_400
    assert p.budget_bytes == 272 * GB
    assert p.spare_bytes == 23_425_817_600
    assert round(p.spare_bytes / GB) == 23
    # 23.43 / 272 = 8.6% spare: under 10%, "look again".
    assert p.spare_fraction == pytest.approx(23_425_817_600 / 272e9)
    assert p.status == "tight"
    assert advice.SPARE_UNDER_10_PERCENT in codes(p)
    assert [a.outcome for a in p.considered] == ["too_small", "too_small", "fits"]


def test_six_step_fp8_needs_2_h100s_with_11_7_gb_spare() -> None:
    # "FP8 weights and FP8 KV: 124.3 / 68 = 1.8, so 2 H100s, with 11.7 GB spare."
    # "The FP8 plan keeps 11.7 of 136 GB, about 9%."
    p = plan(LLAMA_70B_SEED, H100, FP8, FP8, SIX_STEP)
    assert p.gpu_count == 2
    assert p.budget_bytes == 136 * GB
    assert p.spare_bytes == 136 * GB - 70_600_000_000 - 53_687_091_200 == 11_712_908_800
    assert round(p.spare_bytes / GB, 1) == 11.7
    assert round(p.spare_fraction * 100) == 9
    assert p.status == "tight"


def test_six_step_one_h200_is_just_short_and_two_leave_plenty() -> None:
    # "One H200 instead: 141 x 0.9 - 4 = 122.9 GB, against 124.3 needed, just short."
    assert budget_bytes_per_gpu(H200, seed_workload()) == 122_900_000_000
    one = plan(LLAMA_70B_SEED, H200, FP8, FP8, msgspec.structs.replace(SIX_STEP, splits=(1,)))
    assert not one.fits and one.status == "does_not_fit"
    assert one.spare_bytes == 122_900_000_000 - 124_287_091_200 == -1_387_091_200
    # "Two H200s leave plenty of room to grow": 245.8 - 124.287 GB.
    two = plan(LLAMA_70B_SEED, H200, FP8, FP8, SIX_STEP)
    assert two.gpu_count == 2 and two.status == "fits"
    assert two.spare_bytes == 245_800_000_000 - 124_287_091_200


def test_70b_bf16_on_two_h100s_does_not_start() -> None:
    # "On two H100s, 70B BF16 has 144 GB of budget against 141 GB of weights and 8 GB of
    # overheads: the sum is already negative before any KV cache."
    p = plan_split(LLAMA_70B_SEED, H100, BF16, BF16, seed_workload(concurrency=1), gpu_count=2)
    assert not p.fits
    assert p.kv_pool_bytes == 2 * 72 * GB - 2 * 4 * GB - 141_200_000_000 == -5_200_000_000
    assert p.kv_pool_tokens == 0 and p.max_concurrency == 0


def test_70b_bf16_on_four_h100s_has_a_131_gb_pool_for_about_50_conversations() -> None:
    # "On four it has 131 GB of KV pool, room for about 50 conversations of 8,000 tokens."
    p = plan_split(
        LLAMA_70B_SEED, H100, BF16, BF16, seed_workload(concurrency=1, context_tokens=8000), 4
    )
    assert p.kv_pool_bytes == 272 * GB - 141_200_000_000 == 130_800_000_000
    # Per GPU: 32.7 GB of pool at 327,680 / 4 = 81,920 B per token.
    assert p.kv_pool_tokens == 32_700_000_000 // 81_920 == 399_169
    # 130.8e9 / (8,000 x 327,680) = 49.9 conversations: 49 whole ones.
    assert p.max_concurrency == 49


def test_70b_fp8_on_one_h100_starts_only_near_0_95_with_a_short_context() -> None:
    # "would start on one H100 only with utilisation pushed to about 0.95 and a short
    # context, which leaves room for a handful of conversations".
    at_90 = plan_split(LLAMA_70B_SEED, H100, FP8, FP8, seed_workload(concurrency=1), 1)
    assert at_90.kv_pool_bytes == 68 * GB - 70_600_000_000 < 0
    short = seed_workload(concurrency=4, context_tokens=1024, gpu_memory_utilization=0.95)
    at_95 = plan_split(LLAMA_70B_SEED, H100, FP8, FP8, short, 1)
    # 80 x 0.95 - 4 = 72 GB; 1.4 GB of pool at 163,840 B/token (FP8) = 8,544 tokens.
    assert at_95.kv_pool_bytes == 1_400_000_000
    assert at_95.kv_pool_tokens == 8_544
    assert at_95.max_concurrency == 8  # 8,544 // 1,024
    assert at_95.fits


def test_driver_visible_capacity_can_replace_marketed() -> None:
    # nvidia-smi 81,559 MiB = 85,520,809,984 B; x 0.9 = 76,968,728,985.6 -> 76,968,728,985.
    workload = Workload(capacity_basis="driver")
    assert budget_bytes_per_gpu(H100, workload) == 76_968_728_985 - 4 * GB
    p = plan(LLAMA_8B, H100, BF16, BF16, workload)
    assert p.capacity_basis == "driver"
    assert p.per_gpu.capacity_bytes == 85_520_809_984


def test_per_gpu_parts_add_up_to_the_usable_memory() -> None:
    p = plan(LLAMA_70B_SEED, H100, BF16, BF16, SIX_STEP)
    g = p.per_gpu
    assert g.capacity_bytes == 80 * GB and g.usable_bytes == 72 * GB
    assert g.overhead_bytes + g.weights_bytes + g.kv_cache_bytes + g.spare_bytes == 72 * GB
    assert g.weights_bytes == 35_300_000_000
    assert g.kv_cache_bytes == 107_374_182_400 // 4


def test_deepseek_v3_fp8_does_not_fit_8_h100s_but_fits_8_h200s_and_8_b200s() -> None:
    # "DeepSeek-V3 in FP8 needs 671 GB for weights alone, more than the 640 GB of a full
    # 8 x H100 server, so it needs eight H200s, eight B200s or two servers."
    # The seed's splits, 1, 2, 4 or 8 (one server).
    on_h100 = plan(DEEPSEEK_V3, H100, FP8, FP8, seed_workload(splits=(1, 2, 4, 8)))
    assert not on_h100.fits and on_h100.gpu_count == 8
    # Per H100: 671,026,404,352 / 8 = 83,878,300,544 B of weights > 68 GB.
    assert on_h100.per_gpu.weights_bytes == 83_878_300_544
    # "... or two servers": the answer names them.
    assert on_h100.smallest_fitting_split == Split(
        gpu_count=16, tensor_parallel=8, pipeline_parallel=2, nodes=2
    )
    for gpu in (H200, B200):
        p = plan(DEEPSEEK_V3, gpu, FP8, FP8, seed_workload())
        assert p.fits and p.gpu_count == 8, gpu.slug
    # The MLA latent is whole on each GPU: 8 x 8,192 x 61 x 576 x 1 B per GPU.
    p = plan(DEEPSEEK_V3, H200, FP8, FP8, seed_workload())
    assert p.per_gpu.kv_cache_bytes == 8 * 8192 * 35_136 == 2_302_672_896
    assert p.kv_cache_bytes == 8 * 2_302_672_896
    assert {advice.KV_REPLICATED, advice.MOE_SIZED_BY_TOTAL} <= codes(p)
    # Two servers of H100s: 16 GPUs, TP 8 x 2 pipeline stages of 31 and 30 layers.
    two_nodes = plan(DEEPSEEK_V3, H100, FP8, FP8, seed_workload(splits=(1, 2, 4, 8, 16)))
    assert (two_nodes.gpu_count, two_nodes.tensor_parallel, two_nodes.nodes) == (16, 8, 2)
    assert two_nodes.per_gpu.kv_cache_bytes == 8 * 8192 * 31 * 576  # the busier stage
    assert advice.PIPELINE_ACROSS_NODES in codes(two_nodes)


def test_llama_70b_at_tp_16_holds_its_kv_heads_twice() -> None:
    p = plan_split(LLAMA_70B, H100, BF16, BF16, seed_workload(splits=(16,)), 16)
    assert (p.tensor_parallel, p.pipeline_parallel) == (8, 2)
    # Two nodes of TP 8: one KV head per GPU, 40 layers per stage.
    assert p.per_gpu.kv_cache_bytes == 8 * 8192 * 40 * 2 * 1 * 128 * 2


def test_kv_replication_past_kv_heads_is_warned_and_counted() -> None:
    big_node = msgspec.structs.replace(H100, gpus_per_node=16)
    p = plan_split(LLAMA_70B, big_node, BF16, BF16, seed_workload(), 16)
    assert p.tensor_parallel == 16
    # Whole model: 16 GPUs x 8 x 8,192 x 40,960 B = twice 8 x 8,192 x 327,680 B.
    assert p.kv_cache_bytes == 2 * 8 * 8192 * 327_680
    assert advice.KV_REPLICATED in codes(p)


def test_split_that_heads_do_not_divide_is_skipped_and_said() -> None:
    p = plan(
        QWEN25_7B,
        H100,
        BF16,
        BF16,
        seed_workload(concurrency=400, context_tokens=32000, splits=(1, 2, 4, 8)),
    )
    invalid = [a for a in p.considered if a.outcome == "invalid"]
    assert [a.gpu_count for a in invalid] == [8]
    assert "28 attention heads" in invalid[0].reason
    with pytest.raises(SizingError) as info:
        plan_split(QWEN25_7B, H100, BF16, BF16, seed_workload(), 8)
    assert info.value.field == "gpu_count"


def test_warnings_name_the_seeds_mistakes() -> None:
    at_max = plan(LLAMA_8B, H100, BF16, BF16, seed_workload(concurrency=1, context_tokens=131072))
    assert advice.CONTEXT_AT_OR_ABOVE_MAX in codes(at_max)
    hot = plan(LLAMA_8B, H100, BF16, BF16, seed_workload(gpu_memory_utilization=0.97))
    assert advice.UTILISATION_ABOVE_095 in codes(hot)
    pcie = plan(LLAMA_70B, L40S, FP8, FP8, seed_workload())
    assert pcie.gpu_count > 1 and advice.SPLIT_OVER_PCIE in codes(pcie)
    assert advice.WEIGHTS_EXCEED_ONE_GPU in codes(pcie)
    a100 = plan(LLAMA_8B, A100_80, FP8, FP8, seed_workload())
    assert advice.FORMAT_NOT_NATIVE in codes(a100)
    fp4 = plan(LLAMA_8B, H100, FORMATS["nvfp4"], FP8, seed_workload())
    assert advice.FORMAT_NOT_NATIVE in codes(fp4)
    assert advice.FORMAT_NOT_NATIVE not in codes(
        plan(LLAMA_8B, B200, FORMATS["nvfp4"], FP8, seed_workload())
    )
    clean = plan(LLAMA_8B, H100, BF16, BF16, seed_workload())
    assert codes(clean) == set()


def test_decode_ceiling_reads_the_active_slice_and_the_kv() -> None:
    # 4 x H100, 70B BF16: 35.3 GB of weights per GPU plus one conversation's KV slice,
    # 8,192 x 327,680 / 4 = 671,088,640 B, read at 3,350 GB/s.
    p = plan(LLAMA_70B_SEED, H100, BF16, BF16, SIX_STEP)
    d = p.decode
    assert d.bytes_per_token_per_gpu == 35_300_000_000 + 671_088_640
    assert d.s_per_token == pytest.approx(35_971_088_640 / 3_350e9)
    assert d.bytes_per_step_per_gpu == 35_300_000_000 + 40 * 671_088_640
    assert d.tokens_per_s_aggregate == pytest.approx(40 / (62_143_545_600 / 3_350e9))
    # MoE reads only its active parameters: DeepSeek-V3 on 8 H200s reads 36.6e9 / 8 bytes.
    moe = plan(DEEPSEEK_V3, H200, FP8, FP8, seed_workload())
    assert moe.decode.bytes_per_token_per_gpu == 4_578_200_448 + 8192 * 35_136


def test_ranking_puts_plans_with_10_percent_spare_before_tight_ones_then_fewest_gpus() -> None:
    # 70.6B BF16 + 40 x 8,192 x 327,680 B = 141.2 + 107.374 = 248,574,182,400 B (marketed):
    # B200  2 x 168.8 GB = 337.6 GB: 89.0 GB spare, 26.4%  fits
    # H200  2 x 122.9 GB = 245.8 GB is short; 4 = 491.6 GB: 243.0 GB, 49.4%  fits
    # L40S  8 x 39.2 GB = 313.6 GB: 65.0 GB, 20.7%  fits
    # 4090  8 x 17.6 GB = 140.8 GB < 141.2 GB of weights; 16 (2 nodes) = 281.6 GB: 33.0 GB,
    #       11.7% (busiest GPU: 17.6 - 8.825 - 40 x 8,192 x 40 layers x 512 B = 2.06 GB, 11.7%)
    # H100 and A100 80GB  4 x 68 GB = 272 GB: 23.4 GB, 8.6%  tight (equal: catalogue order).
    ranked = rank_gpus(LLAMA_70B_SEED, ALL_GPUS, BF16, BF16, SIX_STEP)
    assert [(p.gpu, p.gpu_count, p.status) for p in ranked] == [
        ("b200", 2, "fits"),
        ("h200", 4, "fits"),
        ("l40s", 8, "fits"),
        ("rtx-4090", 16, "fits"),
        ("a100-80gb", 4, "tight"),
        ("h100-sxm", 4, "tight"),
    ]
    assert ranked[0].spare_bytes == 337_600_000_000 - 248_574_182_400
    assert ranked[4].spare_bytes == ranked[5].spare_bytes == 272 * GB - 248_574_182_400


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu_memory_utilization": 0.0}, "gpu_memory_utilization"),
        ({"gpu_memory_utilization": 1.2}, "gpu_memory_utilization"),
        ({"concurrency": 0}, "concurrency"),
        ({"context_tokens": -5}, "context_tokens"),
        ({"overhead_bytes_per_gpu": -1}, "overhead_bytes_per_gpu"),
        ({"splits": ()}, "splits"),
        ({"splits": (0, 2)}, "splits"),
    ],
)
def test_bad_workload_raises_one_error_naming_the_field(
    change: dict[str, object], field: str
) -> None:
    with pytest.raises(SizingError) as info:
        plan(LLAMA_8B, H100, BF16, BF16, msgspec.structs.replace(seed_workload(), **change))
    assert info.value.field == field


def test_bad_specs_raise_the_domain_error_not_a_bare_exception() -> None:
    no_bandwidth = msgspec.structs.replace(H100, hbm_bytes_per_s=0)
    with pytest.raises(SizingError) as info:
        plan(LLAMA_8B, no_bandwidth, BF16, BF16, seed_workload())
    assert info.value.field == "gpu.hbm_bytes_per_s"
    zero_heads = msgspec.structs.replace(LLAMA_8B, attention_heads=0)
    with pytest.raises(SizingError) as info:
        plan(zero_heads, H100, BF16, BF16, seed_workload())
    assert info.value.field == "model_spec.attention_heads"


def test_plan_reports_kv_growth_and_the_fixed_sliding_part_separately() -> None:
    # gpt-oss-120b, 16-bit KV: 18 full layers grow 36,864 B per token; the 18 sliding layers
    # hold at most 128 tokens: 36,864 x 128 = 4,718,592 B per conversation.
    p = plan(GPT_OSS_120B, H200, BF16, BF16, seed_workload())
    assert p.kv_bytes_per_token == 36_864
    assert p.kv_fixed_bytes_per_sequence == 4_718_592
    # 8 conversations x (36,864 x 8,192 + 4,718,592), whatever the split: 233.7 GB of BF16
    # weights take 2 H200s, and TP 2 divides the 8 KV heads, so nothing is replicated.
    assert p.gpu_count == 2
    assert p.kv_cache_bytes == 8 * (36_864 * 8192 + 4_718_592) == 2_453_667_840
    dense = plan(LLAMA_8B, H100, BF16, BF16, seed_workload())
    assert dense.kv_fixed_bytes_per_sequence == 0


def test_ranking_leaves_out_gpus_no_split_serves_but_reports_bad_splits() -> None:
    # Qwen2.5-7B's 28 heads do not divide by 8: with splits (8,) no GPU can serve it.
    assert rank_gpus(QWEN25_7B, ALL_GPUS, BF16, BF16, seed_workload(splits=(8,))) == []
    # A GPU count of 0 is bad input, not "no split serves it".
    with pytest.raises(SizingError) as info:
        rank_gpus(QWEN25_7B, ALL_GPUS, BF16, BF16, seed_workload(splits=(0, 2)))
    assert info.value.field == "splits"
    assert "between 1 and 65536" in info.value.message


def test_a_linear_attention_state_is_a_fixed_cost_per_conversation() -> None:
    # Qwen3-Next on two H200s (TP 2), 10 conversations of 32,768 tokens in BF16. Per GPU a
    # token grows 12 attention layers x 2 x 1 KV head x 256 x 2 B = 12,288 B, and each
    # conversation holds 36 Gated DeltaNet states of 274,432 values x 2 B = 19,759,104 B
    # whatever its length: 10 x (12,288 x 32,768 + 19,759,104) = 4,224,122,880 B of KV a GPU.
    workload = seed_workload(concurrency=10, context_tokens=32_768)
    p = plan_split(QWEN3_NEXT_80B, H200, BF16, BF16, workload, gpu_count=2)
    assert p.per_gpu.kv_cache_bytes == 4_224_122_880
