"""Run a chat command against the catalogue: the same evaluation /plan, /matrix, /offload use."""

from urllib.parse import urlencode

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue import lookup
from service.catalogue.cache import serving_rows
from service.catalogue.errors import NotFound
from service.catalogue.prices import gpu_prices
from service.catalogue.tables import Gpu, Model
from service.chatops import slack
from service.chatops.commands import (
    HelpCommand,
    ListCommand,
    MatrixCommand,
    OffloadCommand,
    PlanCommand,
    SpeedCommand,
    Unparsed,
    parse,
)
from service.chatops.speed_messages import speed_message, traffic_blocks
from service.plans.compute import answer_matrix
from service.plans.evaluate import evaluate_plan, resolve_formats
from service.plans.speed import evaluate_speed
from service.plans.threads import off_loop
from service.schemas.compute import DEFAULT_MATRIX_FORMATS, MatrixRequest
from service.schemas.plan import PlanAnswer, PlanRequest
from service.schemas.speed import SpeedRequest
from service.sizing.errors import SizingError
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS
from service.sizing.offload import offload
from service.sizing.plan import Workload
from service.sizing.units import label_bytes

CHAT_MATRIX_FORMATS = 8
"""Formats a chat matrix shows (its own cap, below a /matrix request's MAX_MATRIX_FORMATS)."""
DEFAULT_SWEEP = (1, 8, 32, 128)
"""A chat ``speed`` without ``users`` or ``rps``: these concurrencies."""


async def _names(session: AsyncSession) -> dict[str, str]:
    """The GPUs' display names, from where this request's catalogue lookups read."""
    return {g.slug: g.name for g in await serving_rows(session, Gpu)}


def picture_url(public_base_url: str, body: dict[str, object]) -> str:
    """GET /plan.svg for the plan ``body`` asks (its fields as query parameters, repeated for
    a list): the picture a chat message links to, drawn from the same request."""
    return f"{public_base_url.rstrip('/')}/plan.svg?{urlencode(body, doseq=True)}"


async def _plan(
    session: AsyncSession, c: PlanCommand, public_base_url: str = ""
) -> slack.SlackMessage:
    body: dict[str, object] = {"model": c.model}
    if c.weight_format is not None:
        body["weight_format"] = c.weight_format
    if c.gpu is not None:
        body["gpu"] = c.gpu
    if c.gpu_count is not None:
        body["splits"] = [c.gpu_count]
    if c.concurrency is not None:
        body["concurrency"] = c.concurrency
    if c.context_tokens is not None:
        body["context_tokens"] = c.context_tokens
    if c.traffic is not None:
        body["traffic"] = c.traffic
    body["rank_by"] = c.rank_by
    if c.capacity_basis is not None:
        body["capacity_basis"] = c.capacity_basis
    try:
        request = msgspec.convert(body, PlanRequest)
    except msgspec.ValidationError as exc:  # the request's bounds, e.g. 0 conversations
        return slack.help_message(f"That is outside what a plan takes ({exc})")
    answer = await evaluate_plan(session, request)
    assert isinstance(answer, PlanAnswer)  # chat plans are inference plans
    names = await _names(session)
    if c.gpu is None:
        reply = slack.options_message(answer, names)
    else:
        reply = slack.plan_message(answer, names)
    if answer.traffic is not None:
        reply = msgspec.structs.replace(
            reply, blocks=[*reply.blocks, *traffic_blocks(answer.traffic)]
        )
        body.pop("traffic")  # the picture is the memory plan's
    return slack.with_picture(reply, picture_url(public_base_url, body))


async def _speed(session: AsyncSession, c: SpeedCommand) -> slack.SlackMessage:
    body: dict[str, object] = {
        "model": c.model,
        "gpu": c.gpu,
        "tensor_parallel": c.gpu_count,
        "input_tokens": c.input_tokens,
        "output_tokens": c.output_tokens,
    }
    if c.weight_format is not None:
        body["weight_format"] = c.weight_format
    if c.request_rates_per_s:
        body["request_rates_per_s"] = list(c.request_rates_per_s)
    else:
        body["concurrencies"] = list(c.concurrencies or DEFAULT_SWEEP)
    try:
        request = msgspec.convert(body, SpeedRequest)
    except msgspec.ValidationError as exc:
        return slack.help_message(f"That is outside what a sweep takes ({exc})")
    answer = await evaluate_speed(session, request)
    return speed_message(answer, await _names(session))


async def _matrix(session: AsyncSession, c: MatrixCommand) -> slack.SlackMessage:
    model = await lookup.model_spec(session, c.model)
    slugs = c.formats[:CHAT_MATRIX_FORMATS] or DEFAULT_MATRIX_FORMATS
    formats = [await lookup.number_format(session, s, "format") for s in slugs]
    gpus = await lookup.all_gpu_specs(session)
    request = MatrixRequest(capacity_basis=c.capacity_basis or DEFAULT_CAPACITY_BASIS)
    prices = await gpu_prices(session)
    m = await off_loop(answer_matrix, request, [model], formats, gpus, None, prices)
    return slack.matrix_message(m, await _names(session))


async def _offload(session: AsyncSession, c: OffloadCommand) -> slack.SlackMessage:
    model = await lookup.model_spec(session, c.model)
    gpu = await lookup.gpu_spec(session, c.gpu)
    weights, kv = await resolve_formats(session, c.weight_format, None)
    if gpu.host_link is None:
        raise SizingError("link", f"{gpu.slug} has no host link in the catalogue")
    workload = Workload(capacity_basis=c.capacity_basis or DEFAULT_CAPACITY_BASIS)
    answer = await off_loop(
        offload, model, gpu, weights, kv, gpu.host_link, workload, gpu_count=c.gpu_count
    )
    return slack.offload_message(answer, await _names(session))


async def _list(session: AsyncSession, c: ListCommand) -> slack.SlackMessage:
    if c.what == "gpus":
        gpus = sorted(await serving_rows(session, Gpu), key=lambda g: g.slug)
        lines = [f"`{g.slug}` {g.name}: {label_bytes(g.memory_bytes)}" for g in gpus]
        return slack.list_message(f"{len(lines)} GPUs in the catalogue", lines)
    models = sorted(await serving_rows(session, Model), key=lambda m: m.slug)
    lines = [f"`{m.slug}` {m.name}: {m.total_params:,} parameters" for m in models]
    return slack.list_message(f"{len(lines)} models in the catalogue", lines)


async def answer(session: AsyncSession, text: str, public_base_url: str = "") -> slack.SlackMessage:
    """The reply to one line of chat; never raises for bad input (it answers with why).
    A plan's reply links to its memory picture under ``public_base_url``."""
    command = parse(text)
    try:
        if isinstance(command, Unparsed):
            return slack.help_message(command.reason)
        if isinstance(command, HelpCommand):
            return slack.help_message()
        if isinstance(command, ListCommand):
            return await _list(session, command)
        if isinstance(command, PlanCommand):
            return await _plan(session, command, public_base_url)
        if isinstance(command, MatrixCommand):
            return await _matrix(session, command)
        if isinstance(command, SpeedCommand):
            return await _speed(session, command)
        return await _offload(session, command)
    except NotFound as exc:
        return slack.problem_message(exc.message, exc.suggestions)
    except SizingError as exc:
        return slack.problem_message(f"Cannot answer that: {exc.field}: {exc.message}")
