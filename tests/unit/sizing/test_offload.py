"""Offload (part 7, "Why is offloading to CPU memory so slow?")."""

import pytest

from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS
from service.sizing.offload import offload
from service.sizing.plan import Workload
from tests.unit.sizing.specs import (
    H100,
    L40S,
    LLAMA_70B_SEED,
    MIXTRAL_8X7B,
    NVLINK_C2C,
    PCIE_4,
    PCIE_5,
    seed_workload,
)

BF16 = FORMATS["bf16"]
# A step also reads each conversation's KV (service.sizing.decode, the rule /plan uses); the
# seed's worked numbers count the weights alone, a conversation whose KV read is negligible
# beside them. 128 tokens: 128 x 327,680 B = 41,943,040 B a step, 0.0125 ms at 3,350 GB/s.
SHORT = seed_workload(context_tokens=128)
SHORT_KV = 128 * 327_680


def test_the_seeds_offload_example() -> None:
    # "the H100 holds about 60 GB of the 141 GB model ... Reading those 60 GB at 3,350 GB/s
    # takes about 18 ms. The other 81 GB must come over PCIe 5.0 x16 at about 64 GB/s:
    # 1.27 seconds ... under one token per second and sits idle for 98% of the time."
    o = offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, SHORT, resident_bytes=60 * 10**9)
    assert o.offloaded_bytes == 141_200_000_000 - 60_000_000_000 == 81_200_000_000
    assert o.hbm_s_per_step == pytest.approx(60e9 / 3350e9)  # 17.9 ms
    assert round(o.hbm_s_per_step * 1000) == 18
    assert o.kv_s_per_step == pytest.approx(SHORT_KV / 3350e9)
    assert o.link_s_per_step == pytest.approx(81.2e9 / 64e9)  # 1.26875 s
    assert round(o.link_s_per_step, 2) == 1.27
    # A dense model reads every weight: every offloaded byte crosses, either mechanism.
    assert o.link_bytes_per_step == 81_200_000_000 and o.mechanism == "uva"
    assert o.s_per_step == pytest.approx(60e9 / 3350e9 + SHORT_KV / 3350e9 + 81.2e9 / 64e9)
    assert round(o.tokens_per_s, 2) == 0.78  # 1 / 1.28667 s
    assert round(o.gpu_idle_fraction, 2) == 0.99  # 1.26875 / 1.28667 = 98.6%
    assert int(o.gpu_idle_fraction * 100) == 98
    assert o.warnings == []


def test_four_h100s_hold_it_fully_at_about_95_tokens_per_second() -> None:
    # "Four H100s ... read their 35 GB slices in parallel in about 10.5 ms: roughly 95
    # tokens per second for one user, over a hundred times faster."
    # Each GPU also reads its quarter of the KV: 41,943,040 / 4 = 10,485,760 B.
    o = offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, SHORT, resident_bytes=60 * 10**9)
    alt = o.fully_resident
    assert alt.gpu_count == 4
    assert alt.weights_bytes_per_gpu == 35_300_000_000
    assert alt.s_per_step is not None
    assert alt.s_per_step == pytest.approx((35.3e9 + 10_485_760) / 3350e9)  # 10.54 ms
    assert round(alt.s_per_step * 1000, 1) == 10.5
    assert alt.tokens_per_s is not None and round(alt.tokens_per_s) == 95
    assert alt.tokens_per_s / o.tokens_per_s > 100


def test_default_resident_is_the_budget_after_a_kv_reserve() -> None:
    # 68 GB budget - one conversation of 8,192 tokens x 327,680 B = 2,684,354,560 B.
    o = offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, seed_workload())
    assert o.kv_reserve_bytes == 2_684_354_560
    assert o.resident_bytes == 68_000_000_000 - 2_684_354_560
    assert o.offloaded_bytes == 141_200_000_000 - o.resident_bytes


def test_batching_shares_one_pass_of_the_weights() -> None:
    # The weights cross once for all 16 conversations; only the KV read grows, 16 x 41,943,040 B.
    one = offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, SHORT, resident_bytes=60 * 10**9)
    batch = offload(
        LLAMA_70B_SEED,
        H100,
        BF16,
        BF16,
        PCIE_5,
        SHORT,
        batch_size=16,
        resident_bytes=60 * 10**9,
    )
    assert batch.link_s_per_step == one.link_s_per_step
    assert batch.hbm_s_per_step == one.hbm_s_per_step
    assert batch.kv_read_bytes == 16 * SHORT_KV
    step_s = 60e9 / 3350e9 + 16 * SHORT_KV / 3350e9 + 81.2e9 / 64e9
    assert batch.s_per_step == pytest.approx(step_s)
    assert batch.batch_tokens_per_s == pytest.approx(16 / step_s)


def test_nvlink_c2c_narrows_the_gap() -> None:
    # Grace Hopper: 900 GB/s quoted, 450 GB/s per direction: 81.2 GB in 0.18 s.
    o = offload(
        LLAMA_70B_SEED, H100, BF16, BF16, NVLINK_C2C, seed_workload(), resident_bytes=60 * 10**9
    )
    assert o.link_s_per_step == pytest.approx(81.2e9 / 450e9)


def test_two_gpus_stream_their_halves_in_parallel() -> None:
    o = offload(
        LLAMA_70B_SEED,
        H100,
        BF16,
        BF16,
        PCIE_5,
        seed_workload(),
        gpu_count=2,
        resident_bytes=120 * 10**9,
    )
    assert o.hbm_s_per_step == pytest.approx(60e9 / 3350e9)
    assert o.link_s_per_step == pytest.approx(10.6e9 / 64e9)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"resident_bytes": -1}, "resident_bytes"),
        ({"resident_bytes": 10**12}, "resident_bytes"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_offload_input_names_the_field(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(SizingError) as info:
        offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, seed_workload(), **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_uva_moves_only_the_experts_a_step_reads_and_copy_moves_every_offloaded_byte() -> None:
    # Mixtral 8x7B in BF16 (93,405,585,408 B) on 2 x L40S with half of it resident: 46,702,792,704
    # B offloaded, 23,351,396,352 B behind each GPU's PCIe 4.0 x16 (32 GB/s). The offloaded bytes
    # are a cross-section of the weights, so a step reads the share read_params / total of them:
    # at batch 1 the active 12,748,853,248 / 46,702,792,704, i.e. 6,374,426,624 B a GPU.
    half = 46_702_792_704
    uva = offload(MIXTRAL_8X7B, L40S, BF16, BF16, PCIE_4, Workload(), 2, resident_bytes=half)
    assert uva.mechanism == "uva" and "15354" in uva.mechanism_note
    assert uva.offloaded_bytes == half
    assert uva.link_bytes_per_step == 2 * 6_374_426_624 == 12_748_853_248
    assert uva.link_s_per_step == pytest.approx(6_374_426_624 / 32e9)  # 199.2 ms
    assert uva.resident_read_bytes == 12_748_853_248  # the resident half reads the same share
    copy = offload(
        MIXTRAL_8X7B, L40S, BF16, BF16, PCIE_4, Workload(), 2, resident_bytes=half, mechanism="copy"
    )
    assert copy.link_bytes_per_step == half
    assert copy.link_s_per_step == pytest.approx(23_351_396_352 / 32e9)  # 729.7 ms
    assert "functional_call" in copy.mechanism_note
    # A batch of 16 touches 7.92 of 8 experts a layer: 46,119,730,134 of the 46,702,792,704
    # parameters (tests/unit/sizing/test_decode.py), so UVA moves 23,059,865,067 B a GPU.
    batch = offload(
        MIXTRAL_8X7B, L40S, BF16, BF16, PCIE_4, Workload(), 2, batch_size=16, resident_bytes=half
    )
    assert batch.link_bytes_per_step == 2 * 23_059_865_067
    assert batch.step.experts_read_per_layer == pytest.approx(8 * (1 - 0.75**16))


def test_moe_offload_warns_which_experts_were_assumed_to_cross() -> None:
    half = 46_702_792_704
    o = offload(MIXTRAL_8X7B, L40S, BF16, BF16, PCIE_4, Workload(), 2, resident_bytes=half)
    [warning] = o.warnings
    assert warning.code == "moe_offload_experts"
    # 45,097,156,608 routed of 46,702,792,704 parameters: 96.6%; 2.00 of 8 experts at batch 1.
    assert "2.00 of 8 experts" in warning.message and "uniform" in warning.message
    assert "96.6%" in warning.message
    assert "12.7 GB" in warning.message  # of the 46.7 GB offloaded


def test_an_unknown_mechanism_names_the_field() -> None:
    with pytest.raises(SizingError) as info:
        offload(LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, Workload(), mechanism="dma")  # type: ignore[arg-type]
    assert info.value.field == "mechanism"
