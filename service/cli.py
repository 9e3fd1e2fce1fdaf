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
from pathlib import Path
from typing import Any

import msgspec

from service.catalogue.errors import NotFound
from service.offline import local_matrix, local_offload, local_plan
from service.render.terminal import render
from service.render.text import matrix_csv, plans_csv
from service.schemas.compute import MatrixRequest, OffloadRequest
from service.schemas.plan import PlanAnswer, PlanRequest
from service.sizing.errors import SizingError, require

COMMANDS = ("plan", "matrix", "offload")

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
    from service.cli_speed import add_traffic_arguments

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
