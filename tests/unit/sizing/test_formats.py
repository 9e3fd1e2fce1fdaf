"""Number formats: bytes per value, scales included (part 7, "How big is a model in memory?")."""

from fractions import Fraction

import pytest

from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS, default_kv_format, get_format


@pytest.mark.parametrize(
    ("slug", "bits"),
    [
        # "BF16 and FP16 use 2 bytes. FP8 uses 1."
        ("fp32", Fraction(32)),
        ("bf16", Fraction(16)),
        ("fp16", Fraction(16)),
        ("fp8", Fraction(8)),
        ("fp8-e4m3", Fraction(8)),
        ("fp8-e5m2", Fraction(8)),
        ("int8", Fraction(8)),
        # "this post counts 4-bit as about 0.56 bytes": 4.5 bits = 0.5625 bytes.
        ("int4", Fraction(9, 2)),
        # MXFP4: 4 + 8-bit scale / 32 values = 4.25.
        ("mxfp4", Fraction(17, 4)),
        # NVFP4: 4 + FP8 scale / 16 values = 4.5.
        ("nvfp4", Fraction(9, 2)),
        # NF4 double-quantised: 4 + 8/64 + 32/(64 x 256) = 4.126953125.
        ("nf4", Fraction(4) + Fraction(8, 64) + Fraction(32, 64 * 256)),
        # AWQ / GPTQ group 128: 4 + (16-bit scale + 4-bit zero) / 128 = 4.15625.
        ("awq-int4", Fraction(133, 32)),
        ("gptq-int4", Fraction(133, 32)),
    ],
)
def test_each_format_costs_its_documented_bits_per_value(slug: str, bits: Fraction) -> None:
    fmt = FORMATS[slug]
    assert fmt.bits_per_value == bits
    assert fmt.description


def test_generic_4bit_is_0_5625_bytes() -> None:
    assert FORMATS["int4"].bytes_per_value == Fraction(9, 16) == Fraction("0.5625")


def test_scale_factors_add_6_to_13_percent_to_4bit_values() -> None:
    # "Scale factors add about 6 to 13% to the 4-bit values": 4.25/4 and 4.5/4.
    assert FORMATS["mxfp4"].bits_per_value / 4 - 1 == Fraction(1, 16)  # 6.25%
    assert FORMATS["int4"].bits_per_value / 4 - 1 == Fraction(1, 8)  # 12.5%


def test_bytes_round_up_to_a_whole_byte() -> None:
    # 3 values x 4.5 bits = 13.5 bits = 1.6875 bytes -> 2.
    assert FORMATS["int4"].bytes_for(3) == 2
    assert FORMATS["bf16"].bytes_for(3) == 6


@pytest.mark.parametrize(
    ("weights", "kv"),
    [("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "fp8"), ("int4", "fp8"), ("fp32", "bf16")],
)
def test_kv_is_16_bit_in_16_bit_rows_and_fp8_otherwise(weights: str, kv: str) -> None:
    # Matrix legend: "16-bit KV in the BF16 rows, FP8 KV in the others".
    assert default_kv_format(FORMATS[weights]).slug == kv


def test_unknown_format_names_the_field() -> None:
    with pytest.raises(SizingError) as info:
        get_format("fp5", field="weight_format")
    assert info.value.field == "weight_format"
