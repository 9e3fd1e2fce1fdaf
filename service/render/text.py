"""Human renderings of the core's answers: markdown for people and chat, CSV for spreadsheets.

JSON speaks bytes; here, and only here, sizes appear in GB (10^9 B) and GiB (2^30 B), each
labelled, so nobody mixes them.
"""

import csv
import io
from collections.abc import Sequence

from service.sizing.cost import Cost
from service.sizing.matrix import Matrix
from service.sizing.offload import Offload
from service.sizing.plan import Plan
from service.sizing.units import label_bytes, to_gb, to_gib


def _verdict(p: Plan) -> str:
    if not p.fits:
        return f"**Does not fit** on {p.gpu_count} x {p.gpu}"
    return (
        f"**{p.gpu_count} x {p.gpu}** ({p.status}), {to_gb(p.spare_bytes):,.1f} GB spare "
        f"({p.spare_fraction:.1%})"
    )


def money(cents: int | None, currency: str) -> str:
    """Integer minor units as a decimal amount with its currency: 1234567 -> '12,345.67 USD'."""
    if cents is None:
        return "-"
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{part:02d} {currency}"


def cost_text(cost: Cost | None) -> str:
    """'4 x 2.50 USD/h = 10.00 USD/h; buy 4 x 25,000.00 USD = 100,000.00 USD' (known parts)."""
    if cost is None:
        return "no price in the catalogue"
    parts = []
    n, cur = cost.gpu_count, cost.currency
    if cost.hourly_cost_cents is not None:
        parts.append(
            f"{n} x {money(cost.hourly_price_cents, cur)}/h = "
            f"{money(cost.hourly_cost_cents, cur)}/h"
        )
    if cost.purchase_cost_cents is not None:
        parts.append(
            f"buy {n} x {money(cost.purchase_price_cents, cur)} = "
            f"{money(cost.purchase_cost_cents, cur)}"
        )
    return "; ".join(parts)


def _experts_read(p: Plan) -> str:
    """MoE: how many experts a layer reads for the batch (uniform routing assumed)."""
    if not p.decode.experts_read_per_layer:
        return ""
    return f" (reading about {p.decode.experts_read_per_layer:,.2f} experts a layer)"


def plan_markdown(best: Plan, options: Sequence[Plan] = ()) -> str:
    g = best.per_gpu
    best_cost: Cost | None = getattr(best, "cost", None)  # PlanAnswer and PlanOption carry one
    lines = [
        f"# {best.model} on {best.gpu}",
        "",
        _verdict(best),
        "",
        f"- Split: tensor parallel {best.tensor_parallel} x pipeline {best.pipeline_parallel} "
        f"({best.nodes} node{'s' if best.nodes > 1 else ''})",
        f"- Weights ({best.weight_format}): {label_bytes(best.weights_bytes)}",
        f"- KV cache ({best.kv_format}, {best.concurrency} x {best.context_tokens:,} tokens): "
        f"{label_bytes(best.kv_cache_bytes)}",
        f"- KV pool: {label_bytes(best.kv_pool_bytes)}, room for {best.kv_pool_tokens:,} tokens: "
        f"{best.max_concurrency} conversations of {best.context_tokens:,} tokens at once",
        f"- Decode ceiling: {best.decode.tokens_per_s_per_sequence:,.1f} tokens/s per "
        f"conversation, {best.decode.tokens_per_s_aggregate:,.0f} tokens/s for "
        f"{best.decode.concurrency}{_experts_read(best)}",
        f"- Capacity basis: {best.capacity_basis}",
        *([f"- Cost: {cost_text(best_cost)}"] if best_cost is not None else []),
        "",
        "| per GPU | GB | GiB |",
        "|---|---:|---:|",
    ]
    for label, value in (
        ("capacity", g.capacity_bytes),
        ("usable (x utilisation)", g.usable_bytes),
        ("overhead", g.overhead_bytes),
        ("weights", g.weights_bytes),
        ("KV cache", g.kv_cache_bytes),
        ("spare", g.spare_bytes),
    ):
        lines.append(f"| {label} | {to_gb(value):,.2f} | {to_gib(value):,.2f} |")
    if best.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- `{w.code}`: {w.message}" for w in best.warnings]
    rule: str = getattr(best, "ranking_rule", "")  # PlanAnswer carries one
    if options:
        lines += [
            "",
            "## Every GPU, best first",
            "",
            *([f"Ranked {rule}.", ""] if rule else []),
            "| GPU | GPUs | status | spare GB | cost |",
            "|---|---:|---|---:|---|",
        ]
        for p in options:
            count = str(p.gpu_count) if p.fits else "-"
            option_cost: Cost | None = getattr(p, "cost", None)
            cost = "-" if option_cost is None else cost_text(option_cost)
            lines.append(
                f"| {p.gpu} | {count} | {p.status} | {to_gb(p.spare_bytes):,.1f} | {cost} |"
            )
    return "\n".join(lines) + "\n"


def _cell_text(count: int | None, fraction: float | None, amber: bool) -> str:
    if count is None or fraction is None:
        return "-"
    return f"{count}{' (amber)' if amber else ''} {fraction:.0%}"


def matrix_markdown(m: Matrix) -> str:
    w = m.workload
    lines = [
        "# Fewest GPUs per model and format",
        "",
        f"{w.concurrency} conversations of {w.context_tokens:,} tokens, "
        f"{to_gb(w.overhead_bytes_per_gpu):,.1f} GB overhead per GPU, "
        f"{w.gpu_memory_utilization:.0%} fill, {w.capacity_basis} capacity; each cell: GPUs and "
        "spare. Amber: under 5% spare.",
        "",
        "| model | format | weights GB | " + " | ".join(m.gpus) + " |",
        "|---|---|---:|" + "---:|" * len(m.gpus),
    ]
    for row in m.rows:
        cells = [_cell_text(c.gpu_count, c.spare_fraction, c.amber) for c in row.cells]
        lines.append(
            f"| {row.model} | {row.weight_format} | {to_gb(row.weights_bytes):,.1f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


def matrix_csv(m: Matrix) -> str:
    """One line per cell; the cost columns (COST_HEADERS) follow when any cell has a cost."""
    priced = any(getattr(c, "cost", None) is not None for row in m.rows for c in row.cells)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "model",
            "weight_format",
            "kv_format",
            "weights_GB",
            "gpu",
            "gpu_count",
            "tensor_parallel",
            "pipeline_parallel",
            "spare_GB",
            "spare_GiB",
            "spare_fraction",
            "status",
            "amber",
            *(COST_HEADERS if priced else []),
        ]
    )
    for row in m.rows:
        for c in row.cells:
            spare = c.spare_bytes
            cost = getattr(c, "cost", None)
            writer.writerow(
                [
                    row.model,
                    row.weight_format,
                    row.kv_format,
                    f"{to_gb(row.weights_bytes):.3f}",
                    c.gpu,
                    "" if c.gpu_count is None else c.gpu_count,
                    "" if c.tensor_parallel is None else c.tensor_parallel,
                    "" if c.pipeline_parallel is None else c.pipeline_parallel,
                    "" if spare is None else f"{to_gb(spare):.3f}",
                    "" if spare is None else f"{to_gib(spare):.3f}",
                    "" if c.spare_fraction is None else f"{c.spare_fraction:.4f}",
                    c.status,
                    "yes" if c.amber else "no",
                    *(cost_columns(cost) if priced else []),
                ]
            )
    return out.getvalue()


COST_HEADERS = [
    "currency",
    "hourly_price_per_gpu_cents",
    "hourly_cost_cents",
    "purchase_price_per_gpu_cents",
    "purchase_cost_cents",
    "price_observed_on",
]
"""Money in integer minor units of ``currency`` (cents), as in the JSON."""


def cost_columns(cost: Cost | None) -> list[str]:
    if cost is None:
        return [""] * len(COST_HEADERS)
    return [
        cost.currency,
        *(
            "" if v is None else str(v)
            for v in (
                cost.hourly_price_cents,
                cost.hourly_cost_cents,
                cost.purchase_price_cents,
                cost.purchase_cost_cents,
            )
        ),
        cost.price_observed_on or "",
    ]


def plans_csv(options: Sequence[Plan]) -> str:
    """The ranked plan list of /plan without a GPU, one row per GPU, units in the headers."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "rank",
            "model",
            "gpu",
            "weight_format",
            "kv_format",
            "fits",
            "status",
            "gpu_count",
            "tensor_parallel",
            "pipeline_parallel",
            "weights_bytes",
            "kv_cache_bytes",
            "budget_bytes",
            "spare_bytes",
            "spare_GB",
            "spare_GiB",
            "spare_fraction",
            *COST_HEADERS,
        ]
    )
    for rank, p in enumerate(options, start=1):
        writer.writerow(
            [
                rank,
                p.model,
                p.gpu,
                p.weight_format,
                p.kv_format,
                "yes" if p.fits else "no",
                p.status,
                p.gpu_count,
                p.tensor_parallel,
                p.pipeline_parallel,
                p.weights_bytes,
                p.kv_cache_bytes,
                p.budget_bytes,
                p.spare_bytes,
                f"{to_gb(p.spare_bytes):.3f}",
                f"{to_gib(p.spare_bytes):.3f}",
                f"{p.spare_fraction:.4f}",
                *cost_columns(getattr(p, "cost", None)),
            ]
        )
    return out.getvalue()


def offload_markdown(o: Offload) -> str:
    alt = o.fully_resident
    lines = [
        f"# {o.model} on {o.gpu_count} x {o.gpu} with CPU offload over {o.link}",
        "",
        f"- Resident: {label_bytes(o.resident_bytes)}; offloaded: {label_bytes(o.offloaded_bytes)}",
        f"- Mechanism `{o.mechanism}`: {o.mechanism_note}",
        f"- Each step of {o.batch_size:,} conversation(s) reads "
        f"{label_bytes(o.resident_read_bytes)} of resident weights and "
        f"{label_bytes(o.kv_read_bytes)} of KV from HBM; "
        f"{label_bytes(o.link_bytes_per_step)} of offloaded weights cross the link",
        f"- Per step: {o.hbm_s_per_step * 1000:,.1f} ms weights + {o.kv_s_per_step * 1000:,.1f} "
        f"ms KV from HBM + {o.link_s_per_step * 1000:,.1f} ms over the link = "
        f"{o.s_per_step * 1000:,.1f} ms",
        f"- {o.tokens_per_s:,.2f} tokens/s per conversation; GPU idle {o.gpu_idle_fraction:.0%}",
    ]
    if alt.gpu_count is not None and alt.tokens_per_s is not None:
        lines.append(
            f"- Fully resident instead: {alt.gpu_count} x {o.gpu} at {alt.tokens_per_s:,.1f} "
            "tokens/s"
        )
    if o.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- `{w.code}`: {w.message}" for w in o.warnings]
    return "\n".join(lines) + "\n"
