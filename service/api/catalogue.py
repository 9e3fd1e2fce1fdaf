"""The catalogue endpoints: /gpus, /interconnects, /models, /formats.

Reads: list (filters, limit/offset) and get by slug or unambiguous alias. Writes (admin): create,
replace (the slug in the body must equal the path's: slugs are stable once published), delete.
A write runs in the request's transaction, which commits only on a 2xx answer, so a failed
write leaves nothing behind.

One CRUD serves the four kinds (``controller``, from a ``Kind``: its table, body, the checks a
write passes, service.catalogue.checks); only the lists, whose filters differ, are per kind.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import msgspec
from advanced_alchemy.filters import LimitOffset
from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import JSONBody, PathParameter, QueryParameter
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.catalogue_schemas import ModelImportAnswer, ModelImportBody
from service.api.guards import open_unless_required, require_role
from service.api.problems import READ, WRITE, Conflict, problems
from service.catalogue.checks import check_format, check_gpu, check_model
from service.catalogue.errors import NotFound
from service.catalogue.hf_config import ImportDetails, ImportedModel, import_config
from service.catalogue.lookup import KIND, closest, resolve, same_text_ignoring_case
from service.catalogue.repositories import REPOSITORIES
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.schemas.catalogue import (
    FormatBody,
    FormatPage,
    GpuBody,
    GpuPage,
    InterconnectBody,
    InterconnectPage,
    ModelBody,
    ModelPage,
)
from service.sizing.errors import require
from service.sizing.models import MAX_SAFE_INT

Row = TypeVar("Row", Gpu, Interconnect, Model, Format)
Body = TypeVar("Body", GpuBody, InterconnectBody, ModelBody, FormatBody)
PageT = TypeVar("PageT", GpuPage, InterconnectPage, ModelPage, FormatPage)

Session = NamedDependency[AsyncSession]
SlugPath = Annotated[
    str, PathParameter(min_length=1, max_length=200, pattern=r"^[^\x00]+$", description="Slug")
]
Limit = Annotated[int, QueryParameter(ge=1, le=500, description="Rows per page")]
Offset = Annotated[int, QueryParameter(ge=0, le=2**31 - 1, description="Rows to skip")]
QueryText = Annotated[str | None, QueryParameter(max_length=200, pattern=r"^[^\x00]*$")]
# Not nullable: Litestar drops the lower bound of a nullable number from the spec.
QueryBytes = Annotated[int, QueryParameter(ge=0, le=MAX_SAFE_INT)]
QueryBool = Annotated[bool | None, QueryParameter()]

TAGS = ["catalogue"]
READERS = [open_unless_required("viewer")]
ADMINS = [require_role("admin")]
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}]


def _answer(row: Any, body_type: type[Body]) -> Body:
    return msgspec.convert(row, body_type, from_attributes=True)


async def _page(
    session: AsyncSession,
    table: type[Row],
    body_type: type[Body],
    page_type: type[PageT],
    limit: int,
    offset: int,
    where: list[ColumnElement[bool]],
) -> PageT:
    repository = REPOSITORIES[table](session=session)
    rows, total = await repository.list_and_count(
        LimitOffset(limit=limit, offset=offset), *where, order_by=(table.slug, False)
    )
    items = [_answer(row, body_type) for row in rows]
    return page_type(items=items, limit=limit, offset=offset, total=total)  # type: ignore[arg-type]


async def _exact(session: AsyncSession, table: type[Row], slug: str) -> Row:
    """Writes address a row by its exact slug only: an alias never deletes anything."""
    row = await session.scalar(select(table).where(table.slug == slug))
    if row is None:
        rows = list((await session.scalars(select(table))).all())
        raise NotFound(field="slug", slug=slug, kind=KIND[table], suggestions=closest(slug, rows))
    return row


async def _create(session: AsyncSession, table: type[Row], data: Any) -> Row:
    existing = await session.scalar(select(table.id).where(table.slug == data.slug))
    if existing is not None:
        raise Conflict("slug", f"{KIND[table]} {data.slug!r} already exists")
    row = table(**msgspec.structs.asdict(data))
    session.add(row)
    await session.flush()  # constraint failures surface here, inside the handler
    return row


async def _replace(session: AsyncSession, table: type[Row], slug: str, data: Any) -> Row:
    row = await _exact(session, table, slug)
    require(data.slug == slug, "slug", "must equal the slug in the path (slugs are stable)")
    for name, value in msgspec.structs.asdict(data).items():
        setattr(row, name, value)
    await session.flush()
    return row


async def _delete(session: AsyncSession, table: type[Row], slug: str) -> None:
    row = await _exact(session, table, slug)
    await session.delete(row)
    await session.flush()


def _imported_body(data: ModelImportBody, imported: ImportedModel) -> ModelBody:
    spec = imported.spec
    fields = {
        k: v for k, v in msgspec.structs.asdict(spec).items() if k in ModelBody.__struct_fields__
    }
    return (
        ModelBody(
            **{
                **fields,
                "layer_types": list(spec.layer_types),
                "rope_cache_rows": list(spec.rope_cache_rows),
            },
            active_params_incl_embedding=imported.params.active if spec.is_moe else 0,
            aliases=data.aliases,
            notes="; ".join(filter(None, [data.notes, *imported.notes])),
            sources=data.sources
            or [f"imported from config.json (model_type {imported.model_type})"],
        )
        if not data.name
        else msgspec.structs.replace(
            _imported_body(msgspec.structs.replace(data, name=""), imported), name=data.name
        )
    )


# One CRUD for the four kinds: get, add, replace and delete are the same on every table; what
# differs is said by a Kind (the checks a write passes, what a delete must not break). The
# lists differ in their filters and are written out per kind below.


class Kind(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    """Singular, as the handlers are named (get_gpu, create_gpu, ...: the operation ids)."""
    path: str
    table: type[Any]
    body: type[Any]
    noun: str
    """With its article, as the summaries say it: "a GPU", "an interconnect"."""
    check: Callable[[AsyncSession, Any], Awaitable[Any]]
    """The body as it is stored, after the checks the schema cannot state (a 422 names the
    field)."""
    before_delete: Callable[[AsyncSession, str], Awaitable[None]] | None = None
    delete_summary: str = ""


def _named(kind: Kind, verb: str, fn: Any, **annotations: Any) -> Any:
    """``fn`` as the handler of that name in the kind's controller (its operation id)."""
    fn.__name__ = f"{verb}_{kind.name}"
    fn.__qualname__ = f"{kind.name.title()}Controller.{fn.__name__}"
    fn.__annotations__.update(annotations)
    return fn


def _crud(kind: Kind) -> dict[str, Any]:
    """The get, create, replace and delete handlers of ``kind``."""

    async def get_one(self: Controller, db_session: Session, slug: SlugPath) -> Any:
        return _answer(await resolve(db_session, kind.table, slug, "slug"), kind.body)

    async def create(self: Controller, db_session: Session, data: Any) -> Any:
        row = await _create(db_session, kind.table, await kind.check(db_session, data))
        return _answer(row, kind.body)

    async def replace(self: Controller, db_session: Session, slug: SlugPath, data: Any) -> Any:
        row = await _replace(db_session, kind.table, slug, await kind.check(db_session, data))
        return _answer(row, kind.body)

    async def remove(self: Controller, db_session: Session, slug: SlugPath) -> None:
        if kind.before_delete is not None:
            await kind.before_delete(db_session, slug)
        await _delete(db_session, kind.table, slug)

    body = JSONBody[kind.body]  # type: ignore[name-defined]
    returns = {"return": kind.body}
    handlers = [
        get("/{slug:str}", guards=READERS, responses=problems(*READ), summary=f"Get {kind.noun}")(
            _named(kind, "get", get_one, **returns)
        ),
        post(
            "/",
            guards=ADMINS,
            security=SECURITY,
            responses=problems(*WRITE),
            summary=f"Add {kind.noun}",
        )(_named(kind, "create", create, data=body, **returns)),
        put(
            "/{slug:str}",
            guards=ADMINS,
            security=SECURITY,
            responses=problems(*WRITE),
            summary=f"Replace {kind.noun}",
        )(_named(kind, "replace", replace, data=body, **returns)),
        delete(
            "/{slug:str}",
            guards=ADMINS,
            security=SECURITY,
            responses=problems(*WRITE),
            summary=kind.delete_summary or f"Delete {kind.noun}",
        )(_named(kind, "delete", remove)),
    ]
    return {h.handler_name: h for h in handlers}


def controller(kind: Kind, *more: HTTPRouteHandler) -> type[Controller]:
    """The kind's controller: its list (and any other handlers in ``more``) and the CRUD."""
    handlers = {h.handler_name: h for h in more}
    attrs = {"path": kind.path, "tags": TAGS, **_crud(kind), **handlers}
    return type(f"{kind.name.title()}Controller", (Controller,), attrs)


async def _as_given(session: AsyncSession, data: Any) -> Any:
    return data


async def _unused_interconnect(session: AsyncSession, slug: str) -> None:
    users = (
        await session.scalars(
            select(Gpu.slug).where((Gpu.nvlink == slug) | (Gpu.host_link == slug))
        )
    ).all()
    if users:
        raise Conflict("slug", f"interconnect {slug!r} is used by {', '.join(users)}")


async def _checked_model(session: AsyncSession, data: ModelBody) -> ModelBody:
    return check_model(data)


async def _checked_format(session: AsyncSession, data: FormatBody) -> FormatBody:
    return check_format(data)


@get("/", guards=READERS, responses=problems(*READ), summary="List GPUs")
async def list_gpus(
    self: Controller,
    db_session: Session,
    vendor: QueryText = None,
    fp8: QueryBool = None,
    fp4: QueryBool = None,
    min_memory_bytes: QueryBytes = 0,
    limit: Limit = 100,
    offset: Offset = 0,
) -> GpuPage:
    where: list[ColumnElement[bool]] = []
    if vendor is not None:
        where.append(same_text_ignoring_case(Gpu.vendor, vendor))
    if fp8 is not None:
        where.append(Gpu.fp8.is_(fp8))
    if fp4 is not None:
        where.append(Gpu.fp4.is_(fp4))
    if min_memory_bytes:
        where.append(Gpu.memory_bytes >= min_memory_bytes)
    return await _page(db_session, Gpu, GpuBody, GpuPage, limit, offset, where)


@get("/", guards=READERS, responses=problems(*READ), summary="List interconnects")
async def list_interconnects(
    self: Controller,
    db_session: Session,
    kind: QueryText = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> InterconnectPage:
    where = [Interconnect.kind == kind] if kind is not None else []
    return await _page(
        db_session, Interconnect, InterconnectBody, InterconnectPage, limit, offset, where
    )


@get("/", guards=READERS, responses=problems(*READ), summary="List models")
async def list_models(
    self: Controller,
    db_session: Session,
    moe: QueryBool = None,
    max_total_params: QueryBytes = MAX_SAFE_INT,
    limit: Limit = 100,
    offset: Offset = 0,
) -> ModelPage:
    where: list[ColumnElement[bool]] = []
    if moe is not None:
        where.append(Model.experts > 1 if moe else Model.experts <= 1)
    if max_total_params < MAX_SAFE_INT:
        where.append(Model.total_params <= max_total_params)
    return await _page(db_session, Model, ModelBody, ModelPage, limit, offset, where)


@post(
    "/import",
    guards=ADMINS,
    security=SECURITY,
    responses=problems(*WRITE),
    summary="Add a model from its Hugging Face config.json (offline, exact counts)",
)
async def import_model(
    self: Controller, db_session: Session, data: JSONBody[ModelImportBody]
) -> ModelImportAnswer:
    imported = import_config(data.config_json, data.slug, data.index_json)
    row = await _create(db_session, Model, check_model(_imported_body(data, imported)))
    details = {f: getattr(imported, f) for f in ImportDetails.__struct_fields__}
    return ModelImportAnswer(model=_answer(row, ModelBody), **details)


@get("/", guards=READERS, responses=problems(*READ), summary="List number formats")
async def list_formats(
    self: Controller,
    db_session: Session,
    needs: QueryText = None,
    kv_capable: QueryBool = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> FormatPage:
    where: list[ColumnElement[bool]] = []
    if needs is not None:
        where.append(Format.needs == needs)
    if kv_capable is not None:
        where.append(Format.kv_capable.is_(kv_capable))
    return await _page(db_session, Format, FormatBody, FormatPage, limit, offset, where)


GPUS = Kind(name="gpu", path="/gpus", table=Gpu, body=GpuBody, noun="a GPU", check=check_gpu)
INTERCONNECTS = Kind(
    name="interconnect",
    path="/interconnects",
    table=Interconnect,
    body=InterconnectBody,
    noun="an interconnect",
    check=_as_given,
    before_delete=_unused_interconnect,
    delete_summary="Delete an interconnect (409 while a GPU uses it)",
)
MODELS = Kind(
    name="model", path="/models", table=Model, body=ModelBody, noun="a model", check=_checked_model
)
FORMATS = Kind(
    name="format",
    path="/formats",
    table=Format,
    body=FormatBody,
    noun="a number format",
    check=_checked_format,
)

catalogue_handlers = [
    controller(GPUS, list_gpus),
    controller(INTERCONNECTS, list_interconnects),
    controller(MODELS, list_models, import_model),
    controller(FORMATS, list_formats),
]
