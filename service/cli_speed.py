"""python -m service speed: one deployment over a sweep, from a terminal; and the traffic
options of ``plan`` (--rps, --input, --output, --ttft, --tpot).

Like the other commands (service/cli.py): with ``--url`` it asks a running service, else it
runs the serving model locally on the shipped catalogue. A readable table, or ``--json`` /
``--csv``.
"""

import argparse
import os
import sys
from typing import Any

import msgspec

from service.catalogue.errors import NotFound
from service.offline import local_speed
from service.render.speed import speed_csv
from service.render.terminal import render_speed
from service.schemas.speed import SpeedAnswer, SpeedRequest
from service.sizing.errors import SizingError


def _numbers(text: str, kind: type[int] | type[float], field: str) -> list[Any]:
    try:
        return [kind(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SizingError(
            field, f"comma-separated numbers, e.g. {'1,8,64' if kind is int else '0.5,2,10'}"
        ) from None


def add_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    speed = commands.add_parser(
        "speed", help="TTFT, TPOT and tokens/s of one deployment over a sweep"
    )
    speed.add_argument("model", help="catalogue slug, e.g. qwen3-8b")
    speed.add_argument("--gpu", required=True, help="GPU slug or alias")
    speed.add_argument("--tp", type=int, default=1, help="tensor parallel size (default 1)")
    speed.add_argument("--pp", type=int, default=1, help="pipeline stages (default 1)")
    speed.add_argument("--format", help="weight format (default: the checkpoint's)")
    speed.add_argument("--kv-format")
    speed.add_argument("--engine", choices=["vllm", "sglang", "tensorrt-llm"], default="vllm")
    speed.add_argument("--input", type=int, default=1000, help="prompt tokens (default 1000)")
    speed.add_argument("--output", type=int, default=200, help="answer tokens (default 200)")
    points = speed.add_mutually_exclusive_group()
    points.add_argument("--concurrency", help="closed loop, e.g. 1,8,64 (default 1,8,32,128)")
    points.add_argument("--rate", help="open loop, requests/s, e.g. 0.5,2,10")
    speed.add_argument("--max-model-len", type=int)
    speed.add_argument("--max-num-seqs", type=int)
    speed.add_argument("--max-num-batched-tokens", type=int)
    speed.add_argument("--vllm-version", help="the vLLM release, e.g. 0.11.0")
    speed.add_argument("--url", help="ask this running service (default: compute locally)")
    speed.add_argument("--token", help="API key for --url (default: PLANNER_TOKEN)")
    output = speed.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the service's JSON answer")
    output.add_argument("--csv", action="store_true", help="print CSV (units in the headers)")


def add_traffic_arguments(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("--rps", type=float, help="plan GPUs for this many requests/s (traffic)")
    plan.add_argument("--input", type=int, help="traffic: prompt tokens (default 1000)")
    plan.add_argument("--output", type=int, help="traffic: answer tokens (default 200)")
    plan.add_argument("--ttft", type=float, help="traffic: TTFT limit, seconds")
    plan.add_argument("--tpot", type=float, help="traffic: TPOT limit, seconds")


def traffic_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The plan request's ``traffic`` from the --rps family (empty without --rps)."""
    if getattr(args, "rps", None) is None:
        extra = [n for n in ("input", "output", "ttft", "tpot") if getattr(args, n, None)]
        if extra:
            raise SizingError(extra[0], "goes with --rps (the traffic's requests/s)")
        return {}
    traffic: dict[str, Any] = {
        "requests_per_s": args.rps,
        "input_tokens": args.input or 1000,
        "output_tokens": args.output or 200,
    }
    if args.ttft is not None:
        traffic["ttft_s"] = args.ttft
    if args.tpot is not None:
        traffic["tpot_s"] = args.tpot
    return {"traffic": traffic}


def _request(args: argparse.Namespace) -> SpeedRequest:
    fields: dict[str, Any] = {
        "model": args.model,
        "gpu": args.gpu,
        "tensor_parallel": args.tp,
        "pipeline_parallel": args.pp,
        "engine": args.engine,
        "input_tokens": args.input,
        "output_tokens": args.output,
    }
    for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "vllm_version"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    if args.format:
        fields["weight_format"] = args.format
    if args.kv_format:
        fields["kv_format"] = args.kv_format
    if args.rate:
        fields["request_rates_per_s"] = _numbers(args.rate, float, "rate")
    else:
        fields["concurrencies"] = _numbers(args.concurrency or "1,8,32,128", int, "concurrency")
    return msgspec.convert(fields, SpeedRequest)


def run(args: argparse.Namespace) -> int:
    """Exit status: 0 answered, 1 the service failed or cannot be reached, 2 bad input."""
    from service.client import PlannerClient, PlannerError

    try:
        request = _request(args)
        if args.url:
            token = args.token or os.environ.get("PLANNER_TOKEN")
            with PlannerClient(args.url, token=token) as client:
                if args.csv:
                    answer: Any = client.speed_csv(request)
                else:  # the client's plain Struct, read as the service's for the table
                    report = msgspec.to_builtins(client.speed(request))
                    answer = msgspec.convert(report, SpeedAnswer)
        else:
            local = local_speed(request)
            answer = speed_csv(local) if args.csv else local
    except msgspec.ValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (SizingError, NotFound) as exc:
        print(f"error: {getattr(exc, 'field', '')}: {exc}", file=sys.stderr)
        return 2
    except PlannerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for e in exc.problem.errors if exc.problem else []:
            print(f"  {e.field}: {e.message}", file=sys.stderr)
        return 2 if 400 <= exc.status < 500 else 1
    if isinstance(answer, str):
        sys.stdout.write(answer)
    elif args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(answer)).decode() + "\n")
    else:
        sys.stdout.write(render_speed(answer))
    return 0
