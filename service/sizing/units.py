"""Units. The core counts memory in integer bytes; GB and GiB exist only here.

Seed rule (part 7, "Why do vendors, Hugging Face and nvidia-smi show different numbers?"):
a GB is 10^9 bytes, a GiB is 2^30 bytes, about 7.4% bigger; pick one unit and convert
everything into it before you subtract. The core picks bytes.
"""

from fractions import Fraction
from functools import lru_cache

GB = 10**9
GiB = 2**30
MiB = 2**20
KiB = 2**10


def exact(value: float | int | Fraction) -> Fraction:
    """A float as the decimal the caller typed (0.9 -> 9/10), so byte arithmetic stays exact."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    return _typed_decimal(value)


@lru_cache(maxsize=1024)
def _typed_decimal(value: float) -> Fraction:
    """Fraction(repr(value)) parses a string: done once per distinct float (0.9, 0.92, ...)."""
    return Fraction(repr(value))


def gb(value: float | int) -> int:
    """Decimal gigabytes to bytes (rounded to the nearest byte)."""
    return round(exact(value) * GB)


def gib(value: float | int) -> int:
    """Binary gibibytes to bytes (rounded to the nearest byte)."""
    return round(exact(value) * GiB)


def mib(value: float | int) -> int:
    """Binary mebibytes to bytes; nvidia-smi's "Total" is in MiB."""
    return round(exact(value) * MiB)


def to_gb(n_bytes: int) -> float:
    """Bytes as decimal GB, for human renderings only."""
    return n_bytes / GB


def to_gib(n_bytes: int) -> float:
    """Bytes as binary GiB, for human renderings only."""
    return n_bytes / GiB


def gib_over_gb() -> Fraction:
    """How much bigger a GiB is than a GB: 1.073741824 (the seed's "about 7.4%")."""
    return Fraction(GiB, GB)


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling division (for positive denominators)."""
    return -(-numerator // denominator)


def label_bytes(n_bytes: int, digits: int = 1) -> str:
    """A human rendering with both units labelled, e.g. '141.2 GB (131.5 GiB)'."""
    return f"{to_gb(n_bytes):,.{digits}f} GB ({to_gib(n_bytes):,.{digits}f} GiB)"
