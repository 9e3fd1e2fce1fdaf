"""Which of several plans is best: the ranking rule options on several GPUs follow."""

from collections.abc import Sequence

from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import Plan, plan_if_splittable
from service.sizing.spare import Status
from service.sizing.workload import Workload

STATUS_ORDER: dict[Status, int] = {"fits": 0, "tight": 1, "amber": 2, "does_not_fit": 3}
RANKING_RULE = (
    "status first: plans that fit with at least 10% spare, then tight (under 10%), then amber "
    "(under 5%), then those that do not fit; within a status, the fewest GPUs, then the most "
    "spare"
)
"""Seed step 5: under about 10% spare, look again. A plan the seed says to look at again is not
a better answer than one it does not, however few GPUs it takes."""


def rank_key(p: Plan) -> tuple[int, int, float]:
    """Best first, by RANKING_RULE."""
    return (STATUS_ORDER[p.status], p.gpu_count, -p.spare_fraction)


def rank_gpus(
    model: ModelSpec,
    gpus: Sequence[GpuSpec],
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
) -> list[Plan]:
    """One plan per GPU, best first; GPUs no split can serve are left out."""
    plans = [plan_if_splittable(model, gpu, weight_format, kv_format, workload) for gpu in gpus]
    return sorted((p for p in plans if p is not None), key=rank_key)
