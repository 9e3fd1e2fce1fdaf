"""Bring your own model: a Hugging Face config.json (and optionally the safetensors index)
turned into the core's architecture, exact parameter counts and checkpoint bytes, offline.

Supported families are those whose layer code was checked against meta-device parameter counts
(reference/models.md): Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3, gpt-oss,
GLM-4.5/4.6 (glm4_moe: DeepSeek-V3's MoE layout over grouped-query attention, from
transformers' ``modeling_glm4_moe.py``),
Gemma 2 and Gemma 3 (text, and the multimodal wrapper with its SigLIP vision tower),
Qwen2.5-VL (a Qwen2 decoder and its vision transformer, checked against vLLM 0.8.2's
``qwen2_5_vl.py``), and
Qwen3-Next (Gated DeltaNet linear attention and gated full attention, checked against vLLM's
``qwen3_next.py`` and the 74.2812 GiB a TP 2 rank loads in the collected 0.10.2 log). Anything
else is refused with the list, never guessed.
"""

from collections.abc import Mapping
from typing import Any

import msgspec

from service.catalogue.hf_config.families import FAMILIES
from service.catalogue.hf_config.quantization import bnb_skipped, quant_scheme
from service.catalogue.hf_config.reader import FIELD, Config
from service.catalogue.hf_config.rope import rope_cache_rows, rotary_dim
from service.catalogue.hf_config.vision import qwen25_vision_params, siglip_vision_params
from service.sizing.errors import SizingError, require
from service.sizing.models import ModelSpec, validate_model
from service.sizing.params import LinearAttention, ParamCount, count_params, mtp_params
from service.sizing.weights import CheckpointBytes, checkpoint_bytes


class ImportDetails(msgspec.Struct, frozen=True, kw_only=True):
    """What an import found besides the spec (also the answer of POST /models/import)."""

    model_type: str
    params: ParamCount
    vision_params: int
    """Vision tower and projector of a multimodal wrapper (0 for text models); in total_params."""
    mtp_params: int
    checkpoint: CheckpointBytes
    index_total_size_bytes: int | None
    """The safetensors index's metadata.total_size, when given."""
    checkpoint_difference_bytes: int | None
    """index total_size - computed checkpoint bytes (headers and buffers make a small rest)."""
    notes: list[str]


class ImportedModel(ImportDetails, frozen=True, kw_only=True):
    spec: ModelSpec
    """Ready to plan; a quantised checkpoint sets checkpoint_format and checkpoint_bytes."""


def _linear_fields(la: LinearAttention | None) -> dict[str, int]:
    """The spec's linear-attention sizes (all 0 without linear layers)."""
    if la is None:
        return {}
    return {
        "linear_key_heads": la.key_heads,
        "linear_value_heads": la.value_heads,
        "linear_key_head_dim": la.key_head_dim,
        "linear_value_head_dim": la.value_head_dim,
        "linear_conv_kernel": la.conv_kernel,
    }


def _architecture(c: Config) -> str:
    """config.json's ``architectures[0]`` (absent or malformed: "", unknown): the model class
    the engine instantiates, which some of vLLM's rules name. A name with a NUL is malformed
    (PostgreSQL text cannot hold it; the catalogue column is 128 characters)."""
    names = c.raw.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str) and "\x00" not in names[0]:
        return names[0][:128]
    return ""


def import_config(
    config: Mapping[str, Any], slug: str, index: Mapping[str, Any] | None = None
) -> ImportedModel:
    """Derive everything the planner needs from a config.json, exactly."""
    require(isinstance(config, Mapping), FIELD, "must be a JSON object")
    top = Config(config)
    model_type = config.get("model_type")
    # A list or an object is no model_type (and unhashable: the lookup would raise TypeError).
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise SizingError(
            f"{FIELD}.model_type",
            f"unsupported model_type {model_type!r}; supported: {', '.join(sorted(FAMILIES))}",
        )
    c = top.sub("text_config") if model_type == "gemma3" else top
    if model_type == "qwen2_5_vl" and config.get("text_config") is not None:
        # transformers >= 4.52 nests the decoder's fields in text_config (4.57 also mirrors them
        # at the top); older configs keep them at the top only. Nested values win, the top
        # fills what the nesting leaves out.
        c = Config({**config, **top.sub("text_config").raw})
    arch, kinds, window = FAMILIES[model_type](c)
    notes: list[str] = []
    vision = replicated = 0
    if model_type == "gemma3":
        v = top.sub("vision_config")
        # The projector: one vision_hidden x text_hidden matrix and a soft-embedding RMSNorm.
        vision = siglip_vision_params(v) + v.integer("hidden_size") * (arch.hidden_size + 1)
    if model_type == "qwen2_5_vl":
        vision, replicated = qwen25_vision_params(top.sub("vision_config"))
        require(
            top.sub("vision_config").integer("out_hidden_size") == arch.hidden_size,
            f"{FIELD}.vision_config.out_hidden_size",
            "must be the decoder's hidden_size (the merger feeds the decoder)",
        )
    counted = count_params(arch)
    mtp_layers = top.integer("num_nextn_predict_layers", 0, minimum=0)
    scheme, weight_format, quant_notes = quant_scheme(top, arch)
    stored = checkpoint_bytes(arch, scheme, mtp_layers)
    stored, skip_notes = bnb_skipped(top, arch, scheme, stored)
    quant_notes = quant_notes + skip_notes
    if vision:
        vision_bytes = vision * scheme.unquantized_bytes_per_param
        stored = msgspec.structs.replace(
            stored,
            total_bytes=stored.total_bytes + vision_bytes,
            unquantized_params=stored.unquantized_params + vision,
            unquantized_bytes=stored.unquantized_bytes + vision_bytes,
        )
        notes.append(f"includes the vision tower and projector: {vision:,} parameters")
    index_total = None
    if index is not None:
        metadata = index.get("metadata") if isinstance(index, Mapping) else None
        total_size = metadata.get("total_size") if isinstance(metadata, Mapping) else None
        require(
            isinstance(total_size, int) and total_size > 0,
            "index_json.metadata.total_size",
            "must be a positive integer",
        )
        index_total = total_size
    total = counted.total + vision
    spec = ModelSpec(
        slug=slug,
        name=str(config.get("_name_or_path") or slug),
        architecture=_architecture(top),
        total_params=total,
        replicated_params=replicated,
        active_params=counted.active_excl_input_embedding + vision if arch.experts else 0,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.experts.intermediate_size
        if arch.experts
        else arch.intermediate_size,
        attention_heads=arch.attention.heads,
        kv_heads=arch.attention.kv_heads,
        head_dim=arch.attention.head_dim,
        vocab_size=arch.vocab_size,
        max_context_tokens=c.integer("max_position_embeddings"),
        experts=arch.experts.routed if arch.experts else 0,
        experts_per_token=arch.experts.top_k if arch.experts else 0,
        kv_lora_rank=arch.attention.kv_lora_rank,
        qk_rope_head_dim=arch.attention.qk_rope_head_dim,
        q_lora_rank=arch.attention.q_lora_rank,
        dense_layers=arch.experts.dense_layers if arch.experts else 0,
        dense_intermediate_size=arch.intermediate_size
        if arch.experts and arch.experts.dense_layers
        else 0,
        sliding_window_tokens=window,
        layer_types=kinds,
        **_linear_fields(arch.linear_attention),
        rotary_dim=rotary_dim(c, arch.attention.head_dim),
        rope_cache_rows=rope_cache_rows(c, str(model_type)),
        checkpoint_format=weight_format.slug if scheme.method != "none" else "",
        checkpoint_bytes=stored.total_bytes - stored.mtp_bytes if scheme.method != "none" else 0,
    )
    validate_model(spec, field=FIELD)
    return ImportedModel(
        model_type=str(model_type),
        spec=spec,
        params=counted,
        vision_params=vision,
        mtp_params=mtp_params(arch, mtp_layers),
        checkpoint=stored,
        index_total_size_bytes=index_total,
        checkpoint_difference_bytes=None
        if index_total is None
        else index_total - stored.total_bytes,
        notes=notes
        + quant_notes
        + ([f"{mtp_layers} MTP layer(s) stored but not served"] if mtp_layers else []),
    )
