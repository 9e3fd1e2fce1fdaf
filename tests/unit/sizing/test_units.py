"""Units: the seed's GB/GiB rules (part 7, "Why do vendors, Hugging Face and nvidia-smi show
different numbers?")."""

from fractions import Fraction

import pytest

from service.sizing.units import (
    GB,
    GiB,
    MiB,
    ceil_div,
    exact,
    gb,
    gib,
    gib_over_gb,
    label_bytes,
    mib,
    to_gb,
    to_gib,
)


def test_a_gib_is_about_7_4_percent_bigger_than_a_gb() -> None:
    # "A GiB (gibibyte) is 1,073,741,824 bytes (1,024^3), about 7.4% bigger."
    assert GiB == 1_073_741_824
    assert gib_over_gb() == Fraction(1_073_741_824, 1_000_000_000)
    assert round(float(gib_over_gb() - 1) * 100, 1) == 7.4


def test_mixing_units_hides_5_to_6_gb_on_an_80_gb_card() -> None:
    # "Mixing a GB weight size with a GiB GPU size can hide 5 GB on an 80 GB card";
    # "A 7% unit gap on an 80 GB card is 5 to 6 GB": 80 x 1,073,741,824 - 80 x 10^9.
    gap = gib(80) - gb(80)
    assert gap == 5_899_345_920
    assert 5 < to_gb(gap) < 6


def test_nvidia_smi_total_in_mib_is_85_52_gb_or_79_65_gib() -> None:
    # gpus.md: H100 SXM nvidia-smi total 81,559 MiB = 85.52 GB = 79.65 GiB.
    total = mib(81_559)
    assert total == 81_559 * 1_048_576 == 85_520_809_984
    assert round(to_gb(total), 2) == 85.52
    assert round(to_gib(total), 2) == 79.65


def test_engine_log_reports_8b_weights_as_15_gib_not_16() -> None:
    # "the weights (in GiB, so 15 rather than 16)": 8,030,261,248 params x 2 B.
    weights = 8_030_261_248 * 2
    assert round(to_gb(weights), 2) == 16.06
    assert round(to_gib(weights)) == 15


def test_70b_bf16_across_four_gpus_loads_about_33_gib_each() -> None:
    # "70B in BF16 across four GPUs should show about 33 GiB each": 141.2 GB / 4 = 35.3 GB.
    per_gpu = gb(141.2) // 4
    assert per_gpu == 35_300_000_000
    assert round(to_gib(per_gpu)) == 33


def test_decimal_inputs_stay_exact() -> None:
    assert exact(0.9) == Fraction(9, 10)
    assert gb(0.1) == 100_000_000
    assert MiB == 2**20 and GB == 10**9
    assert ceil_div(7, 2) == 4 and ceil_div(8, 2) == 4


@pytest.mark.parametrize(("n", "text"), [(141_200_000_000, "141.2 GB (131.5 GiB)")])
def test_human_rendering_labels_both_units(n: int, text: str) -> None:
    assert label_bytes(n) == text
