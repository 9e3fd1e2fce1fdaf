"""Catalogue rows -> core specs, including rows a saved plan's snapshot kept from before a
migration added columns."""

import json
from pathlib import Path
from types import SimpleNamespace

import msgspec

from service.catalogue.convert import gpu_spec_of, model_spec_of
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


def _gpu_row(**fields: object) -> SimpleNamespace:
    """A GPU row as the ORM or a snapshot holds it: attributes, no links."""
    base: dict[str, object] = {
        "slug": "x",
        "name": "Acme X",
        "vendor": "NVIDIA",
        "architecture": "Ada Lovelace (sm_89)",
        "memory_bytes": 24 * 10**9,
        "driver_visible_bytes": 0,
        "hbm_bytes_per_s": 10**12,
        "nvlink": None,
        "host_link": None,
        "fp8": True,
        "fp4": False,
        "gpus_per_node": 8,
        "bf16_dense_tflops": 0.0,
    }
    return SimpleNamespace(**{**base, **fields})


def test_peer_to_peer_over_pcie_is_the_rows_column_not_its_name() -> None:
    # Migration 0015: the column decides. A GeForce name with the column true is peer-capable
    # (a driver that allows it), another name with it false is not.
    geforce = _gpu_row(name="NVIDIA GeForce RTX 5090", pcie_peer_to_peer=True)
    assert gpu_spec_of(geforce, {}).peer_to_peer  # type: ignore[arg-type]
    refused = _gpu_row(name="Acme X", pcie_peer_to_peer=False)
    assert not gpu_spec_of(refused, {}).peer_to_peer  # type: ignore[arg-type]


def test_a_snapshot_from_before_0015_keeps_the_name_rule_it_was_planned_with() -> None:
    # No pcie_peer_to_peer attribute: NVIDIA's GeForce line (P2P off in the driver) by name.
    assert not gpu_spec_of(_gpu_row(name="NVIDIA GeForce RTX 4090"), {}).peer_to_peer  # type: ignore[arg-type]
    assert gpu_spec_of(_gpu_row(name="NVIDIA L40S"), {}).peer_to_peer  # type: ignore[arg-type]


def test_the_fp4_peak_is_the_rows_tflops_and_none_in_a_snapshot_from_before_0016() -> None:
    # 10,066.4 TFLOPS = 1.00664e16 FLOP/s; a snapshot without the column gets what 0016 gave
    # the rows it found: 0 (none, or not known).
    row = _gpu_row(fp4=True, fp4_dense_tflops=10066.4)
    assert gpu_spec_of(row, {}).fp4_dense_flops_per_s == 10066.4e12  # type: ignore[arg-type]
    assert gpu_spec_of(_gpu_row(), {}).fp4_dense_flops_per_s == 0.0  # type: ignore[arg-type]


def test_the_torch_total_is_the_rows_column_not_its_slug() -> None:
    # Migration 0017: the column decides. A row named "h200" that stores 0 is unmeasured (the
    # core then takes the default reserve); another slug keeps the total it stores.
    assert gpu_spec_of(_gpu_row(slug="h200", torch_visible_bytes=0), {}).torch_visible_bytes == 0  # type: ignore[arg-type]
    row = _gpu_row(slug="my-h100", torch_visible_bytes=85_026_809_984)
    assert gpu_spec_of(row, {}).torch_visible_bytes == 85_026_809_984  # type: ignore[arg-type]


def test_a_snapshot_from_before_0017_keeps_the_slug_rule_it_was_planned_with() -> None:
    # No torch_visible_bytes attribute: nvidia-smi's total less the reserve its slug had then.
    # H200: 150,754,820,096 - 634,975,683 = 150,119,844,413 B; MI300X: 205,822,885,888 +
    # 314,000,000 = 206,136,885,888 B; an unlisted slug: 0, the core's default reserve.
    h200 = _gpu_row(slug="h200", driver_visible_bytes=150_754_820_096)
    assert gpu_spec_of(h200, {}).torch_visible_bytes == 150_119_844_413  # type: ignore[arg-type]
    mi300x = _gpu_row(slug="mi300x", driver_visible_bytes=205_822_885_888)
    assert gpu_spec_of(mi300x, {}).torch_visible_bytes == 206_136_885_888  # type: ignore[arg-type]
    assert gpu_spec_of(_gpu_row(slug="b200"), {}).torch_visible_bytes == 0  # type: ignore[arg-type]
