"""Number formats and what each costs per stored value.

Seed rule (part 7, "How big is a model in memory?"): BF16 and FP16 use 2 bytes, FP8 uses 1, and
a 4-bit format uses half a byte for the value plus the scale factors beside each small block
(about 4.25 to 4.5 bits in total), counted as 0.5625 bytes. The named 4-bit formats below work
their real scale cost out from block size and scale width instead of the rule of thumb.
"""

from fractions import Fraction
from typing import Literal

import msgspec

from service.sizing.errors import SizingError
from service.sizing.units import ceil_div

# Which hardware feature a GPU needs to compute in the format natively (else it is emulated
# or dequantised on the fly, which works but costs speed).
NativeSupport = Literal["any", "fp8", "fp4"]


class NumberFormat(msgspec.Struct, frozen=True, kw_only=True):
    """A storage format: value bits plus the per-block scale and zero-point overhead."""

    slug: str
    name: str
    value_bits: int
    block_size: int = 0
    """Values that share one scale (0: no block scale)."""
    scale_bits: int = 0
    """Bits of each block's scale."""
    zero_point_bits: int = 0
    """Bits of each block's zero point (asymmetric integer formats)."""
    super_block_size: int = 0
    """Blocks that share one second-level scale (double quantisation; 0: none)."""
    super_scale_bits: int = 0
    needs: NativeSupport = "any"
    kv_capable: bool = False
    """Whether an engine can hold the KV cache in this format."""
    description: str = ""

    @property
    def bits_ratio(self) -> tuple[int, int]:
        """Bits per value as an exact integer ratio (numerator, denominator): a value's own
        bits plus its share of the block scale, zero point and second-level scale."""
        if not self.block_size:
            return self.value_bits, 1
        supers = self.super_block_size or 1
        denominator = self.block_size * supers
        numerator = (
            self.value_bits * denominator
            + (self.scale_bits + self.zero_point_bits) * supers
            + (self.super_scale_bits if self.super_block_size else 0)
        )
        return numerator, denominator

    @property
    def bits_per_value(self) -> Fraction:
        """Exact storage cost per value, scales and zero points included."""
        return Fraction(*self.bits_ratio)

    @property
    def bytes_per_value(self) -> Fraction:
        return self.bits_per_value / 8

    def bytes_for(self, values: int) -> int:
        """Bytes to store ``values`` numbers, rounded up to a whole byte."""
        numerator, denominator = self.bits_ratio
        return ceil_div(values * numerator, denominator * 8)


def _plain(slug: str, name: str, bits: int, needs: NativeSupport, description: str) -> NumberFormat:
    return NumberFormat(
        slug=slug, name=name, value_bits=bits, needs=needs, kv_capable=True, description=description
    )


FORMATS: dict[str, NumberFormat] = {
    f.slug: f
    for f in (
        _plain("fp32", "FP32", 32, "any", "IEEE single precision: 32 bits, 4 bytes per value."),
        _plain("bf16", "BF16", 16, "any", "bfloat16: 16 bits, 2 bytes per value."),
        _plain("fp16", "FP16", 16, "any", "IEEE half precision: 16 bits, 2 bytes per value."),
        _plain(
            "fp8", "FP8 (E4M3)", 8, "fp8", "8-bit float, E4M3 layout: 8 bits, 1 byte per value."
        ),
        _plain(
            "fp8-e4m3", "FP8 E4M3", 8, "fp8", "8-bit float, 4 exponent / 3 mantissa bits: 1 byte."
        ),
        _plain(
            "fp8-e5m2", "FP8 E5M2", 8, "fp8", "8-bit float, 5 exponent / 2 mantissa bits: 1 byte."
        ),
        NumberFormat(
            slug="int8",
            name="INT8",
            value_bits=8,
            description="8-bit integer weights (per-channel scales, negligible): 1 byte per value.",
        ),
        NumberFormat(
            slug="int4",
            name="4-bit (rule of thumb)",
            value_bits=4,
            block_size=16,
            scale_bits=8,
            description=(
                "The seeds' generic 4-bit: 4 bits per value plus about 0.5 bits of scales "
                "= 4.5 bits = 0.5625 bytes per value."
            ),
        ),
        NumberFormat(
            slug="mxfp4",
            name="MXFP4",
            value_bits=4,
            block_size=32,
            scale_bits=8,
            needs="fp4",
            description="OCP microscaling FP4 (E2M1): 32-value blocks share an 8-bit E8M0 scale "
            "= 4 + 8/32 = 4.25 bits per value.",
        ),
        NumberFormat(
            slug="nvfp4",
            name="NVFP4",
            value_bits=4,
            block_size=16,
            scale_bits=8,
            needs="fp4",
            description="NVIDIA FP4 (E2M1): 16-value blocks share an FP8 E4M3 scale "
            "= 4 + 8/16 = 4.5 bits per value (the per-tensor FP32 scale is negligible).",
        ),
        NumberFormat(
            slug="nf4",
            name="NF4 (double-quantised)",
            value_bits=4,
            block_size=64,
            scale_bits=8,
            super_block_size=256,
            super_scale_bits=32,
            description="QLoRA NormalFloat4: 64-value blocks with an 8-bit quantised scale, and "
            "one FP32 scale per 256 blocks = 4 + 8/64 + 32/(64x256) = 4.127 bits per value.",
        ),
        NumberFormat(
            slug="awq-int4",
            name="AWQ INT4 (group 128)",
            value_bits=4,
            block_size=128,
            scale_bits=16,
            zero_point_bits=4,
            description="AWQ: groups of 128 values share an FP16 scale and a 4-bit zero point "
            "= 4 + (16+4)/128 = 4.15625 bits per value.",
        ),
        NumberFormat(
            slug="gptq-int4",
            name="GPTQ INT4 (group 128)",
            value_bits=4,
            block_size=128,
            scale_bits=16,
            zero_point_bits=4,
            description="GPTQ: groups of 128 values share an FP16 scale and a 4-bit packed zero "
            "point = 4 + (16+4)/128 = 4.15625 bits per value.",
        ),
    )
}


def get_format(slug: str, field: str = "format") -> NumberFormat:
    """Look up a shipped format by slug, or raise a SizingError naming ``field``."""
    try:
        return FORMATS[slug]
    except KeyError:
        raise SizingError(field, f"unknown number format {slug!r}") from None


def is_sixteen_bit(fmt: NumberFormat) -> bool:
    return fmt.value_bits == 16 and not fmt.block_size


def default_kv_format(weight_format: NumberFormat) -> NumberFormat:
    """Seed rule (part 7, "Which GPUs hold which models?"): 16-bit KV in the 16-bit rows,
    FP8 KV in the others. FP32 weights keep FP32's default of a 16-bit cache."""
    if is_sixteen_bit(weight_format):
        return weight_format
    if weight_format.value_bits >= 16:
        return FORMATS["bf16"]
    return FORMATS["fp8"]
