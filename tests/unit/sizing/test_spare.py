"""The spare status: seed step 5 (under about 10% spare, look again) and amber under 5%."""

import pytest

from service.sizing.spare import spare_status


@pytest.mark.parametrize(
    ("fraction", "status"),
    [
        (0.5, "fits"),
        (0.10, "fits"),
        (0.0999, "tight"),
        (0.05, "tight"),
        (0.0499, "amber"),
        (0.0, "amber"),
        (-0.01, "does_not_fit"),
    ],
)
def test_status_thresholds_are_10_and_5_percent(fraction: float, status: str) -> None:
    assert spare_status(fraction) == status
