"""python -m service {plan,matrix,offload}: the computations from a terminal.

With ``--url`` the CLI asks a running service (through service.client); without it, it runs the
sizing core locally on the shipped catalogue (service/catalogue/data/*.json, turned into the
core's specs exactly as the migrations and the server do), so it works on a laptop with no
server and no database. It prints a readable table, or the service's JSON with ``--json``.
"""

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from service.catalogue.errors import NotFound
from service.offline import local_matrix, local_offload, local_plan
from service.render.text import cost_text, matrix_csv, plans_csv
from service.schemas.compute import MatrixRequest, OffloadRequest
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.cost import CostedMatrix
from service.sizing.errors import SizingError, require
from service.sizing.offload import Offload
from service.sizing.plan import Plan
from service.sizing.units import label_bytes, to_gb, to_gib
from service.sizing.vllm.plan import VllmPlanAnswer

COMMANDS = ("plan", "matrix", "offload")
# --- readable tables ---------------------------------------------------------------------------


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


def _traffic_text(plan: Any) -> str:
    from service.cli_speed import render_traffic

    return "" if plan is None else render_traffic(plan)


def render_vllm_plan(answer: VllmPlanAnswer) -> str:
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


# --- arguments ---------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="ask this running service (default: compute locally)")
    parser.add_argument(
        "--token", help="API key for --url (default: PLANNER_TOKEN from the environment)"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the service's JSON answer")
    output.add_argument("--csv", action="store_true", help="print CSV (units in the headers)")
    parser.add_argument("--users", type=int, help="conversations at once (default 8)")
    parser.add_argument("--context", type=int, help="tokens per conversation (default 8192)")
    parser.add_argument("--utilisation", type=float, help="GPU memory fill (default 0.9)")
    parser.add_argument("--overhead-bytes", type=int, help="per GPU (default 4000000000)")
    parser.add_argument(
        "--capacity-basis",
        choices=["driver", "marketed"],
        help="driver (default): the bytes nvidia-smi shows; marketed: the vendor's GB (the seeds')",
    )


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    plan = commands.add_parser("plan", help="where a model fits: fewest GPUs, spare, warnings")
    plan.add_argument("model", nargs="?", help="catalogue slug, e.g. llama-3.1-70b")
    plan.add_argument("--config", help="a Hugging Face config.json to plan instead of a slug")
    plan.add_argument("--gpu", help="GPU slug or alias (default: rank every GPU)")
    plan.add_argument(
        "--format", help="weight format (default: the checkpoint's as published, else bf16)"
    )
    plan.add_argument("--kv-format", help="default: 16-bit beside 16-bit weights, else fp8")
    plan.add_argument("--splits", help="GPU counts to try, e.g. 1,2,4,8")
    plan.add_argument("--rank-by", choices=["gpus", "hourly_cost", "purchase_cost"])
    plan.add_argument(
        "--method", choices=["seed", "vllm"], help="seed (default) or vllm: what vLLM will log"
    )
    plan.add_argument("--vllm-version", help="the vLLM release to predict, e.g. 0.19.0")
    from service.cli_speed import add_traffic_arguments  # it reads this module's table()

    add_traffic_arguments(plan)
    _common(plan)

    matrix = commands.add_parser("matrix", help="fewest GPUs per model and format on each GPU")
    matrix.add_argument("models", nargs="*", help="model slugs (default: every model)")
    matrix.add_argument("--format", action="append", help="repeat; default bf16, fp8, int4")
    matrix.add_argument("--gpu", action="append", help="repeat; default every GPU")
    _common(matrix)

    off = commands.add_parser("offload", help="speed with part of the weights in CPU memory")
    off.add_argument("model")
    off.add_argument("--gpu", required=True)
    off.add_argument("--count", type=int, default=1, help="GPUs (default 1)")
    off.add_argument("--format", default="bf16")
    off.add_argument("--resident-bytes", type=int, help="weights kept in GPU memory")
    off.add_argument("--batch", type=int, default=1, help="conversations per step (default 1)")
    off.add_argument(
        "--mechanism",
        choices=("uva", "copy"),
        default="uva",
        help="uva: kernels read offloaded weights in place (vLLM V1); copy: layers copied in",
    )
    _common(off)


def _workload(args: argparse.Namespace, *, users: bool = True) -> dict[str, Any]:
    fields = {
        "concurrency": args.users if users else None,
        "context_tokens": args.context,
        "gpu_memory_utilization": args.utilisation,
        "overhead_bytes_per_gpu": args.overhead_bytes,
        "capacity_basis": args.capacity_basis,
    }
    return {k: v for k, v in fields.items() if v is not None}


def _request(args: argparse.Namespace) -> msgspec.Struct:
    """The request body the server would get, checked by the same Structs (bounds included)."""
    if args.command == "plan":
        fields: dict[str, Any] = {"weight_format": args.format} if args.format else {}
        if args.config:
            if args.model:
                raise SizingError("model", "give a catalogue model or --config, not both")
            fields["config_json"] = _read_config(args.config)
        else:
            fields["model"] = args.model
        if args.gpu:
            fields["gpu"] = args.gpu
        if args.kv_format:
            fields["kv_format"] = args.kv_format
        if args.rank_by:
            fields["rank_by"] = args.rank_by
        if args.method:
            fields["method"] = args.method
        if args.vllm_version:
            require(args.method == "vllm", "vllm_version", "goes with --method vllm")
            fields["vllm"] = {"vllm_version": args.vllm_version}
        if args.splits:
            try:
                fields["splits"] = [int(s) for s in args.splits.split(",")]
            except ValueError:
                raise SizingError("splits", "comma-separated whole numbers, e.g. 1,2,4,8") from None
        from service.cli_speed import traffic_fields

        fields.update(traffic_fields(args))
        return msgspec.convert({**fields, **_workload(args)}, PlanRequest)
    if args.command == "matrix":
        fields = {"models": args.models, "formats": args.format or [], "gpus": args.gpu or []}
        return msgspec.convert({**fields, **_workload(args)}, MatrixRequest)
    if args.users is not None:
        raise SizingError("users", "offload plans one conversation per step; use --batch")
    fields = {
        "model": args.model,
        "gpu": args.gpu,
        "gpu_count": args.count,
        "weight_format": args.format,
        "batch_size": args.batch,
        "mechanism": args.mechanism,
    }
    if args.resident_bytes is not None:
        fields["resident_bytes"] = args.resident_bytes
    return msgspec.convert({**fields, **_workload(args, users=False)}, OffloadRequest)


def _read_config(path: str) -> dict[str, Any]:
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SizingError("config", f"cannot read {path}: {exc}") from None
    if not isinstance(loaded, dict):
        raise SizingError("config", f"{path} does not hold a JSON object")
    loaded.setdefault("_name_or_path", Path(path).stem)  # name the plan after the file
    return loaded


def _remote(args: argparse.Namespace, request: msgspec.Struct) -> Any:
    from service.client import PlannerClient

    token = args.token or os.environ.get("PLANNER_TOKEN")
    with PlannerClient(args.url, token=token) as client:
        if isinstance(request, PlanRequest):
            return client.plan_csv(request) if args.csv else client.plan(request)
        if isinstance(request, MatrixRequest):
            return client.matrix_csv(request) if args.csv else client.matrix(request)
        assert isinstance(request, OffloadRequest)
        return client.offload(request)


def _local(args: argparse.Namespace, request: msgspec.Struct) -> Any:
    if isinstance(request, PlanRequest):
        answer = local_plan(request)
        if args.csv and isinstance(answer, PlanAnswer):
            return plans_csv(answer.options or [answer])
        return answer
    if isinstance(request, MatrixRequest):
        m = local_matrix(request)
        return matrix_csv(m) if args.csv else m
    assert isinstance(request, OffloadRequest)
    return local_offload(request)


def render(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, VllmPlanAnswer):
        return render_vllm_plan(answer)
    if isinstance(answer, PlanAnswer | TrainingAnswer):
        return render_plan(answer)
    if isinstance(answer, CostedMatrix):
        return render_matrix(answer)
    assert isinstance(answer, Offload)
    return render_offload(answer)


def _remote_errors() -> tuple[type[Exception], ...]:
    from service.client import PlannerError

    return (PlannerError,)


def _report_remote_error(exc: Exception) -> int:
    from service.client import PlannerError

    assert isinstance(exc, PlannerError)
    print(f"error: {exc}", file=sys.stderr)
    for e in exc.problem.errors if exc.problem else []:
        print(f"  {e.field}: {e.message}", file=sys.stderr)
    return 2 if 400 <= exc.status < 500 else 1


def run(args: argparse.Namespace) -> int:
    """Exit status: 0 answered, 1 the service failed or cannot be reached, 2 bad input."""
    remote_errors = _remote_errors() if args.url else ()  # offline: no HTTP client imported
    try:
        request = _request(args)
        if args.csv and args.command == "offload":
            raise SizingError("csv", "offload answers one row: use --json")
        answer = _remote(args, request) if args.url else _local(args, request)
    except msgspec.ValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (SizingError, NotFound) as exc:
        suggestions = getattr(exc, "suggestions", [])
        hint = ""
        if suggestions and "closest" not in str(exc):
            hint = f" (closest: {', '.join(suggestions)})"
        print(f"error: {getattr(exc, 'field', '')}: {exc}{hint}", file=sys.stderr)
        return 2
    except remote_errors as exc:
        return _report_remote_error(exc)
    if args.json and not isinstance(answer, str):
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(answer)).decode() + "\n")
    else:
        sys.stdout.write(render(answer))
    return 0
