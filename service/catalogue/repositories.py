"""advanced-alchemy repositories of the catalogue tables."""

from typing import Any

from advanced_alchemy.repository import SQLAlchemyAsyncRepository

from service.catalogue.tables import Format, Gpu, Interconnect, Model


class GpuRepository(SQLAlchemyAsyncRepository[Gpu]):
    model_type = Gpu


class InterconnectRepository(SQLAlchemyAsyncRepository[Interconnect]):
    model_type = Interconnect


class ModelRepository(SQLAlchemyAsyncRepository[Model]):
    model_type = Model


class FormatRepository(SQLAlchemyAsyncRepository[Format]):
    model_type = Format


REPOSITORIES: dict[type[Any], type[SQLAlchemyAsyncRepository[Any]]] = {
    Gpu: GpuRepository,
    Interconnect: InterconnectRepository,
    Model: ModelRepository,
    Format: FormatRepository,
}
