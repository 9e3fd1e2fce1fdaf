"""The catalogue endpoints: /gpus, /interconnects, /models, /formats.

Reads: list (filters, limit/offset) and get by slug or unambiguous alias. Writes (admin): create,
replace (the slug in the body must equal the path's: slugs are stable once published), delete.
A write runs in the request's transaction, which commits only on a 2xx answer, so a failed
write leaves nothing behind.
"""

import datetime
from typing import Annotated, Any, TypeVar

import msgspec
from advanced_alchemy.filters import LimitOffset
from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter, QueryParameter
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.catalogue_schemas import ModelImportAnswer, ModelImportBody
from service.api.guards import open_unless_required, require_role
from service.api.problems import READ, WRITE, Conflict, problems
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
from service.sizing.errors import SizingError, require
from service.sizing.models import ModelSpec, validate_model

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
QueryBytes = Annotated[int, QueryParameter(ge=0, le=2**53)]
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


def _check_prices(data: GpuBody) -> None:
    """Prices are dated by a real day and need a currency; else 422 (the schema bounds them)."""
    for name in ("hourly_price_cents", "purchase_price_cents"):
        value = getattr(data, name)
        require(value is None or data.currency is not None, "currency", f"{name} needs one")
    if data.price_observed_on is not None:
        try:
            datetime.date.fromisoformat(data.price_observed_on)
        except ValueError:
            raise SizingError("price_observed_on", "must be a calendar date, YYYY-MM-DD") from None


async def _check_links(session: AsyncSession, data: GpuBody) -> GpuBody:
    """Link slugs must name interconnects (aliases resolve to the slug); else 422."""
    _check_prices(data)
    changes = {}
    for field in ("nvlink", "host_link"):
        value = getattr(data, field)
        if value is not None:
            row = await resolve(session, Interconnect, value, field, status=422)
            changes[field] = row.slug
    return msgspec.structs.replace(data, **changes)


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


def _check_model(data: ModelBody) -> ModelBody:
    if data.active_params == 0:
        data = msgspec.structs.replace(data, active_params=data.total_params)  # dense
    spec_fields = {
        k: v for k, v in msgspec.structs.asdict(data).items() if k in ModelSpec.__struct_fields__
    }
    spec_fields["layer_types"] = tuple(data.layer_types)
    spec_fields["rope_cache_rows"] = tuple(data.rope_cache_rows)
    try:
        validate_model(ModelSpec(**spec_fields), field="body")
    except SizingError as exc:
        raise SizingError(exc.field.removeprefix("body."), exc.message) from None
    require(
        data.active_params_incl_embedding <= data.total_params,
        "active_params_incl_embedding",
        "cannot exceed total_params",
    )
    return data


def _check_format(data: FormatBody) -> FormatBody:
    if not data.block_size:
        for name in ("scale_bits", "zero_point_bits", "super_block_size", "super_scale_bits"):
            require(getattr(data, name) == 0, name, "needs a block_size (values sharing a scale)")
    require(
        bool(data.super_block_size) == bool(data.super_scale_bits),
        "super_scale_bits",
        "super_block_size and super_scale_bits go together",
    )
    return data


class GpuController(Controller):
    path = "/gpus"
    tags = TAGS

    @get("/", guards=READERS, responses=problems(*READ), summary="List GPUs")
    async def list_gpus(
        self,
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

    @get("/{slug:str}", guards=READERS, responses=problems(*READ), summary="Get a GPU")
    async def get_gpu(self, db_session: Session, slug: SlugPath) -> GpuBody:
        return _answer(await resolve(db_session, Gpu, slug, "slug"), GpuBody)

    @post("/", guards=ADMINS, security=SECURITY, responses=problems(*WRITE), summary="Add a GPU")
    async def create_gpu(self, db_session: Session, data: JSONBody[GpuBody]) -> GpuBody:
        row = await _create(db_session, Gpu, await _check_links(db_session, data))
        return _answer(row, GpuBody)

    @put(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Replace a GPU",
    )
    async def replace_gpu(
        self, db_session: Session, slug: SlugPath, data: JSONBody[GpuBody]
    ) -> GpuBody:
        row = await _replace(db_session, Gpu, slug, await _check_links(db_session, data))
        return _answer(row, GpuBody)

    @delete(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Delete a GPU",
    )
    async def delete_gpu(self, db_session: Session, slug: SlugPath) -> None:
        await _delete(db_session, Gpu, slug)


class InterconnectController(Controller):
    path = "/interconnects"
    tags = TAGS

    @get("/", guards=READERS, responses=problems(*READ), summary="List interconnects")
    async def list_interconnects(
        self,
        db_session: Session,
        kind: QueryText = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> InterconnectPage:
        where = [Interconnect.kind == kind] if kind is not None else []
        return await _page(
            db_session, Interconnect, InterconnectBody, InterconnectPage, limit, offset, where
        )

    @get("/{slug:str}", guards=READERS, responses=problems(*READ), summary="Get an interconnect")
    async def get_interconnect(self, db_session: Session, slug: SlugPath) -> InterconnectBody:
        return _answer(await resolve(db_session, Interconnect, slug, "slug"), InterconnectBody)

    @post(
        "/",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Add an interconnect",
    )
    async def create_interconnect(
        self, db_session: Session, data: JSONBody[InterconnectBody]
    ) -> InterconnectBody:
        return _answer(await _create(db_session, Interconnect, data), InterconnectBody)

    @put(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Replace an interconnect",
    )
    async def replace_interconnect(
        self, db_session: Session, slug: SlugPath, data: JSONBody[InterconnectBody]
    ) -> InterconnectBody:
        return _answer(await _replace(db_session, Interconnect, slug, data), InterconnectBody)

    @delete(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Delete an interconnect (409 while a GPU uses it)",
    )
    async def delete_interconnect(self, db_session: Session, slug: SlugPath) -> None:
        users = (
            await db_session.scalars(
                select(Gpu.slug).where((Gpu.nvlink == slug) | (Gpu.host_link == slug))
            )
        ).all()
        if users:
            raise Conflict("slug", f"interconnect {slug!r} is used by {', '.join(users)}")
        await _delete(db_session, Interconnect, slug)


class ModelController(Controller):
    path = "/models"
    tags = TAGS

    @get("/", guards=READERS, responses=problems(*READ), summary="List models")
    async def list_models(
        self,
        db_session: Session,
        moe: QueryBool = None,
        max_total_params: QueryBytes = 2**53,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> ModelPage:
        where: list[ColumnElement[bool]] = []
        if moe is not None:
            where.append(Model.experts > 1 if moe else Model.experts <= 1)
        if max_total_params < 2**53:
            where.append(Model.total_params <= max_total_params)
        return await _page(db_session, Model, ModelBody, ModelPage, limit, offset, where)

    @get("/{slug:str}", guards=READERS, responses=problems(*READ), summary="Get a model")
    async def get_model(self, db_session: Session, slug: SlugPath) -> ModelBody:
        return _answer(await resolve(db_session, Model, slug, "slug"), ModelBody)

    @post("/", guards=ADMINS, security=SECURITY, responses=problems(*WRITE), summary="Add a model")
    async def create_model(self, db_session: Session, data: JSONBody[ModelBody]) -> ModelBody:
        return _answer(await _create(db_session, Model, _check_model(data)), ModelBody)

    @post(
        "/import",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Add a model from its Hugging Face config.json (offline, exact counts)",
    )
    async def import_model(
        self, db_session: Session, data: JSONBody[ModelImportBody]
    ) -> ModelImportAnswer:
        imported = import_config(data.config_json, data.slug, data.index_json)
        row = await _create(db_session, Model, _check_model(_imported_body(data, imported)))
        details = {f: getattr(imported, f) for f in ImportDetails.__struct_fields__}
        return ModelImportAnswer(model=_answer(row, ModelBody), **details)

    @put(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Replace a model",
    )
    async def replace_model(
        self, db_session: Session, slug: SlugPath, data: JSONBody[ModelBody]
    ) -> ModelBody:
        return _answer(await _replace(db_session, Model, slug, _check_model(data)), ModelBody)

    @delete(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Delete a model",
    )
    async def delete_model(self, db_session: Session, slug: SlugPath) -> None:
        await _delete(db_session, Model, slug)


class FormatController(Controller):
    path = "/formats"
    tags = TAGS

    @get("/", guards=READERS, responses=problems(*READ), summary="List number formats")
    async def list_formats(
        self,
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

    @get("/{slug:str}", guards=READERS, responses=problems(*READ), summary="Get a number format")
    async def get_format(self, db_session: Session, slug: SlugPath) -> FormatBody:
        return _answer(await resolve(db_session, Format, slug, "slug"), FormatBody)

    @post(
        "/",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Add a number format",
    )
    async def create_format(self, db_session: Session, data: JSONBody[FormatBody]) -> FormatBody:
        return _answer(await _create(db_session, Format, _check_format(data)), FormatBody)

    @put(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Replace a number format",
    )
    async def replace_format(
        self, db_session: Session, slug: SlugPath, data: JSONBody[FormatBody]
    ) -> FormatBody:
        return _answer(await _replace(db_session, Format, slug, _check_format(data)), FormatBody)

    @delete(
        "/{slug:str}",
        guards=ADMINS,
        security=SECURITY,
        responses=problems(*WRITE),
        summary="Delete a number format",
    )
    async def delete_format(self, db_session: Session, slug: SlugPath) -> None:
        await _delete(db_session, Format, slug)


catalogue_handlers = [GpuController, InterconnectController, ModelController, FormatController]
