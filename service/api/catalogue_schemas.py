"""The bodies of POST /models/import: a Hugging Face config.json in, the imported row and what
was derived from it out (the other catalogue bodies are service.schemas.catalogue)."""

from typing import Any

import msgspec

from service.catalogue.hf_config import ImportDetails
from service.schemas.catalogue import Aliases, LongText, ModelBody, Name, Slug, Sources


class ModelImportBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A Hugging Face config.json (and optionally model.safetensors.index.json) to add as a
    catalogue model, derived offline and exactly (service.catalogue.hf_config)."""

    slug: Slug
    name: Name = ""
    config_json: dict[str, Any]
    index_json: dict[str, Any] | None = None
    aliases: Aliases = []
    notes: LongText = ""
    sources: Sources = []


class ModelImportAnswer(ImportDetails, frozen=True, kw_only=True):
    model: ModelBody
