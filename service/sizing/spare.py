"""A plan's status from its spare fraction: fits, tight, amber or does not fit.

Seed, step 5 ("under about 10% spare, look again") and the matrix legend (amber under 5%).
"""

from typing import Literal

Status = Literal["fits", "tight", "amber", "does_not_fit"]

TIGHT_BELOW = 0.10
"""Seed, step 5: under about 10% spare, look again."""
AMBER_BELOW = 0.05
"""Seed, matrix legend: amber cells fit with under 5% to spare."""


def spare_status(spare_fraction: float) -> Status:
    if spare_fraction < 0:
        return "does_not_fit"
    if spare_fraction < AMBER_BELOW:
        return "amber"
    if spare_fraction < TIGHT_BELOW:
        return "tight"
    return "fits"
