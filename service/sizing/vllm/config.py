"""vLLM's engine flags as the method takes them (``EngineConfig``), and the readings of a
release, a quantization method and a KV cache dtype that fill them."""

from typing import Literal

import msgspec

from service.sizing.errors import require
from service.sizing.vllm.releases import (
    CURRENT,
    DEFAULT_ERA,
    BnbAbsmax,
    EngineEra,
    MlaWeights,
    last_of,
    release_of,
    rules_of,
)

Quantization = Literal["none", "fp8", "mxfp4", "awq", "gptq", "w4a16-experts", "bnb-nf4"]
KvCacheDtype = Literal["auto", "fp8"]
Dtype = Literal["auto", "bfloat16", "float16", "float32"]
CompileCache = Literal["cold", "warm"]
ModelRunner = Literal["auto", "v2", "original"]
Device = Literal["cuda", "xpu"]
"""The vLLM platform: cuda (NVIDIA, and AMD through ROCm, told apart by the GPU) or xpu (Intel
GPUs, the vllm/vllm-openai-xpu images)."""
UsageContext = Literal["api_server", "llm_class"]

Mxfp4Backend = Literal["auto", "marlin", "triton", "triton-padded", "flashinfer-trtllm", "xpu"]
"""How vLLM lays out MXFP4 experts (``vllm/model_executor/layers/quantization/mxfp4.py``,
``Mxfp4MoEMethod.create_weights`` / ``process_weights_after_loading``); see
``mxfp4_expert_bytes``. auto: the backend vLLM picks for the GPU and engine era."""


class EngineConfig(msgspec.Struct, frozen=True, kw_only=True):
    """vLLM's flags (None: the engine's default for this GPU and version)."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = 0.9
    """None: the release's own default (``ReleaseRules.gpu_memory_utilization``), resolved with the
    other defaults in ``engine_defaults``."""
    dtype: Dtype = "auto"
    """--dtype: float32 doubles 16-bit weights and an auto KV cache (4 bytes a value)."""
    block_size: int = 16
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization = "none"
    """none: 16-bit weights; fp8: FP8 linear layers (embedding and LM head stay 16-bit);
    mxfp4: MXFP4 experts (gpt-oss), the rest 16-bit; awq, gptq: 4-bit linear layers in
    groups of 128 as Marlin holds them (``INT4_BYTES``); w4a16-experts: a compressed-tensors
    W4A16 checkpoint that quantises only the routed experts (``w4a16_expert_bytes``)."""
    int4_group_size: int = 128
    """w4a16-experts: values per 16-bit scale (the checkpoint's quantization_config)."""
    bnb_absmax: BnbAbsmax = "fp32"
    """bnb-nf4: the block scales' layout after loading (``for_release`` sets the release's;
    Unsloth's fast_inference patches the 0.9.2+ dequantisation out, keeping them nested)."""
    bnb_skip_attention_layers: tuple[int, ...] = ()
    """bnb-nf4: decoder layers whose attention the checkpoint keeps 16-bit (its quantization_config
    llm_int8_skip_modules, e.g. "model.layers.0.self_attn" in Unsloth's dynamic 4-bit repacks);
    ``bnb_skipped_layers`` reads them from the list."""
    bnb_skip_mlp_layers: tuple[int, ...] = ()
    """bnb-nf4: decoder layers whose MLP the checkpoint keeps 16-bit ("model.layers.2.mlp")."""
    enable_lora: bool = False
    """--enable-lora: vLLM pre-allocates max_loras adapter slots of max_lora_rank in every
    wrapped layer (``lora_layer_bytes``, ``lora_embedding_bytes``, ``punica_metadata_bytes``)."""
    max_loras: int = 1
    max_lora_rank: int = 16
    lora_embeddings: bool = False
    """The model's vLLM class lists LoRA embedding modules (Llama, Mistral, Mixtral:
    ``embedding_modules = {"embed_tokens": ..., "lm_head": ...}``; Qwen2 and Qwen3 list none):
    LoRA also wraps the embedding and the logits, and the model is built with
    lora_extra_vocab_size more rows."""
    lora_extra_vocab_size: int = 256
    """LoRAConfig's default until vLLM removed the extra vocabulary (PRs #28382 / #28545, November
    2025; ``for_release``)."""
    lora_in_weights: bool = True
    """Whether "Model loading took" (and so the KV budget) counts the LoRA slots: from 0.8 (vLLM PR
    #14469, "Make the deviceprofiler include LoRA memory"); before it V0 created the LoRA manager
    after the measurement and the slots came out of the memory left outside the budget
    (``for_release``)."""
    mxfp4_backend: Mxfp4Backend = "auto"
    model_runner: ModelRunner = "auto"
    """0.23-0.28: the runner the engine picked, where known (a log's "Using V2 Model Runner",
    or VLLM_USE_V2_MODEL_RUNNER set); auto: the release's rule (``runs_on_model_runner_v2``)."""
    release: tuple[int, int, int] | None = None
    """The vLLM release (``release_of`` a version string), for rules that changed inside an
    era: which models Model Runner V2 takes (``runs_on_model_runner_v2``) and the sliding
    window's in-flight reserve (``in_flight_batches``). None, or a release outside the era: the
    era's last (``releases.resolved_release``)."""
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    device: Device = "cuda"
    cpu_offload_bytes: int = 0
    """--cpu-offload-gb x 2^30 (per GPU): decoder-layer weights kept in CPU memory, layer by
    layer from the first; ``offloaded_layer_bytes``."""
    compile_cache: CompileCache = "cold"
    """Model Runner V2 only: a warm torch.compile cache (a restart on the same cache
    directory) skips most of the first start's profile peak."""
    usage: UsageContext = "api_server"
    era: EngineEra = msgspec.field(default=DEFAULT_ERA, name="version")
    """How the release accounts memory (``releases``); "version" on the wire."""
    mla_latent_cache: bool = True
    """False for releases before 0.7.1 (``for_release``), which cached DeepSeek's
    attention as full K and V of 256 values per head instead of the MLA latent."""
    mla_weights: MlaWeights = "current"
    """What MLA keeps beside the checkpoint's weights after loading (``for_release``)."""
    gpu_total_bytes: int | None = None
    """What torch sees on the GPU (a log's total_gpu_memory); None: the catalogue's
    ``torch_visible_bytes`` (``defaults.torch_visible_bytes``)."""


def for_release(config: EngineConfig, version: str | None) -> EngineConfig:
    """``config`` with what a release decides inside its era (``config.era``): the release
    itself (for the rules that changed inside an era), MLA's cache and weight layouts, how
    bitsandbytes scales are kept, LoRA's extra vocabulary and where its slots are counted, as
    ``releases`` says. ``version`` None or unreadable: the era's last release for MLA (the era
    bounds it), the current releases' loaders for bitsandbytes and LoRA (an untagged build is a
    recent one)."""
    release = release_of(version) if version else None
    era_rules = rules_of(release) if release else last_of(config.era)
    loaders = rules_of(release) if release else CURRENT
    return msgspec.structs.replace(
        config,
        release=release,
        mla_latent_cache=era_rules.mla_latent_cache if release else True,
        mla_weights=era_rules.mla_weights,
        bnb_absmax=loaders.bnb_absmax,
        lora_extra_vocab_size=loaders.lora_extra_vocab_size,
        lora_in_weights=loaders.lora_in_weights,
    )


FOUR_BIT_METHODS = frozenset({"gptq_marlin_24", "gguf"})
"""vLLM quantization methods with 4-bit (or smaller) weights whose loaded layout is not
modelled (2:4 sparse Marlin, GGUF's many block formats)."""


def quantization_of(method: str, field: str = "quantization") -> Quantization:
    """vLLM's quantization= method as the weights it loads: MXFP4 experts, FP8 linear layers
    (fp8, compressed-tensors, modelopt checkpoints: compressed-tensors is taken as its common
    8-bit schemes, W8A8 FP8 or INT8), AWQ / GPTQ / bitsandbytes 4-bit, or 16-bit. Other 4-bit
    methods are refused (a SizingError
    naming ``field``) rather than sized as something they are not."""
    method = method.lower()
    if method == "mxfp4":
        return "mxfp4"
    if method == "w4a16-experts":
        return "w4a16-experts"
    if method in ("awq", "awq_marlin"):
        return "awq"
    if method in ("gptq", "gptq_marlin"):
        return "gptq"
    if method in ("bitsandbytes", "bnb-nf4"):
        # 4-bit, vLLM's BitsAndBytesConfig default (load_in_4bit); 8-bit checkpoints are rare.
        return "bnb-nf4"
    require(
        method not in FOUR_BIT_METHODS,
        field,
        f"{method} loads 4-bit weights in a layout the vLLM method does not model (it models "
        "16-bit, FP8, MXFP4, AWQ, GPTQ and bitsandbytes 4-bit weights); use the seeds' method "
        "with an int4 format",
    )
    return "fp8" if method in ("fp8", "compressed-tensors", "modelopt") else "none"


def kv_cache_dtype_of(dtype: str) -> KvCacheDtype:
    """vLLM's kv_cache_dtype= (fp8, fp8_e4m3, fp8_e5m2, auto, ...) as the cache's bytes."""
    return "fp8" if dtype.startswith("fp8") else "auto"


def model_dtype_bytes(config: EngineConfig) -> int:
    """Bytes of a value in the model's own dtype (the 16-bit checkpoint's, or --dtype float32):
    what the rope caches, routers and linear-attention states are held in."""
    return 4 if config.dtype == "float32" else 2
