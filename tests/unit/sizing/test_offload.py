"""Offload (part 7, "Why is offloading to CPU memory so slow?")."""

import pytest

from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS
from service.sizing.offload import offload
from tests.unit.sizing.specs import H100, LLAMA_70B_SEED, NVLINK_C2C, PCIE_5, seed_workload

BF16 = FORMATS["bf16"]


def test_the_seeds_offload_example() -> None:
    # "the H100 holds about 60 GB of the 141 GB model ... Reading those 60 GB at 3,350 GB/s
    # takes about 18 ms. The other 81 GB must come over PCIe 5.0 x16 at about 64 GB/s:
    # 1.27 seconds ... under one token per second and sits idle for 98% of the time."
    o = offload(
        LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, seed_workload(), resident_bytes=60 * 10**9
    )
    assert o.offloaded_bytes == 141_200_000_000 - 60_000_000_000 == 81_200_000_000
    assert o.hbm_s_per_step == pytest.approx(60e9 / 3350e9)  # 17.9 ms
    assert round(o.hbm_s_per_step * 1000) == 18
    assert o.link_s_per_step == pytest.approx(81.2e9 / 64e9)  # 1.26875 s
    assert round(o.link_s_per_step, 2) == 1.27
    assert o.s_per_step == pytest.approx(60e9 / 3350e9 + 81.2e9 / 64e9)
    assert o.tokens_per_s < 1
    assert round(o.gpu_idle_fraction, 2) == 0.99  # 1.26875 / 1.28666 = 98.6%
    assert int(o.gpu_idle_fraction * 100) == 98


def test_four_h100s_hold_it_fully_at_about_95_tokens_per_second() -> None:
    # "Four H100s ... read their 35 GB slices in parallel in about 10.5 ms: roughly 95
    # tokens per second for one user, over a hundred times faster."
    o = offload(
        LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, seed_workload(), resident_bytes=60 * 10**9
    )
    alt = o.fully_resident
    assert alt.gpu_count == 4
    assert alt.weights_bytes_per_gpu == 35_300_000_000
    assert alt.s_per_step is not None
    assert alt.s_per_step == pytest.approx(35.3e9 / 3350e9)
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
    one = offload(
        LLAMA_70B_SEED, H100, BF16, BF16, PCIE_5, seed_workload(), resident_bytes=60 * 10**9
    )
    batch = offload(
        LLAMA_70B_SEED,
        H100,
        BF16,
        BF16,
        PCIE_5,
        seed_workload(),
        batch_size=16,
        resident_bytes=60 * 10**9,
    )
    assert batch.s_per_step == one.s_per_step
    assert batch.batch_tokens_per_s == pytest.approx(16 * one.tokens_per_s)


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
