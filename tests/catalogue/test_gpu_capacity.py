"""The shipped GPUs' capacities (service/catalogue/data/gpus.json): every row carries the
driver-visible bytes the default capacity basis reads, and its marketed figure read as decimal
bytes is never more than that (the fallback for a GPU without the figure is the smaller reading).
"""

import json
from pathlib import Path

import pytest

import service.catalogue

DATA = Path(service.catalogue.__file__).parent / "data" / "gpus.json"
ROWS = {row["slug"]: row for row in json.loads(DATA.read_text(encoding="utf-8"))}
MIB = 2**20

# nvidia-smi's "Total" (MiB) as the rows' sources quote it; MI300X: rocm-smi's 205,822,885,888 B.
VISIBLE_MIB = {
    "h100-sxm": 81_559,
    "h100-pcie": 81_559,
    "h100-nvl": 95_830,
    "h200": 143_771,
    "b200": 183_359,
    "gb200": 189_471,
    "a100-40gb": 40_960,
    "a100-80gb": 81_920,
    "l40s": 46_068,
    "rtx-4090": 24_564,
    "mi300x": 196_288,  # 205,822,885,888 / 1,048,576
}


def test_every_shipped_gpu_has_its_driver_visible_bytes() -> None:
    assert set(ROWS) == set(VISIBLE_MIB)
    for slug, mib in VISIBLE_MIB.items():
        # e.g. H100 SXM: 81,559 x 1,048,576 = 85,520,809,984 B.
        assert ROWS[slug]["driver_visible_bytes"] == mib * MIB, slug
    assert ROWS["h100-sxm"]["driver_visible_bytes"] == 85_520_809_984
    assert ROWS["mi300x"]["driver_visible_bytes"] == 205_822_885_888


@pytest.mark.parametrize("slug", sorted(VISIBLE_MIB))
def test_the_marketed_figure_read_as_decimal_is_never_more_than_the_driver_shows(
    slug: str,
) -> None:
    # GiB-marketed: H100 "80 GB" = 80 GiB of HBM, 85.5 GB visible (7% more); decimal-marketed:
    # B200 "192 GB", 192.27 GB visible (0.14% more).
    row = ROWS[slug]
    assert row["memory_bytes"] <= row["driver_visible_bytes"]
