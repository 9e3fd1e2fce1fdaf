"""Slack answers: a short message, verdict first, as ``text`` plus Block Kit ``blocks``.

Pure: the answers of the core (plans, matrix, offload) and the GPUs' display names in, a
SlackMessage out. Sizes are always labelled, GB (10^9 B) beside GiB (2^30 B).
"""

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from service.chatops.commands import USAGE
from service.render.text import cost_text
from service.schemas.plan import PlanAnswer, PlanOption
from service.sizing.cost import CostedMatrix
from service.sizing.offload import Offload
from service.sizing.plan import Plan
from service.sizing.units import label_bytes

ResponseType = Literal["in_channel", "ephemeral"]
TOP_OPTIONS = 5


class SlackText(msgspec.Struct, frozen=True, kw_only=True):
    type: Literal["mrkdwn", "plain_text"] = "mrkdwn"
    text: str


class SlackBlock(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A Block Kit block: a ``section`` with text or a ``context`` with small elements."""

    type: Literal["section", "context"]
    text: SlackText | None = None
    elements: list[SlackText] | None = None


class SlackMessage(msgspec.Struct, frozen=True, kw_only=True):
    """What Slack shows: ``text`` is the notification and fallback, ``blocks`` the layout."""

    response_type: ResponseType
    text: str
    blocks: list[SlackBlock]


def section(text: str) -> SlackBlock:
    return SlackBlock(type="section", text=SlackText(text=text))


def context(*lines: str) -> SlackBlock:
    return SlackBlock(type="context", elements=[SlackText(text=line) for line in lines])


def message(
    verdict: str, *blocks: SlackBlock, response_type: ResponseType = "in_channel"
) -> SlackMessage:
    return SlackMessage(
        response_type=response_type, text=verdict, blocks=[section(verdict), *blocks]
    )


def with_picture(reply: SlackMessage, url: str) -> SlackMessage:
    """The reply with a link to the plan's memory picture (SVG) as its last block."""
    return msgspec.structs.replace(
        reply, blocks=[*reply.blocks, context(f"<{url}|Memory picture (SVG)>")]
    )


def display_name(slug: str, names: Mapping[str, str]) -> str:
    """'NVIDIA H100 SXM 80GB' -> 'H100 SXM 80GB'; the slug when the catalogue has no name."""
    name = names.get(slug) or slug
    return name.removeprefix("NVIDIA ").strip() or slug


def spare_text(p: Plan) -> str:
    return f"{label_bytes(p.spare_bytes)} spare ({p.spare_fraction:.1%})"


def plan_verdict(p: Plan, names: Mapping[str, str]) -> str:
    gpu = display_name(p.gpu, names)
    if not p.fits:
        short = label_bytes(-p.per_gpu.spare_bytes)
        return (
            f"*Does not fit*: {p.model} on {p.gpu_count} x {gpu} ({p.gpu}); "
            f"the busiest GPU is {short} short"
        )
    return f"*{p.gpu_count} x {gpu}* ({p.gpu}), {spare_text(p)}, {p.status.replace('_', ' ')}"


def _warnings(p: Plan) -> list[SlackBlock]:
    if not p.warnings:
        return []
    return [section("\n".join(f":warning: {w.message}" for w in p.warnings))]


def plan_message(answer: PlanAnswer, names: Mapping[str, str]) -> SlackMessage:
    """One GPU: the verdict, the arithmetic in GB and GiB, cost, warnings."""
    p = answer
    g = p.per_gpu
    details = (
        f"{p.model}: {p.weight_format} weights, {p.kv_format} KV cache, "
        f"{p.concurrency} conversations x {p.context_tokens:,} tokens\n"
        f"Weights {label_bytes(p.weights_bytes)} + KV cache {label_bytes(p.kv_cache_bytes)} "
        f"in {label_bytes(p.budget_bytes)} = {p.gpu_count} x {label_bytes(g.budget_bytes)} "
        f"(capacity x utilisation - overhead)\n"
        f"Split: tensor parallel {p.tensor_parallel} x pipeline {p.pipeline_parallel}"
    )
    if p.cost is not None:
        details += f"\nCost: {cost_text(p.cost)}"
    return message(plan_verdict(p, names), section(details), *_warnings(p))


def options_message(answer: PlanAnswer, names: Mapping[str, str]) -> SlackMessage:
    """No GPU named: the best GPUs, best first, by the answer's rank_by."""
    fitting = [o for o in answer.options if o.fits]
    by = {"gpus": "fewest GPUs", "hourly_cost": "hourly cost", "purchase_cost": "purchase cost"}
    head = (
        f"{answer.model} ({answer.weight_format}, {answer.concurrency} x "
        f"{answer.context_tokens:,} tokens), best by {by[answer.rank_by]}: "
    )
    if not fitting:
        verdict = head + "no GPU in the catalogue holds it with the allowed splits"
        return message(verdict, *_warnings(answer))
    lines = [_option_line(i, o, names) for i, o in enumerate(fitting[:TOP_OPTIONS], start=1)]
    more = len(fitting) - TOP_OPTIONS
    if more > 0:
        lines.append(f"... and {more} more that fit")
    notes = [f"Ranked {answer.ranking_rule}."] if answer.ranking_rule else []
    if answer.unpriced_gpus:
        notes.append(f"No price for: {', '.join(answer.unpriced_gpus)} (listed after the priced)")
    return message(
        head + plan_verdict(answer, names),
        section("\n".join(lines)),
        *([context(*notes)] if notes else []),
        *_warnings(answer),
    )


def _option_line(rank: int, o: PlanOption, names: Mapping[str, str]) -> str:
    line = f"{rank}. {o.gpu_count} x {display_name(o.gpu, names)} ({o.gpu}): {spare_text(o)}"
    if o.cost is not None:
        line += f"; {cost_text(o.cost)}"
    return line


def matrix_message(m: CostedMatrix, names: Mapping[str, str]) -> SlackMessage:
    """GPUs as lines, formats as columns: the fewest GPUs and the spare; '-' does not fit."""
    model = m.rows[0].model if m.rows else "?"
    fmts = [row.weight_format for row in m.rows]
    width = max([len(g) for g in m.gpus] + [3])
    header = "GPU".ljust(width) + "".join(f"  {f:>12}" for f in fmts)
    lines = [header]
    for column, gpu in enumerate(m.gpus):
        cells = []
        for row in m.rows:
            c = row.cells[column]
            if c.gpu_count is None or c.spare_fraction is None:
                cells.append("-")
            else:
                cells.append(f"{c.gpu_count} ({c.spare_fraction:.0%}){'!' if c.amber else ''}")
        lines.append(gpu.ljust(width) + "".join(f"  {cell:>12}" for cell in cells))
    w = m.workload
    fewest = _fewest(m, names)
    verdict = f"{model}: {fewest}"
    weights = ", ".join(f"{row.weight_format} {label_bytes(row.weights_bytes)}" for row in m.rows)
    return message(
        verdict,
        section("```\n" + "\n".join(lines) + "\n```"),
        context(
            f"GPUs (spare) per cell; ! amber: under 5% spare; - no split holds it. "
            f"{w.concurrency} conversations x {w.context_tokens:,} tokens, "
            f"{w.gpu_memory_utilization:.0%} fill, {label_bytes(w.overhead_bytes_per_gpu)} "
            f"overhead per GPU. Weights: {weights}."
        ),
    )


def _fewest(m: CostedMatrix, names: Mapping[str, str]) -> str:
    """The smallest fitting cell of each format, e.g. 'bf16 on 1 x B200 (b200)'."""
    parts = []
    for row in m.rows:
        fits = [c for c in row.cells if c.gpu_count is not None]
        if not fits:
            parts.append(f"{row.weight_format} fits no GPU")
            continue
        best = min(fits, key=lambda c: (c.gpu_count or 0, -(c.spare_fraction or 0)))
        parts.append(
            f"{row.weight_format} on {best.gpu_count} x {display_name(best.gpu, names)}"
            f" ({best.gpu})"
        )
    return "fewest GPUs: " + "; ".join(parts)


def offload_message(o: Offload, names: Mapping[str, str]) -> SlackMessage:
    gpu = display_name(o.gpu, names)
    verdict = (
        f"*{o.tokens_per_s:,.2f} tokens/s* per conversation: {o.model} ({o.weight_format}) on "
        f"{o.gpu_count} x {gpu} ({o.gpu}) with {label_bytes(o.offloaded_bytes)} of weights "
        f"in CPU memory; the GPU waits {o.gpu_idle_fraction:.0%} of each step"
    )
    details = (
        f"Resident {label_bytes(o.resident_bytes)} read at HBM speed: "
        f"{o.hbm_s_per_step * 1000:,.1f} ms; offloaded {label_bytes(o.offloaded_bytes)} over "
        f"{o.link} ({o.mechanism}: {label_bytes(o.link_bytes_per_step)} cross per step): "
        f"{o.link_s_per_step * 1000:,.1f} ms; KV {o.kv_s_per_step * 1000:,.1f} ms; "
        f"{o.s_per_step * 1000:,.1f} ms per token"
    )
    alt = o.fully_resident
    if alt.gpu_count is not None and alt.tokens_per_s is not None:
        details += (
            f"\nFully resident instead: {alt.gpu_count} x {gpu} at {alt.tokens_per_s:,.1f} tokens/s"
        )
    details += "".join(f"\n{w.message}" for w in o.warnings)
    return message(verdict, section(details))


def list_message(title: str, lines: Sequence[str]) -> SlackMessage:
    return message(title, section("\n".join(lines)), response_type="ephemeral")


def help_message(reason: str = "") -> SlackMessage:
    """The usage; with ``reason`` when the text was not a command."""
    verdict = f"{reason}. Usage:" if reason else "GPU capacity planner commands:"
    return message(verdict, section(USAGE), response_type="ephemeral")


def problem_message(text: str, suggestions: Sequence[str] = ()) -> SlackMessage:
    """A name the catalogue does not know, or input the core refuses: say why, suggest."""
    blocks = []
    if suggestions:
        blocks.append(context("Did you mean: " + ", ".join(f"`{s}`" for s in suggestions)))
    return message(text, *blocks, response_type="ephemeral")
