"""Cost: what a plan's GPUs cost to rent per hour and to buy, in integer minor units.

Money never passes through a float: prices are integers of the currency's minor unit (cents for
USD and EUR), and a plan's cost is ``gpu_count x price``, exact. A GPU without a price has no
cost; ranking by cost puts such GPUs after every priced one (and says so).
"""

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from service.sizing.errors import SizingError
from service.sizing.matrix import Matrix, MatrixCell, MatrixRow
from service.sizing.plan import Plan
from service.sizing.ranking import RANKING_RULE, STATUS_ORDER, rank_key

RankBy = Literal["gpus", "hourly_cost", "purchase_cost"]
NO_PRICE = "no_price"
"""Warning code: ranked by cost, but some GPUs have no price of that kind."""


class GpuPrice(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU's prices as the catalogue holds them (None: not known)."""

    gpu: str
    currency: str | None = None
    hourly_price_cents: int | None = None
    """Cloud price of one GPU for one hour, in the currency's minor unit."""
    purchase_price_cents: int | None = None
    """Price to buy one GPU, in the currency's minor unit."""
    price_observed_on: str | None = None
    """ISO date (YYYY-MM-DD) the prices were seen."""
    price_source: str = ""

    @property
    def priced(self) -> bool:
        return self.currency is not None and (
            self.hourly_price_cents is not None or self.purchase_price_cents is not None
        )


class Cost(msgspec.Struct, frozen=True, kw_only=True):
    """``gpu_count`` GPUs at the catalogue's prices; a null total means that price is unknown."""

    currency: str
    gpu_count: int
    hourly_price_cents: int | None
    """Per GPU."""
    purchase_price_cents: int | None
    """Per GPU."""
    hourly_cost_cents: int | None
    """gpu_count x hourly_price_cents."""
    purchase_cost_cents: int | None
    """gpu_count x purchase_price_cents."""
    price_observed_on: str | None
    price_source: str


def cost_of(gpu_count: int | None, price: GpuPrice | None) -> Cost | None:
    """The cost of ``gpu_count`` GPUs; None when there is nothing to price (no GPUs, no price)."""
    if gpu_count is None or price is None or not price.priced:
        return None
    assert price.currency is not None
    hourly, purchase = price.hourly_price_cents, price.purchase_price_cents
    return Cost(
        currency=price.currency,
        gpu_count=gpu_count,
        hourly_price_cents=hourly,
        purchase_price_cents=purchase,
        hourly_cost_cents=None if hourly is None else gpu_count * hourly,
        purchase_cost_cents=None if purchase is None else gpu_count * purchase,
        price_observed_on=price.price_observed_on,
        price_source=price.price_source,
    )


def plan_cost(p: Plan, prices: Mapping[str, GpuPrice]) -> Cost | None:
    """A plan's cost: only a plan that fits has GPUs worth pricing."""
    return cost_of(p.gpu_count if p.fits else None, prices.get(p.gpu))


def _total(cost: Cost | None, rank_by: RankBy) -> int | None:
    if cost is None:
        return None
    return cost.hourly_cost_cents if rank_by == "hourly_cost" else cost.purchase_cost_cents


def check_one_currency(costs: Sequence[Cost | None], rank_by: RankBy) -> None:
    """Totals in different currencies do not compare: refuse to rank them (a 422 on rank_by)."""
    currencies = sorted({c.currency for c in costs if c is not None and _total(c, rank_by)})
    if len(currencies) > 1:
        raise SizingError(
            "rank_by",
            f"the GPUs are priced in several currencies ({', '.join(currencies)}): "
            f"cannot rank by {rank_by}; price them in one currency or rank by gpus",
        )


def rank_plans(
    plans: Sequence[Plan], costs: Sequence[Cost | None], rank_by: RankBy
) -> tuple[list[int], list[str]]:
    """The order of ``plans`` (indices, best first) and the fitting GPUs left unpriced.

    gpus: the core's order (``RANKING_RULE``). hourly_cost / purchase_cost: the same status
    first, then priced before unpriced, then the lowest total, then the core's order.
    """
    indices = list(range(len(plans)))
    if rank_by == "gpus":
        return sorted(indices, key=lambda i: rank_key(plans[i])), []
    check_one_currency(costs, rank_by)

    def key(i: int) -> tuple[int, bool, int, tuple[int, int, float]]:
        total = _total(costs[i], rank_by)
        return (STATUS_ORDER[plans[i].status], total is None, total or 0, rank_key(plans[i]))

    unpriced = [
        p.gpu for p, c in zip(plans, costs, strict=True) if p.fits and _total(c, rank_by) is None
    ]
    return sorted(indices, key=key), unpriced


def ranking_rule(rank_by: RankBy) -> str:
    """How ``rank_plans`` orders options, in words (the answer's ``ranking_rule``)."""
    if rank_by == "gpus":
        return RANKING_RULE
    total = "hourly" if rank_by == "hourly_cost" else "purchase"
    return (
        "status first: plans that fit with at least 10% spare, then tight (under 10%), then "
        f"amber (under 5%), then those that do not fit; within a status, the lowest {total} "
        "cost (GPUs without that price after the priced ones), then the fewest GPUs, then the "
        "most spare"
    )


class CostedCell(MatrixCell, frozen=True, kw_only=True):
    cost: Cost | None = None
    """The cell's GPUs at the catalogue's prices; null without a price or a fit."""


class CostedRow(MatrixRow, frozen=True, kw_only=True):
    cells: list[CostedCell]  # type: ignore[assignment]


class CostedMatrix(Matrix, frozen=True, kw_only=True):
    rows: list[CostedRow]  # type: ignore[assignment]


def cost_matrix(m: Matrix, prices: Mapping[str, GpuPrice]) -> CostedMatrix:
    """The matrix with each fitting cell's cost (gpu_count x the column's prices). Cells built
    as CostedCell already (build_matrix's ``cell_type``) only gain their cost; frozen cells
    shared by several rows (a column's does-not-fit cell) are costed once, and each (GPU,
    count)'s cost is computed once."""
    costs: dict[tuple[str, int | None], Cost | None] = {}
    costed: dict[int, CostedCell] = {}  # by the id of a cell of ``m``, alive while it is

    def cell_of(cell: MatrixCell) -> CostedCell:
        found = costed.get(id(cell))
        if found is None:
            key = (cell.gpu, cell.gpu_count)
            if key not in costs:
                costs[key] = cost_of(cell.gpu_count, prices.get(cell.gpu))
            cost = costs[key]
            if isinstance(cell, CostedCell):
                found = cell if cost is None else msgspec.structs.replace(cell, cost=cost)
            else:
                found = CostedCell(**msgspec.structs.asdict(cell), cost=cost)
            costed[id(cell)] = found
        return found

    rows = [
        CostedRow(**{**msgspec.structs.asdict(row), "cells": [cell_of(c) for c in row.cells]})
        for row in m.rows
    ]
    return CostedMatrix(gpus=m.gpus, workload=m.workload, rows=rows)
