"""Catalogue rows -> core specs, including rows a saved plan's snapshot kept from before a
migration added columns."""

import json
from pathlib import Path

import msgspec

from service.catalogue.convert import model_spec_of
from service.catalogue.hf_config import import_config
from service.catalogue.tables import Model
from service.sizing.models import ModelSpec

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def test_a_snapshot_without_the_newer_columns_takes_their_defaults() -> None:
    # A model row as a plan saved before migrations 0006 to 0008 holds it: no rope_cache_rows,
    # no linear-attention sizes, no rotary_dim, no architecture. The migrations gave existing
    # rows [], 0 and '', so the snapshot's answer is recomputed on those values instead of
    # failing.
    old = {
        "slug": "llama-3.1-8b",
        "name": "Llama 3.1 8B",
        "aliases": [],
        "notes": "",
        "sources": [],
        "total_params": 8_030_261_248,
        "active_params": 8_030_261_248,
        "active_params_incl_embedding": 0,
        "layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14_336,
        "attention_heads": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "vocab_size": 128_256,
        "max_context_tokens": 131_072,
        "experts": 0,
        "experts_per_token": 0,
        "kv_lora_rank": 0,
        "qk_rope_head_dim": 0,
        "sliding_window_tokens": 0,
        "layer_types": [],
        "checkpoint_format": "",
        "checkpoint_bytes": 0,
    }
    spec = model_spec_of(Model(**old))
    assert spec.total_params == 8_030_261_248 and spec.kv_heads == 8
    assert spec.rope_cache_rows == () and spec.layer_types == ()
    assert (spec.linear_key_heads, spec.linear_conv_kernel, spec.rotary_dim) == (0, 0, 0)
    assert spec.architecture == ""


def test_a_spec_stored_as_a_row_converts_back_unchanged() -> None:
    # What POST /models/import stores (every spec field a column of the same name, tuples as
    # JSON lists) comes back as the same spec: the imported Gemma 3 (multimodal) keeps its class
    # Gemma3ForConditionalGeneration, both rotary caches and its 62 layer types.
    raw = json.loads((CONFIGS / "gemma-3-27b-multimodal.json").read_text())
    spec = import_config(raw, "my-gemma-3").spec
    assert spec.architecture == "Gemma3ForConditionalGeneration"
    assert len(spec.layer_types) == 62 and spec.rope_cache_rows == (131_072, 1_048_576)
    columns = set(Model.__table__.columns.keys())
    assert set(ModelSpec.__struct_fields__) <= columns
    row = Model(**{k: v for k, v in msgspec.to_builtins(spec).items() if k in columns})
    assert model_spec_of(row) == spec
