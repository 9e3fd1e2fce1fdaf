"""The numbers a vLLM start-up log prints, and nvidia-smi's CSV: text in, numbers out (the
log parser, service.verify.startup_log, reads its lines' numbers with these)."""

import re

import msgspec

from service.sizing.errors import SizingError
from service.sizing.units import GiB, MiB

__all__ = [
    "MAX_NUMBER_CHARS",
    "NUMBER",
    "NvidiaSmiGpu",
    "gib_bytes",
    "parse_nvidia_smi",
    "to_float",
    "to_int",
]


class NvidiaSmiGpu(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    name: str
    memory_used_bytes: int | None
    memory_total_bytes: int | None


NUMBER = r"(-?(?:\d(?:[\d,]*\d)?(?:\.\d+)?|\.\d+))"
r"""A printed number ("1,192,160", "0.95", ".5"). One way to match each digit run: with two
adjacent runs that can both take digits (the former ``[\d,]*\.?\d+``) a long line of digits
that then fails to match backtracks quadratically (a line as long as the 1 MiB body limit
allows took about an hour)."""


MAX_NUMBER_CHARS = 24
"""The longest number the parser reads (digits, separators and the point): a real log's largest
is a byte count of 12 digits. Longer is a corrupted or hostile paste: as a float it would be
infinite, as an int past Python's 4,300-digit limit, either an error."""


def _digits(s: str, field: str) -> str:
    """A number the log prints, without its separators; a 422 on ``field`` for one too long to
    be real."""
    if len(s) > MAX_NUMBER_CHARS:  # the message only when raised
        raise SizingError(
            field, f"a number of {len(s):,} characters ({s[:12]}...) is not one vLLM prints"
        )
    return s.replace(",", "")


def to_float(s: str, field: str = "log") -> float:
    return float(_digits(s, field))


def to_int(s: str, field: str = "log") -> int:
    """A count ("1,192,160") exactly; one with a point or a sign through its float."""
    digits = _digits(s, field)
    return int(digits) if digits.isdecimal() else int(float(digits))


def gib_bytes(s: str) -> int:
    return round(to_float(s) * GiB)


def parse_nvidia_smi(csv: str) -> list[NvidiaSmiGpu]:
    """``nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv`` (MiB)."""
    gpus: list[NvidiaSmiGpu] = []
    lines = [ln.strip() for ln in csv.strip().splitlines() if ln.strip()]
    if not lines:
        return gpus
    header = [h.strip().lower() for h in lines[0].split(",")]
    if not any(h.startswith("index") for h in header):
        raise SizingError(
            "nvidia_smi",
            "expected the CSV of nvidia-smi --query-gpu=index,name,memory.used,memory.total "
            "--format=csv, starting with its header line",
        )

    def mib(value: str) -> int | None:
        m = re.search(r"([\d.]+)\s*MiB", value)
        return round(to_float(m.group(1), "nvidia_smi") * MiB) if m else None

    for row in lines[1:]:
        cells = [c.strip() for c in row.split(",")]
        if len(cells) != len(header) or not cells[0].isdecimal():
            raise SizingError("nvidia_smi", f"cannot read the row {row!r}")
        by = dict(zip(header, cells, strict=True))
        used = next((v for k, v in by.items() if k.startswith("memory.used")), "")
        total = next((v for k, v in by.items() if k.startswith("memory.total")), "")
        gpus.append(
            NvidiaSmiGpu(
                index=to_int(cells[0], "nvidia_smi"),
                name=by.get("name", ""),
                memory_used_bytes=mib(used),
                memory_total_bytes=mib(total),
            )
        )
    return gpus
