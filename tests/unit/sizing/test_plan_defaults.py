"""The plan's defaults (issue 16): one split ladder for /plan and /matrix, the smallest split that
would fit, the driver-visible capacity basis and the ranking of options by status first."""

import msgspec

from service.sizing import advice
from service.sizing.formats import FORMATS
from service.sizing.matrix import build_matrix
from service.sizing.parallel import Split
from service.sizing.plan import Workload, budget_bytes_per_gpu, plan
from service.sizing.ranking import RANKING_RULE, rank_gpus
from tests.unit.sizing.specs import (
    B200,
    DEEPSEEK_V3,
    H100,
    H200,
    LLAMA_70B,
    RTX_4090,
    seed_workload,
)

BF16, FP8 = FORMATS["bf16"], FORMATS["fp8"]
GB = 10**9
MIB = 2**20


def test_default_plan_splits_reach_two_h100_servers_for_deepseek_v3_fp8() -> None:
    # 671,026,404,352 B of FP8 weights: 8 H100s hold 83,878,300,544 B each > 68 GB, so the
    # default ladder's next step, 16 = 2 nodes of TP 8 (2 pipeline stages of 31 and 30 layers):
    # 671,026,404,352 / 16 = 41,939,150,272 B of weights per GPU, and the busier stage holds
    # 8 x 8,192 x 31 layers x 576 B = 1,170,210,816 B of latent KV per GPU;
    # spare 68,000,000,000 - 41,939,150,272 - 1,170,210,816 = 24,890,638,912 B.
    p = plan(DEEPSEEK_V3, H100, FP8, FP8, seed_workload())
    assert (p.fits, p.gpu_count, p.tensor_parallel, p.pipeline_parallel, p.nodes) == (
        True,
        16,
        8,
        2,
        2,
    )
    assert p.per_gpu.weights_bytes == 41_939_150_272
    assert p.per_gpu.kv_cache_bytes == 1_170_210_816
    assert p.per_gpu.spare_bytes == 24_890_638_912
    assert [(a.gpu_count, a.outcome) for a in p.considered] == [
        (1, "too_small"),
        (2, "too_small"),
        (4, "too_small"),
        (8, "too_small"),
        (16, "fits"),
    ]
    # The matrix's cell is the same split: one ladder.
    cell = build_matrix([DEEPSEEK_V3], [FP8], [H100], seed_workload()).rows[0].cells[0]
    assert (cell.gpu_count, cell.tensor_parallel, cell.pipeline_parallel) == (16, 8, 2)
    # On the driver basis too: 85,520,809,984 x 0.9 - 4 GB = 72,968,728,985 B < 83.9 GB at 8.
    on_driver = plan(DEEPSEEK_V3, H100, FP8, FP8, Workload(capacity_basis="driver"))
    assert (on_driver.gpu_count, on_driver.pipeline_parallel) == (16, 2)


def test_does_not_fit_names_the_smallest_split_of_the_larger_ladder() -> None:
    # RTX 4090: 24 GB x 0.9 - 4 GB = 17.6 GB. The default ladder ends at 32 GPUs:
    # 671,026,404,352 / 32 = 20,969,575,136 B of weights per GPU > 17.6 GB, does not fit.
    # 64 = 8 nodes of TP 8, 8 stages (61 layers: five of 8, three of 7):
    # 671,026,404,352 / 64 = 10,484,787,568 B + 8 x 8,192 x 8 x 576 = 301,989,888 B of KV
    # = 10,786,777,456 B <= 17.6 GB: it fits.
    p = plan(DEEPSEEK_V3, RTX_4090, FP8, FP8, seed_workload())
    assert p.status == "does_not_fit" and p.gpu_count == 32
    assert p.per_gpu.weights_bytes == 20_969_575_136
    assert p.smallest_fitting_split == Split(
        gpu_count=64, tensor_parallel=8, pipeline_parallel=8, nodes=8
    )
    message = next(w.message for w in p.warnings if w.code == advice.DOES_NOT_FIT)
    assert "64 GPUs (tensor parallel 8 x 8 pipeline stages, 8 nodes)" in message
    # A plan that fits names none.
    assert plan(DEEPSEEK_V3, H200, FP8, FP8, seed_workload()).smallest_fitting_split is None


def test_does_not_fit_says_when_no_split_of_the_larger_ladder_would() -> None:
    # 5 GB x 0.9 - 4 GB = 0.5 GB per GPU. The ladder stops at 32 stages (64 > 61 layers):
    # 256 GPUs hold 671,026,404,352 / 256 = 2,621,196,892 B of weights each > 0.5 GB.
    tiny = msgspec.structs.replace(H100, slug="tiny", memory_bytes=5 * GB, driver_visible_bytes=0)
    p = plan(DEEPSEEK_V3, tiny, FP8, FP8, seed_workload())
    assert p.status == "does_not_fit" and p.smallest_fitting_split is None
    message = next(w.message for w in p.warnings if w.code == advice.DOES_NOT_FIT)
    assert "no split of the larger ladder" in message


def test_default_capacity_basis_is_the_driver_visible_bytes() -> None:
    # H100 SXM: nvidia-smi 81,559 MiB = 81,559 x 1,048,576 = 85,520,809,984 B;
    # x 0.9 = 76,968,728,985.6 -> 76,968,728,985; - 4,000,000,000 = 72,968,728,985 B.
    assert Workload().capacity_basis == "driver"
    assert H100.driver_visible_bytes == 81_559 * 1_048_576 == 85_520_809_984
    assert budget_bytes_per_gpu(H100, Workload()) == 72_968_728_985
    p = plan(LLAMA_70B, H100, BF16, BF16, Workload())
    assert p.capacity_basis == "driver" and p.per_gpu.capacity_bytes == 85_520_809_984
    # The seeds' basis stays one field away: 80 GB x 0.9 - 4 GB = 68 GB.
    assert budget_bytes_per_gpu(H100, seed_workload()) == 68 * GB


def test_a_gpu_without_a_driver_figure_counts_its_marketed_bytes_and_says_so() -> None:
    unknown = msgspec.structs.replace(H100, slug="unknown", driver_visible_bytes=0)
    p = plan(LLAMA_70B, unknown, BF16, BF16, Workload())
    assert p.per_gpu.capacity_bytes == 80 * GB
    assert advice.CAPACITY_BASIS_FALLBACK in {w.code for w in p.warnings}
    on_h100 = plan(LLAMA_70B, H100, BF16, BF16, Workload())
    assert advice.CAPACITY_BASIS_FALLBACK not in {w.code for w in on_h100.warnings}


def test_an_amber_b200_ranks_below_two_comfortable_h200s() -> None:
    # Llama 3.1 70B BF16, 8 x 8,192 tokens: 141,107,412,992 B of weights + 8 x 8,192 x
    # 327,680 = 21,474,836,480 B of KV = 162,582,249,472 B.
    # Marketed: one B200, 192 GB x 0.9 - 4 GB = 168.8 GB: 6,217,750,528 B spare = 3.68% (amber);
    # two H200s, 2 x 122.9 GB = 245.8 GB: 83,217,750,528 B = 33.86% (fits).
    ranked = rank_gpus(LLAMA_70B, (B200, H200), BF16, BF16, seed_workload())
    assert [(p.gpu, p.gpu_count, p.status) for p in ranked] == [
        ("h200", 2, "fits"),
        ("b200", 1, "amber"),
    ]
    assert ranked[0].spare_bytes == 83_217_750_528
    assert ranked[1].spare_bytes == 6_217_750_528
    # Driver: B200 183,359 MiB = 192,265,846,784 B x 0.9 -> 173,039,262,105 - 4 GB
    # = 169,039,262,105: 6,457,012,633 B spare = 3.82% (amber); H200 143,771 MiB =
    # 150,754,820,096 B x 0.9 -> 135,679,338,086 - 4 GB = 131,679,338,086, two of them
    # 263,358,676,172: 100,776,426,700 B spare = 38.27% (fits).
    ranked = rank_gpus(LLAMA_70B, (B200, H200), BF16, BF16, Workload())
    assert [(p.gpu, p.gpu_count, p.status) for p in ranked] == [
        ("h200", 2, "fits"),
        ("b200", 1, "amber"),
    ]
    assert ranked[0].spare_bytes == 100_776_426_700
    assert ranked[1].spare_bytes == 6_457_012_633
    assert RANKING_RULE.startswith("status first")
