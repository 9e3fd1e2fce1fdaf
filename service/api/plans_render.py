"""Human renderings of saved plans: a review-ready markdown page and a CSV of the list.

As everywhere outside JSON, sizes appear in GB (10^9 B) and GiB (2^30 B), always labelled.
"""

import csv
import io
from collections.abc import Sequence

import msgspec

from service.plans.records import PlanEvent, PlanSummary, SavedPlan
from service.render.text import plan_markdown
from service.schemas.plan import PlanAnswer, TrainingAnswer
from service.sizing.units import to_gb, to_gib

TRAINING_ONLY = frozenset({"recipe", "zero_stage", "activation_fraction"})
LORA_ONLY = frozenset({"lora_rank", "lora_targets"})


def _inputs(plan: SavedPlan) -> list[str]:
    request = msgspec.to_builtins(plan.request)
    # Show only the inputs this workload reads: a reviewer should not wonder what zero_stage
    # does to an inference plan.
    unread: set[str] = set()
    if plan.request.workload == "inference":
        unread |= TRAINING_ONLY | LORA_ONLY
    elif plan.request.workload == "training":
        unread |= LORA_ONLY
    lines = ["## Inputs", "", "| input | value |", "|---|---|"]
    for field, value in request.items():
        if field in unread:
            continue
        if field == "model_spec" and value is not None:
            value = f"inline architecture {value.get('slug', '')!r}"
        if value is not None:
            lines.append(f"| {field} | {value} |")
    return lines


def _training(answer: TrainingAnswer) -> list[str]:
    g = answer.per_gpu
    verdict = "fits" if answer.fits else "does not fit"
    lines = [
        f"**{answer.gpu_count} x {answer.gpu}**, ZeRO stage {answer.zero_stage}: {verdict} "
        f"({answer.status}, {answer.spare_fraction:.1%} spare)",
        "",
        "| per GPU | GB | GiB |",
        "|---|---:|---:|",
    ]
    for label, value in (
        ("budget", g.budget_bytes),
        ("weights", g.weights_bytes),
        ("gradients", g.gradients_bytes),
        ("optimizer", g.optimizer_bytes),
        ("activations", g.activations_bytes),
        ("total", g.total_bytes),
        ("spare", g.spare_bytes),
    ):
        lines.append(f"| {label} | {to_gb(value):,.2f} | {to_gib(value):,.2f} |")
    return lines


def _answer(answer: PlanAnswer | TrainingAnswer) -> list[str]:
    if isinstance(answer, TrainingAnswer):
        return [f"## Answer: {answer.model} on {answer.gpu}", "", *_training(answer)]
    # The compute endpoint's rendering, one heading level down, so it nests under the plan.
    body = plan_markdown(answer, answer.options).rstrip("\n").split("\n")
    title = "## Answer: " + body[0].removeprefix("# ")
    return [title, *("#" + line if line.startswith("#") else line for line in body[1:])]


def _trail(events: Sequence[PlanEvent]) -> list[str]:
    lines = ["## Decision trail", "", "| when (UTC) | who | what | state | comment |"]
    lines.append("|---|---|---|---|---|")
    for e in events:
        what = e.kind if e.decision is None else f"{e.kind}: {e.decision}"
        state = f"{e.from_status or '-'} -> {e.to_status} (v{e.version})"
        comment = e.comment.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {e.at:%Y-%m-%d %H:%M:%S} | {e.actor} | {what} | {state} | {comment} |")
    return lines


def saved_plan_markdown(plan: SavedPlan, events: Sequence[PlanEvent]) -> str:
    lines = [
        f"# Plan {plan.id}: {plan.name}",
        "",
        f"- State: **{plan.status}** (version {plan.version})",
        f"- Author: {plan.author}; created {plan.created_at:%Y-%m-%d %H:%M:%S} UTC",
        f"- Model: {plan.model}; GPU: {plan.gpu}; workload: {plan.workload}",
    ]
    if plan.notes:
        lines += ["", plan.notes]
    lines += ["", *_inputs(plan), "", *_answer(plan.answer), "", *_trail(events)]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = (
    "id",
    "name",
    "status",
    "author",
    "version",
    "workload",
    "model",
    "gpu",
    "weight_format",
    "fits",
    "fit_status",
    "gpu_count",
    "spare_bytes",
    "spare_GB",
    "spare_GiB",
    "spare_fraction",
    "created_at_utc",
    "updated_at_utc",
)


def _cell(text: str) -> str:
    """Spreadsheets run a cell starting with = + - @ as a formula: keep names as text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def plans_csv(items: Sequence[PlanSummary]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in items:
        writer.writerow(
            [
                p.id,
                _cell(p.name),
                p.status,
                _cell(p.author),
                p.version,
                p.workload,
                p.model,
                p.gpu,
                p.weight_format,
                "yes" if p.fits else "no",
                p.fit_status,
                p.gpu_count,
                p.spare_bytes,
                f"{to_gb(p.spare_bytes):.3f}",
                f"{to_gib(p.spare_bytes):.3f}",
                f"{p.spare_fraction:.4f}",
                p.created_at.isoformat(),
                p.updated_at.isoformat(),
            ]
        )
    return out.getvalue()
