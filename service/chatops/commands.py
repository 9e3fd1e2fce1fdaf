"""The chat command language, parsed without I/O.

    plan MODEL [on [N] GPU] [FORMAT] [USERSxCONTEXT] [by gpus|hourly|purchase] [BASIS]
    matrix MODEL [FORMAT ...] [BASIS]
    offload MODEL on [N] GPU [FORMAT] [BASIS]
    speed MODEL on [N] GPU [FORMAT] [IN/OUT] [users N ... | rps R ...]
    gpus | models | help

``plan`` also takes ``serve R/s [IN/OUT] [ttft T] [tpot T]`` (T as ``1s`` or ``50ms``): the
fewest GPUs that serve R requests/s of IN-token prompts and OUT-token answers within the limits.

USERSxCONTEXT is conversations x tokens each: ``40x8192`` (``40x8k`` = 40 x 8,192; k = 1024).
BASIS is ``driver`` (the default: the bytes nvidia-smi shows) or ``marketed`` (the vendor's GB,
the seeds' method), anywhere after the model.
Names are catalogue slugs or short aliases (``h100`` -> ``h100-sxm``); the catalogue checks them.
"""

import re
from typing import Literal

import msgspec

from service.sizing.cost import RankBy
from service.sizing.hardware import CapacityBasis

USAGE = "\n".join(
    [
        "`plan MODEL [on [N] GPU] [FORMAT] [USERSxCONTEXT] [by gpus|hourly|purchase]`",
        "    e.g. `plan llama-3.1-70b on h100 bf16 40x8192`; without `on GPU`: the best GPUs",
        "`matrix MODEL [FORMAT ...]`: fewest GPUs per format on every GPU, "
        "e.g. `matrix llama-3.1-70b`",
        "`offload MODEL on [N] GPU [FORMAT]`: speed with weights in CPU memory, "
        "e.g. `offload llama-3.1-70b on 1 h100`",
        "`speed MODEL on [N] GPU [FORMAT] [IN/OUT] [users N ... | rps R ...]`: TTFT, TPOT and "
        "tokens/s per point, e.g. `speed qwen3-8b on h100 2000/300 users 1 8 64`",
        "`plan MODEL ... serve 40/s 2000/300 tpot 50ms`: the GPUs that serve that traffic",
        "`gpus`, `models`: the catalogue; `help`: this text",
        "USERSxCONTEXT: conversations x tokens each, `40x8192` or `40x8k` (k = 1024). "
        "Defaults: the checkpoint's format (bf16 for offload), 8x8192.",
        "Add `marketed` to size on the vendor's GB (the seeds' method) instead of the bytes "
        "nvidia-smi shows (`driver`, the default).",
    ]
)

_WORKLOAD = re.compile(r"^(\d{1,9})x(\d{1,12})(k?)$")
_COUNT = re.compile(r"^\d{1,6}$")
_RANK_WORDS: dict[str, RankBy] = {
    "gpus": "gpus",
    "gpu": "gpus",
    "count": "gpus",
    "hourly": "hourly_cost",
    "hourly_cost": "hourly_cost",
    "hour": "hourly_cost",
    "cost": "hourly_cost",
    "purchase": "purchase_cost",
    "purchase_cost": "purchase_cost",
    "buy": "purchase_cost",
}
_BASIS_WORDS: dict[str, CapacityBasis] = {"driver": "driver", "marketed": "marketed"}


class PlanCommand(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str | None = None
    gpu_count: int | None = None
    weight_format: str | None = None
    """None: the checkpoint's as published (as POST /plan)."""
    concurrency: int | None = None
    context_tokens: int | None = None
    traffic: dict[str, int | float] | None = None
    """``serve R/s [IN/OUT] [ttft T] [tpot T]``: POST /plan's traffic fields."""
    rank_by: RankBy = "gpus"
    capacity_basis: CapacityBasis | None = None
    """None: the service's default."""


class SpeedCommand(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    gpu_count: int = 1
    """The replica's tensor-parallel size."""
    weight_format: str | None = None
    input_tokens: int = 1000
    output_tokens: int = 200
    concurrencies: tuple[int, ...] = ()
    request_rates_per_s: tuple[float, ...] = ()
    """Neither: concurrencies 1, 8, 32, 128."""


class MatrixCommand(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    formats: tuple[str, ...] = ()
    capacity_basis: CapacityBasis | None = None


class OffloadCommand(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    gpu_count: int = 1
    weight_format: str = "bf16"
    capacity_basis: CapacityBasis | None = None


class ListCommand(msgspec.Struct, frozen=True, kw_only=True):
    what: Literal["gpus", "models"]


class HelpCommand(msgspec.Struct, frozen=True, kw_only=True):
    pass


class Unparsed(msgspec.Struct, frozen=True, kw_only=True):
    """Text that is not a command: the reason, answered with the usage."""

    reason: str


Command = PlanCommand | MatrixCommand | OffloadCommand | SpeedCommand | ListCommand | HelpCommand
Measure = PlanCommand | MatrixCommand | OffloadCommand | SpeedCommand
_LENGTHS = re.compile(r"^(\d{1,8})(k?)/(\d{1,8})(k?)$")
_RATE = re.compile(r"^(\d{1,7}(?:\.\d{1,6})?)(?:/s|rps)?$")
_DURATION = re.compile(r"^(\d{1,6}(?:\.\d{1,6})?)(ms|s)$")


def _lengths(token: str) -> tuple[int, int] | None:
    """``2000/300`` or ``2k/300``: prompt and answer tokens (k = 1024)."""
    m = _LENGTHS.match(token)
    if not m:
        return None
    return int(m[1]) * (1024 if m[2] else 1), int(m[3]) * (1024 if m[4] else 1)


def _serve(tokens: list[str], i: int) -> tuple[dict[str, int | float], int] | Unparsed:
    """``serve R/s [IN/OUT] [ttft T] [tpot T]`` from after ``serve`` at ``i``."""
    rate = _RATE.match(tokens[i]) if i < len(tokens) else None
    if not rate:
        return Unparsed(reason="`serve` takes a rate, e.g. `serve 40/s 2000/300 tpot 50ms`")
    traffic: dict[str, int | float] = {"requests_per_s": float(rate[1])}
    i += 1
    lengths = _lengths(tokens[i]) if i < len(tokens) else None
    if lengths:
        traffic["input_tokens"], traffic["output_tokens"] = lengths
        i += 1
    while i + 1 < len(tokens) and tokens[i] in ("ttft", "tpot"):
        d = _DURATION.match(tokens[i + 1])
        if not d:
            return Unparsed(reason=f"`{tokens[i]}` takes a time, e.g. `1s` or `50ms`")
        traffic[f"{tokens[i]}_s"] = float(d[1]) / (1000 if d[2] == "ms" else 1)
        i += 2
    traffic.setdefault("input_tokens", 1000)
    traffic.setdefault("output_tokens", 200)
    return traffic, i


def _speed(tokens: list[str]) -> SpeedCommand | Unparsed:
    if len(tokens) < 4 or tokens[2] != "on":
        return Unparsed(reason="`speed` needs a model and a GPU: `speed MODEL on [N] GPU`")
    clause = _on_clause(tokens, 3)
    if isinstance(clause, Unparsed):
        return clause
    count, gpu, i = clause
    fields: dict[str, object] = {"model": tokens[1], "gpu": gpu, "gpu_count": count or 1}
    while i < len(tokens):
        token = tokens[i]
        lengths = _lengths(token)
        if lengths and "input_tokens" not in fields:
            fields["input_tokens"], fields["output_tokens"] = lengths
        elif token in ("users", "rps") and i + 1 < len(tokens):
            points = []
            while i + 1 < len(tokens) and _RATE.match(tokens[i + 1]):
                points.append(float(_RATE.match(tokens[i + 1])[1]))  # type: ignore[index]
                i += 1
            if token == "users":
                if any(p != int(p) for p in points):
                    return Unparsed(reason="`users` takes whole numbers")
                fields["concurrencies"] = tuple(int(p) for p in points)
            else:
                fields["request_rates_per_s"] = tuple(points)
        elif "weight_format" not in fields and not token[0].isdigit():
            fields["weight_format"] = token
        else:
            return Unparsed(reason=f"I did not understand `{token}`")
        i += 1
    if "concurrencies" in fields and "request_rates_per_s" in fields:
        return Unparsed(reason="give `users` (a closed loop) or `rps` (an open loop), not both")
    return msgspec.convert(fields, SpeedCommand)


def _on_clause(tokens: list[str], i: int) -> tuple[int | None, str, int] | Unparsed:
    """``on [N] GPU`` starting after ``on`` at ``i``: (count, gpu, next index)."""
    count: int | None = None
    if i < len(tokens) and _COUNT.match(tokens[i]):
        count = int(tokens[i])
        i += 1
        if count < 1:
            return Unparsed(reason="the GPU count must be at least 1")
    if i >= len(tokens):
        return Unparsed(reason="`on` needs a GPU, e.g. `on h100` or `on 4 h100`")
    return count, tokens[i], i + 1


def _plan(tokens: list[str]) -> PlanCommand | Unparsed:
    if len(tokens) < 2:
        return Unparsed(reason="`plan` needs a model, e.g. `plan llama-3.1-70b`")
    fields: dict[str, object] = {"model": tokens[1]}
    i = 2
    while i < len(tokens):
        token = tokens[i]
        workload = _WORKLOAD.match(token)
        if token == "on" and "gpu" not in fields:
            clause = _on_clause(tokens, i + 1)
            if isinstance(clause, Unparsed):
                return clause
            fields["gpu_count"], fields["gpu"], i = clause
            continue
        if token == "serve" and "traffic" not in fields:
            served = _serve(tokens, i + 1)
            if isinstance(served, Unparsed):
                return served
            fields["traffic"], i = served
            continue
        if token == "by" and "rank_by" not in fields:
            if i + 1 >= len(tokens) or tokens[i + 1] not in _RANK_WORDS:
                return Unparsed(reason="`by` takes gpus, hourly or purchase")
            fields["rank_by"] = _RANK_WORDS[tokens[i + 1]]
            i += 2
            continue
        if workload and "concurrency" not in fields:
            fields["concurrency"] = int(workload.group(1))
            scale = 1024 if workload.group(3) else 1
            fields["context_tokens"] = int(workload.group(2)) * scale
        elif "weight_format" not in fields and not token[0].isdigit() and token not in ("on", "by"):
            fields["weight_format"] = token
        else:
            return Unparsed(reason=f"I did not understand `{token}`")
        i += 1
    return msgspec.convert(fields, PlanCommand)


def _offload(tokens: list[str]) -> OffloadCommand | Unparsed:
    if len(tokens) < 4 or tokens[2] != "on":
        return Unparsed(reason="`offload` needs a model and a GPU: `offload MODEL on [N] GPU`")
    clause = _on_clause(tokens, 3)
    if isinstance(clause, Unparsed):
        return clause
    count, gpu, i = clause
    rest = tokens[i:]
    if len(rest) > 1:
        return Unparsed(reason=f"I did not understand `{' '.join(rest[1:])}`")
    return OffloadCommand(
        model=tokens[1], gpu=gpu, gpu_count=count or 1, weight_format=rest[0] if rest else "bf16"
    )


def _basis(tokens: list[str]) -> tuple[list[str], CapacityBasis | None] | Unparsed:
    """The tokens without a capacity-basis word after the model, and that word's basis."""
    words = [t for t in tokens[2:] if t in _BASIS_WORDS]
    if len(words) > 1:
        return Unparsed(reason="name one capacity basis: `driver` or `marketed`")
    if not words:
        return tokens, None
    return [*tokens[:2], *(t for t in tokens[2:] if t not in _BASIS_WORDS)], _BASIS_WORDS[words[0]]


def parse(text: str) -> Command | Unparsed:
    """One line of chat -> a command, or why it is not one."""
    tokens = text.strip().lower().replace(",", " ").split()
    if not tokens:
        return HelpCommand()
    verb = tokens[0]
    if verb == "speed":
        return _speed(tokens)
    if verb in ("plan", "matrix", "offload"):
        stripped = _basis(tokens)
        if isinstance(stripped, Unparsed):
            return stripped
        tokens, basis = stripped
        command = _measure(verb, tokens)
        if basis is None or isinstance(command, Unparsed):
            return command
        return msgspec.structs.replace(command, capacity_basis=basis)
    if verb in ("help", "?", "usage"):
        return HelpCommand()
    if verb in ("gpus", "models"):
        if len(tokens) > 1:
            return Unparsed(reason=f"`{verb}` takes nothing after it")
        return ListCommand(what=verb)  # type: ignore[arg-type]
    return Unparsed(reason=f"I do not know the command `{verb}`")


def _measure(verb: str, tokens: list[str]) -> Measure | Unparsed:
    if verb == "plan":
        return _plan(tokens)
    if verb == "matrix":
        if len(tokens) < 2:
            return Unparsed(reason="`matrix` needs a model, e.g. `matrix llama-3.1-70b`")
        return MatrixCommand(model=tokens[1], formats=tuple(tokens[2:]))
    return _offload(tokens)
