"""Human renderings of POST /speed and of a traffic plan: markdown for people and chat, CSV for
spreadsheets. Times in ms or s and rates per second, each labelled; money in the currency's
units (the JSON's integer cents / 100)."""

import csv
import io

from service.render.text import matrix_csv, money
from service.schemas.compute import TrafficMatrix
from service.schemas.speed import SpeedAnswer, SpeedRow
from service.sizing.serving.traffic_plan import TrafficOption, TrafficPlan, duration_text

SPEED_HEADERS = list(SpeedRow.__struct_fields__)
"""The JSON rows' fields, units in the names (per replica unless per GPU)."""


def _number(value: float | int | None, digits: int = 6) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def speed_csv(a: SpeedAnswer) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SPEED_HEADERS)
    for r in a.rows:
        writer.writerow(
            [
                _number(r.concurrency),
                _number(r.request_rate_per_s),
                _number(r.ttft_s),
                _number(r.tpot_s),
                _number(r.itl_s),
                _number(r.output_tokens_per_s),
                _number(r.output_tokens_per_s_per_gpu),
                _number(r.total_tokens_per_s),
                _number(r.total_tokens_per_s_per_gpu),
                _number(r.requests_per_s),
                _number(r.requests_per_s_per_gpu),
                _number(r.running_batch),
                r.bottleneck,
                "yes" if r.stable else "no",
                _number(r.utilisation),
            ]
        )
    return out.getvalue()


def _time(seconds: float | None) -> str:
    return "unbounded" if seconds is None else duration_text(seconds)


def speed_markdown(a: SpeedAnswer) -> str:
    split = f"TP{a.tensor_parallel}" + (
        f" x PP{a.pipeline_parallel}" if a.pipeline_parallel > 1 else ""
    )
    first = "concurrency" if a.loop == "closed" else "requests/s in"
    lines = [
        f"# {a.model} on {a.gpus_per_replica} x {a.gpu} ({split}, {a.engine})",
        "",
        f"{a.input_tokens:,}-token prompts, {a.output_tokens:,}-token answers; "
        f"{a.weight_format} weights, {a.kv_format} KV cache; KV pool {a.kv_cache_tokens:,} "
        f"tokens at max_model_len {a.max_model_len:,}; max_num_seqs {a.max_num_seqs:,}, "
        f"max_num_batched_tokens {a.max_num_batched_tokens:,}. "
        f"{'Closed loop' if a.loop == 'closed' else 'Open loop'}; per replica.",
        "",
        f"| {first} | TTFT | TPOT | output tokens/s | output tokens/s per GPU | requests/s | "
        "running batch | bottleneck |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in a.rows:
        point = f"{r.concurrency:,}" if r.concurrency is not None else f"{r.request_rate_per_s:,g}"
        unstable = "" if r.stable else " (past capacity)"
        lines.append(
            f"| {point} | {_time(r.ttft_s)} | {duration_text(r.tpot_s)} | "
            f"{r.output_tokens_per_s:,.0f} | {r.output_tokens_per_s_per_gpu:,.0f} | "
            f"{r.requests_per_s:,.2f} | {r.running_batch:,.1f} | {r.bottleneck}{unstable} |"
        )
    lines += ["", *(f"_{n}_" for n in a.notes)]
    return "\n".join(lines) + "\n"


def option_cost_text(o: TrafficOption) -> str:
    c = o.cost
    if c is None:
        return "no hourly price" if o.feasible else "-"
    return (
        f"{money(c.hourly_cost_cents, c.currency)}/h, {money(c.monthly_cost_cents, c.currency)}"
        f"/month, {money(c.cost_per_million_output_tokens_cents, c.currency)} per million "
        "output tokens"
    )


def traffic_markdown(plan: TrafficPlan) -> str:
    t = plan.traffic
    limits = [f"TTFT <= {duration_text(t.ttft_s)}"] if t.ttft_s is not None else []
    limits += [f"TPOT <= {duration_text(t.tpot_s)}"] if t.tpot_s is not None else []
    lines = [
        "## Traffic",
        "",
        f"{t.requests_per_s:,g} requests/s of {t.input_tokens:,}-token prompts and "
        f"{t.output_tokens:,}-token answers ({t.engine}); "
        f"{', '.join(limits) or 'no latency limits'}; replicas planned at most "
        f"{t.max_utilisation:.0%} busy.",
        "",
        f"**{plan.summary}**",
    ]
    if plan.chosen is not None and plan.chosen.cost is not None:
        lines.append(f"- Cost: {option_cost_text(plan.chosen)}")
    if plan.chosen is not None and plan.chosen.headroom is not None:
        lines.append(f"- Headroom: {plan.chosen.headroom:.0%} more traffic within the limits")
    if plan.why_not_cheaper:
        lines += ["", "Cheaper options that do not serve it:" if plan.feasible else "Why not:"]
        lines += [f"- {why}" for why in plan.why_not_cheaper]
    lines += [
        "",
        f"Options ({plan.ranking_rule}):",
        "",
        "| GPU | TP | replicas | GPUs | requests/s per replica | headroom | TTFT | TPOT | cost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for o in plan.options:
        if not o.feasible:
            lines.append(f"| {o.gpu} | {o.tensor_parallel} | - | - | - | - | - | - | {o.summary} |")
            continue
        lines.append(
            f"| {o.gpu} | {o.tensor_parallel} | {o.replicas} | {o.gpu_count} | "
            f"{o.requests_per_s_per_replica or 0:,.2f} | {o.headroom or 0:.0%} | "
            f"{_time(o.ttft_s)} | {_time(o.tpot_s)} | {option_cost_text(o)} |"
        )
    if plan.unpriced_gpus:
        lines += ["", f"No hourly price in the catalogue: {', '.join(plan.unpriced_gpus)}."]
    return "\n".join(lines) + "\n"


def matrix_traffic_markdown(m: TrafficMatrix) -> str:
    """The GPUs each cell needs for the traffic (the matrix's ``traffic`` cells)."""
    lines = [
        "",
        "## GPUs for the traffic",
        "",
        "Each cell: replicas x tensor parallel = GPUs, and the hourly cost when priced; - none "
        "serves it.",
        "",
        "| model | format | " + " | ".join(m.gpus) + " |",
        "|---|---|" + "---:|" * len(m.gpus),
    ]
    for row in m.rows:
        cells = []
        for c in row.cells:
            t = c.traffic
            if t is None or not t.feasible:
                cells.append("-")
                continue
            cost = (
                "" if t.cost is None else f", {money(t.cost.hourly_cost_cents, t.cost.currency)}/h"
            )
            cells.append(f"{t.replicas} x TP{t.tensor_parallel} = {t.gpu_count}{cost}")
        lines.append(f"| {row.model} | {row.weight_format} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


TRAFFIC_HEADERS = [
    "traffic_feasible",
    "traffic_replicas",
    "traffic_tensor_parallel",
    "traffic_gpu_count",
    "traffic_requests_per_s_per_replica",
    "traffic_headroom",
    "traffic_ttft_s",
    "traffic_tpot_s",
    "traffic_currency",
    "traffic_hourly_cost_cents",
    "traffic_monthly_cost_cents",
    "traffic_cost_per_million_output_tokens_cents",
    "traffic_summary",
]


def matrix_traffic_csv(m: TrafficMatrix) -> str:
    """The matrix's CSV (``render.matrix_csv``) with each cell's traffic columns after it."""
    base = matrix_csv(m).splitlines()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TRAFFIC_HEADERS)
    for row in m.rows:
        for c in row.cells:
            t = c.traffic
            if t is None:
                writer.writerow([""] * len(TRAFFIC_HEADERS))
                continue
            cost = t.cost
            writer.writerow(
                [
                    "yes" if t.feasible else "no",
                    _number(t.replicas),
                    _number(t.tensor_parallel),
                    _number(t.gpu_count),
                    _number(t.requests_per_s_per_replica),
                    _number(t.headroom),
                    _number(t.ttft_s),
                    _number(t.tpot_s),
                    "" if cost is None else cost.currency,
                    "" if cost is None else str(cost.hourly_cost_cents),
                    "" if cost is None else str(cost.monthly_cost_cents),
                    "" if cost is None else str(cost.cost_per_million_output_tokens_cents),
                    t.summary,
                ]
            )
    extra = out.getvalue().splitlines()
    return "".join(f"{a},{b}\n" for a, b in zip(base, extra, strict=True))
