"""The vLLM flags a plan request may set (``method: "vllm"``): the type alone, which the request
schemas are built from; ``plan.py`` plans with them."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.sizing.vllm.config import (
    CompileCache,
    Dtype,
    KvCacheDtype,
    ModelRunner,
    Quantization,
    UsageContext,
)
from service.sizing.vllm.flags import (
    BatchedTokens,
    CpuOffloadBytes,
    Loras,
    ModelLen,
    PipelineStages,
    Seqs,
)
from service.sizing.vllm.lora import LoraRank
from service.sizing.vllm.releases import EngineEra


class VllmOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """vLLM's flags for ``method: "vllm"`` (null: the engine's default, which may depend on the
    GPU; the answer says which were used)."""

    max_model_len: ModelLen | None = None
    """Default: the request's context_tokens."""
    max_num_seqs: Seqs | None = None
    max_num_batched_tokens: BatchedTokens | None = None
    block_size: Literal[8, 16, 32, 64, 128, 256] = 16
    kv_cache_dtype: KvCacheDtype | None = None
    """Default: fp8 when the request's kv_format is fp8, else auto (the model's 16-bit)."""
    quantization: Quantization | None = None
    """Default: from weight_format (bf16/fp16 none, fp8 fp8, mxfp4 mxfp4, awq-int4 awq,
    gptq-int4 gptq, nf4 bnb-nf4)."""
    engine_version: EngineEra | None = None
    """How the release accounts memory; default: the era of vllm_version, else the current
    releases' (v2-all, 0.29 and later)."""
    vllm_version: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    """The release to predict, as it prints itself ("0.19.0"): sets engine_version (unless
    given) and the MLA cache layout of releases before 0.7.1."""
    dtype: Dtype = "auto"
    """--dtype; float32 doubles 16-bit weights and the auto KV cache."""
    usage: UsageContext = "api_server"
    enforce_eager: bool = False
    compile_cache: CompileCache = "cold"
    """Model Runner V2 (0.23+, dense models): warm when restarting on a kept torch.compile
    cache, which leaves about 1 GiB more for the KV cache on an 8B model."""
    model_runner: ModelRunner = "auto"
    """0.23-0.28: force the runner (v2, or original for VLLM_USE_V2_MODEL_RUNNER=0); auto: the
    release's rule, by the model's class (``vllm_version`` picks the release)."""
    pipeline_parallel_size: PipelineStages = 1
    int4_group_size: Literal[32, 64, 128] = 128
    """quantization w4a16-experts: the checkpoint's group size (its quantization_config)."""
    cpu_offload_bytes: CpuOffloadBytes = 0
    """--cpu-offload-gb x 2^30, per GPU: decoder layers kept in CPU memory, in order until the
    budget is spent (embeddings, LM head and rotary caches stay on the GPU)."""
    enable_lora: bool = False
    """--enable-lora: max_loras adapter slots of max_lora_rank in every wrapped layer, counted in
    the weights from 0.8 (before, outside the KV budget)."""
    max_loras: Loras = 1
    max_lora_rank: LoraRank = 16
    lora_embeddings: bool = False
    """The model's vLLM class puts LoRA on its embedding and LM head (Llama, Mistral,
    Mixtral; not Qwen2/Qwen3), with lora_extra_vocab_size (256, until 0.12) more rows."""
