"""The CLI's readable tables: a plan, a vLLM plan, a matrix and an offload answer as plain text
for a terminal (``python -m service plan ...`` without ``--json``). Sizes are labelled GB or GiB.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from service.render.text import cost_text
from service.schemas.plan import PlanAnswer, TrainingAnswer
from service.schemas.speed import SpeedAnswer
from service.sizing.cost import CostedMatrix
from service.sizing.offload import Offload
from service.sizing.plan import Plan
from service.sizing.serving.traffic_plan import TrafficPlan, duration_text
from service.sizing.units import label_bytes, to_gb, to_gib

if TYPE_CHECKING:
    from service.sizing.vllm.plan import VllmPlanAnswer


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first left-aligned, the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def verdict(p: Plan) -> str:
    if not p.fits:
        return (
            f"does not fit: {p.gpu_count} x {p.gpu} is "
            f"{label_bytes(-p.per_gpu.spare_bytes)} short per GPU"
        )
    return (
        f"{p.gpu_count} x {p.gpu}: {p.status}, {label_bytes(p.spare_bytes)} spare "
        f"({p.spare_fraction:.1%})"
    )


def render_plan(answer: PlanAnswer | TrainingAnswer) -> str:
    if isinstance(answer, TrainingAnswer):
        return (
            f"{answer.model} {answer.workload} on {answer.gpu}: {answer.gpu_count} GPU(s), "
            f"{answer.status}, {label_bytes(answer.spare_bytes)} spare "
            f"({answer.spare_fraction:.1%})\n"
        )
    p = answer
    g = p.per_gpu
    out = [
        f"{p.model} on {p.gpu}: {p.weight_format} weights, {p.kv_format} KV cache, "
        f"{p.concurrency} conversations x {p.context_tokens:,} tokens",
        verdict(p),
        f"split: tensor parallel {p.tensor_parallel} x pipeline {p.pipeline_parallel}",
    ]
    if p.cost is not None:
        out.append(f"cost: {cost_text(p.cost)}")
    out.append("")
    rows = [
        [label, f"{value:,}", f"{to_gb(value):,.2f}", f"{to_gib(value):,.2f}"]
        for label, value in (
            ("capacity", g.capacity_bytes),
            ("usable (x utilisation)", g.usable_bytes),
            ("overhead", g.overhead_bytes),
            ("budget", g.budget_bytes),
            ("weights", g.weights_bytes),
            ("KV cache", g.kv_cache_bytes),
            ("spare", g.spare_bytes),
        )
    ]
    out.append(table(["per GPU", "bytes", "GB", "GiB"], rows))
    if p.options:
        out += ["", f"every GPU, best first (by {p.rank_by}): {p.ranking_rule}"]
        option_rows = [
            [
                str(i),
                o.gpu,
                str(o.gpu_count) if o.fits else "-",
                o.status,
                f"{to_gb(o.spare_bytes):,.1f}",
                f"{to_gib(o.spare_bytes):,.1f}",
                f"{o.spare_fraction:.1%}",
                "-" if o.cost is None else cost_text(o.cost),
            ]
            for i, o in enumerate(p.options, start=1)
        ]
        header = ["#", "GPU", "GPUs", "status", "spare GB", "spare GiB", "spare", "cost"]
        out.append(table(header, option_rows))
    if p.warnings:
        out += ["", "warnings:", *(f"  - {w.message}" for w in p.warnings)]
    return "\n".join(out) + "\n" + _traffic_text(p.traffic)


def _traffic_text(plan: TrafficPlan | None) -> str:
    return "" if plan is None else render_traffic(plan)


def render_vllm_plan(answer: "VllmPlanAnswer") -> str:
    p = answer.prediction
    g = p.per_gpu
    out = [
        f"{answer.model} on {answer.gpu} (vLLM method, {p.version}): "
        f"{answer.concurrency} conversations x {answer.context_tokens:,} tokens",
        f"{'fits' if answer.fits else 'does not fit'} on {answer.gpu_count} GPU(s): "
        f"tensor parallel {answer.tensor_parallel} x pipeline {answer.pipeline_parallel}",
        "",
        "vLLM will log:",
        *(f"  {line}" for line in answer.log_lines),
        "",
    ]
    rows = [
        [label, f"{value:,}", f"{to_gib(value):,.2f}"]
        for label, value in (
            ("torch-visible total", g.total_bytes),
            ("x gpu_memory_utilization", g.usable_bytes),
            ("weights as loaded", g.weights_bytes),
            ("activation peak", g.activation_bytes),
            ("non-torch", g.non_torch_bytes),
            ("CUDA graphs (estimate)", g.cuda_graph_bytes),
            ("KV cache", g.kv_cache_bytes),
        )
    ]
    out.append(table(["per GPU", "bytes", "GiB"], rows))
    out += ["", *(f"note: {n}" for n in p.notes)]
    return "\n".join(out) + "\n" + _traffic_text(answer.traffic)


def render_matrix(m: CostedMatrix) -> str:
    header = ["model", "format", "weights GB", *m.gpus]
    rows = []
    for row in m.rows:
        cells = [
            "-"
            if c.gpu_count is None or c.spare_fraction is None
            else f"{c.gpu_count} ({c.spare_fraction:.0%}){'!' if c.amber else ''}"
            for c in row.cells
        ]
        rows.append([row.model, row.weight_format, f"{to_gb(row.weights_bytes):,.1f}", *cells])
    w = m.workload
    return (
        table(header, rows)
        + f"\n\neach cell: fewest GPUs (spare); ! amber: under 5% spare; - no split holds it. "
        f"{w.concurrency} conversations x {w.context_tokens:,} tokens, "
        f"{w.gpu_memory_utilization:.0%} fill, {label_bytes(w.overhead_bytes_per_gpu)} overhead "
        "per GPU.\n"
    )


def render_offload(o: Offload) -> str:
    alt = o.fully_resident
    lines = [
        f"{o.model} ({o.weight_format}) on {o.gpu_count} x {o.gpu}, offloading over {o.link}",
        f"{o.tokens_per_s:,.2f} tokens/s per conversation; the GPU waits "
        f"{o.gpu_idle_fraction:.0%} of each step",
        "",
        table(
            ["", "bytes", "GB", "GiB", "ms per step"],
            [
                [
                    "resident (HBM)",
                    f"{o.resident_bytes:,}",
                    f"{to_gb(o.resident_bytes):,.2f}",
                    f"{to_gib(o.resident_bytes):,.2f}",
                    f"{o.hbm_s_per_step * 1000:,.1f}",
                ],
                [
                    f"offloaded ({o.link})",
                    f"{o.offloaded_bytes:,}",
                    f"{to_gb(o.offloaded_bytes):,.2f}",
                    f"{to_gib(o.offloaded_bytes):,.2f}",
                    f"{o.link_s_per_step * 1000:,.1f}",
                ],
                [
                    "crossing per step",
                    f"{o.link_bytes_per_step:,}",
                    f"{to_gb(o.link_bytes_per_step):,.2f}",
                    f"{to_gib(o.link_bytes_per_step):,.2f}",
                    "",
                ],
                [
                    "KV read (HBM)",
                    f"{o.kv_read_bytes:,}",
                    f"{to_gb(o.kv_read_bytes):,.2f}",
                    f"{to_gib(o.kv_read_bytes):,.2f}",
                    f"{o.kv_s_per_step * 1000:,.1f}",
                ],
            ],
        ),
        "",
        f"mechanism {o.mechanism}: {o.mechanism_note}",
        *[f"warning {w.code}: {w.message}" for w in o.warnings],
    ]
    if alt.gpu_count is not None and alt.tokens_per_s is not None:
        lines += [
            "",
            f"fully resident instead: {alt.gpu_count} x {o.gpu} at "
            f"{alt.tokens_per_s:,.1f} tokens/s",
        ]
    return "\n".join(lines) + "\n"


def render(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, PlanAnswer | TrainingAnswer):
        return render_plan(answer)
    if isinstance(answer, CostedMatrix):
        return render_matrix(answer)
    if isinstance(answer, Offload):
        return render_offload(answer)
    # The vLLM method's answer, the one kind left: its module (the method's whole core) is
    # imported only when a vllm plan is rendered, not by every offline seed plan.
    from service.sizing.vllm.plan import VllmPlanAnswer

    assert isinstance(answer, VllmPlanAnswer)
    return render_vllm_plan(answer)


def render_traffic(plan: TrafficPlan) -> str:
    out = ["", f"traffic: {plan.summary}"]
    if plan.why_not_cheaper:
        out.append("cheaper options that do not serve it:" if plan.feasible else "why not:")
        out += [f"  - {why}" for why in plan.why_not_cheaper]
    rows = [
        [
            o.gpu,
            str(o.tensor_parallel),
            "-" if o.replicas is None else str(o.replicas),
            "-" if o.gpu_count is None else str(o.gpu_count),
            "-" if o.headroom is None else f"{o.headroom:.0%}",
            "-" if o.ttft_s is None else duration_text(o.ttft_s),
            "-" if o.tpot_s is None else duration_text(o.tpot_s),
            "-" if o.cost is None else f"{o.cost.hourly_cost_cents / 100:,.2f} {o.cost.currency}/h",
        ]
        for o in plan.options
        if o.feasible
    ]
    if rows:
        header = ["GPU", "TP", "replicas", "GPUs", "headroom", "TTFT", "TPOT", "cost"]
        out += ["", f"options that serve it ({plan.ranking_rule}):", table(header, rows)]
    return "\n".join(out) + "\n"


def render_speed(a: SpeedAnswer) -> str:
    head = (
        f"{a.model} on {a.gpus_per_replica} x {a.gpu} (TP{a.tensor_parallel}, {a.engine}): "
        f"{a.input_tokens:,}-token prompts, {a.output_tokens:,}-token answers; KV pool "
        f"{a.kv_cache_tokens:,} tokens at max_model_len {a.max_model_len:,}"
    )
    first = "users" if a.loop == "closed" else "requests/s in"
    rows = [
        [
            f"{r.concurrency:,}" if r.concurrency is not None else f"{r.request_rate_per_s:g}",
            "unbounded" if r.ttft_s is None else duration_text(r.ttft_s),
            duration_text(r.tpot_s),
            f"{r.output_tokens_per_s:,.0f}",
            f"{r.output_tokens_per_s_per_gpu:,.0f}",
            f"{r.requests_per_s:,.2f}",
            f"{r.running_batch:,.1f}",
            r.bottleneck + ("" if r.stable else " (past capacity)"),
        ]
        for r in a.rows
    ]
    header = [first, "TTFT", "TPOT", "out tok/s", "per GPU", "req/s", "batch", "bottleneck"]
    return f"{head}\n\n{table(header, rows)}\n\n{a.notes[0] if a.notes else ''}\n"
