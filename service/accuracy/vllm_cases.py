"""A start-up-log case file as the core's inputs: the model from its config.json, the engine's
configuration from its serve flags, and the vLLM method's prediction for it."""

import json
from pathlib import Path
from typing import Any

import msgspec

from service.catalogue.hf_config import import_config
from service.sizing.errors import require
from service.sizing.models import ModelSpec
from service.sizing.units import GiB
from service.sizing.vllm.bitsandbytes import bnb_skipped_layers
from service.sizing.vllm.config import EngineConfig, for_release, kv_cache_dtype_of, quantization_of
from service.sizing.vllm.predict import EnginePrediction, predict_vllm
from service.sizing.vllm.releases import BnbAbsmax, EngineEra, era_of_version

CASES_DIR = Path(__file__).resolve().parent / "cases" / "vllm_logs"


def load_cases(directory: Path = CASES_DIR) -> list[dict[str, Any]]:
    """Every case, with the folder it came from (a case's hf_config path is relative to it)."""
    cases = []
    for path in sorted(directory.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["_dir"] = str(directory)
        cases.append(case)
    return cases


def model_of(case: dict[str, Any]) -> ModelSpec:
    """The case's model: a shipped catalogue row, or the case's own config.json (a model the
    catalogue does not ship), imported exactly as POST /models/import would."""
    c = case["config"]
    raw = _hf_config(case)
    if raw:
        config = {k: v for k, v in raw.items() if not k.startswith("_")}  # _source: provenance
        return import_config(config, Path(c["hf_config"]).stem).spec
    from service.offline import local_catalogue  # the shipped catalogue, no database

    spec = local_catalogue().model(c["model_slug"])
    if c.get("max_context_tokens"):  # a served model longer than its stand-in: the length
        # vLLM accepts changes, the stand-in's shapes (its rope cache included) do not
        spec = msgspec.structs.replace(
            spec,
            max_context_tokens=c["max_context_tokens"],
            rope_cache_rows=spec.rope_cache_rows or (spec.max_context_tokens,),
        )
    return spec


def source_of(case: dict[str, Any]) -> str:
    s = case["source"]
    ref = s.get("path") or (f"issue #{s['issue']}" if "issue" in s else f"PR #{s.get('pull', '?')}")
    return f"{s['repository']} {ref}"


def _hf_config(case: dict[str, Any]) -> dict[str, Any]:
    """The case's own config.json (empty for a catalogue model)."""
    c = case["config"]
    if not c.get("hf_config"):
        return {}
    path = Path(case.get("_dir", CASES_DIR)) / c["hf_config"]
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return raw


def _bnb_skips(case: dict[str, Any], layers: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The decoder layers a bitsandbytes checkpoint keeps 16-bit, from its quantization_config
    (the case's config.json)."""
    quant = _hf_config(case).get("quantization_config") or {}
    return bnb_skipped_layers(list(quant.get("llm_int8_skip_modules") or []), layers)


def config_of(case: dict[str, Any], model: ModelSpec) -> EngineConfig:
    """The case's engine flags (``model``: the case's model, ``model_of``)."""
    c = case["config"]
    version = era_of_version(case["vllm_version"])  # an unmodelled release is the first reason
    if c.get("engine_version"):  # the log shows the engine (0.8-0.10 could still run V0)
        version = msgspec.convert(c["engine_version"], EngineEra)
    w4a16 = c.get("weight_format") == "int4"
    require(
        not w4a16 or "int4_group_size" in c,
        "int4_group_size",
        "a compressed-tensors W4A16 case must say its checkpoint's group size",
    )
    device = c.get("device", "cuda")
    require(
        device in ("cuda", "xpu"),
        "device",
        f"vLLM's {device} platform is not modelled (CUDA, ROCm and XPU GPUs are)",
    )
    total = case.get("gpu_total_gib_logged")
    quantization = "w4a16-experts" if w4a16 else quantization_of(c.get("quantization") or "none")
    skip_attention: tuple[int, ...] = ()
    skip_mlp: tuple[int, ...] = ()
    if quantization == "bnb-nf4":
        skip_attention, skip_mlp = _bnb_skips(case, model.layers)
    config = EngineConfig(
        tensor_parallel_size=c["tensor_parallel_size"],
        pipeline_parallel_size=c.get("pipeline_parallel_size") or 1,
        max_model_len=c.get("max_model_len"),
        gpu_memory_utilization=c["gpu_memory_utilization"],
        dtype="float32" if c.get("dtype") == "float32" else "auto",
        block_size=c.get("block_size") or 16,
        kv_cache_dtype=kv_cache_dtype_of(c.get("kv_cache_dtype", "auto")),
        quantization=quantization,
        int4_group_size=c.get("int4_group_size", 128),
        bnb_skip_attention_layers=skip_attention,
        bnb_skip_mlp_layers=skip_mlp,
        enable_lora=bool(c.get("enable_lora")),
        max_loras=c.get("max_loras") or 1,
        max_lora_rank=c.get("max_lora_rank") or 16,
        lora_embeddings=bool(c.get("lora_embeddings")),
        max_num_batched_tokens=c.get("max_num_batched_tokens"),
        max_num_seqs=c.get("max_num_seqs"),
        enforce_eager=bool(c.get("enforce_eager")),
        compile_cache="warm" if c.get("compile_cache") == "warm" else "cold",
        device="xpu" if device == "xpu" else "cuda",
        cpu_offload_bytes=int((c.get("cpu_offload_gb") or 0) * GiB),
        usage="llm_class" if c.get("usage") == "llm_class" else "api_server",
        era=version,
        gpu_total_bytes=round(total * GiB) if total and not case.get("gpu") else None,
    )
    config = for_release(config, case["vllm_version"])
    if c.get("bnb_absmax"):  # the case knows how its run kept the scales
        config = msgspec.structs.replace(
            config, bnb_absmax=msgspec.convert(c["bnb_absmax"], BnbAbsmax)
        )
    if c.get("engine_version"):  # a named engine: the release's finer rules are not its own
        config = msgspec.structs.replace(config, release=None)
    return config


def predict_case(case: dict[str, Any]) -> EnginePrediction:
    from service.offline import local_catalogue  # the shipped catalogue, no database

    gpu = local_catalogue().gpu(
        case["gpu"] or "rtx-4090"
    )  # a logged total replaces an unlisted GPU's
    model = model_of(case)
    return predict_vllm(model, gpu, config_of(case, model))
