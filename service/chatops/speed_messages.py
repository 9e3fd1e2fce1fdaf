"""Slack answers for the serving-speed commands: a ``speed`` sweep, and a plan's traffic."""

from collections.abc import Mapping

from service.chatops.slack import SlackBlock, SlackMessage, context, display_name, message, section
from service.render.speed import option_cost_text
from service.schemas.speed import SpeedAnswer
from service.sizing.serving.traffic_plan import TrafficPlan, duration_text

TOP_REASONS = 5


def speed_message(a: SpeedAnswer, names: Mapping[str, str]) -> SlackMessage:
    """The sweep as a fixed-width table, the best throughput first in the verdict."""
    gpu = display_name(a.gpu, names)
    best = max(a.rows, key=lambda r: r.output_tokens_per_s if r.stable else 0.0)
    point = "users" if a.loop == "closed" else "req/s in"
    verdict = (
        f"{a.model} on {a.gpus_per_replica} x {gpu} ({a.gpu}, TP{a.tensor_parallel}, "
        f"{a.engine}): up to *{best.output_tokens_per_s:,.0f} output tokens/s* per replica "
        f"({a.input_tokens:,}-token prompts, {a.output_tokens:,}-token answers)"
    )
    lines = [f"{point:>9}  {'TTFT':>9}  {'TPOT':>8}  {'out tok/s':>10}  {'req/s':>7}  bound"]
    for r in a.rows:
        where = f"{r.concurrency:,}" if r.concurrency is not None else f"{r.request_rate_per_s:g}"
        ttft = "unbounded" if r.ttft_s is None else duration_text(r.ttft_s)
        lines.append(
            f"{where:>9}  {ttft:>9}  {duration_text(r.tpot_s):>8}  "
            f"{r.output_tokens_per_s:>10,.0f}  {r.requests_per_s:>7,.2f}  {r.bottleneck}"
        )
    return message(
        verdict,
        section("```\n" + "\n".join(lines) + "\n```"),
        context(
            f"KV pool {a.kv_cache_tokens:,} tokens at max_model_len {a.max_model_len:,}; "
            f"{a.weight_format} weights, {a.kv_format} KV. {a.notes[0] if a.notes else ''}"
        ),
    )


def traffic_blocks(plan: TrafficPlan) -> list[SlackBlock]:
    """The chosen replicas and their cost, and why the cheaper options fail."""
    head = f"*Traffic*: {plan.summary}"
    if plan.chosen is not None and plan.chosen.cost is not None:
        head += f"\nCost: {option_cost_text(plan.chosen)}"
    blocks = [section(head)]
    reasons = plan.why_not_cheaper[:TOP_REASONS]
    if reasons:
        more = len(plan.why_not_cheaper) - len(reasons)
        tail = [f"... and {more} more"] if more > 0 else []
        title = "Cheaper options that do not serve it:" if plan.feasible else "Why not:"
        blocks.append(context(title, *reasons, *tail))
    return blocks
