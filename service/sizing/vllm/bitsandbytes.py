"""Weights as vLLM holds a bitsandbytes 4-bit checkpoint (NF4 with its quant states), until
0.28 removed the loader; and the Unsloth builds that keep its nested scales."""

import re

from service.sizing.errors import require
from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div
from service.sizing.vllm.config import EngineConfig, model_dtype_bytes
from service.sizing.vllm.releases import BnbAbsmax, Release, release_of
from service.sizing.vllm.shapes import allocated, linear_shapes, require_dense

BNB_REMOVED = (
    "vLLM 0.28 removed its bitsandbytes loader and quantization method (the 0.28.0 wheel holds "
    "neither bitsandbytes_loader.py nor layers/quantization/bitsandbytes.py): name a release "
    "before 0.28 to size a bitsandbytes checkpoint (/plan: vllm.vllm_version; /verify: a log that "
    "prints its version, or engine_version), or plan another format"
)


BNB_BLOCK_VALUES = 64
"""bitsandbytes 4-bit: one absmax per 64 values (``quantize_4bit``'s default blocksize, which
vLLM's in-flight quantisation and Unsloth's checkpoints use)."""
BNB_NESTED_BLOCKS = 256
"""Double quantisation: the absmax values are quantised to uint8 in blocks of 256, each with an
fp32 scale (``nested_absmax``), through a 256-entry fp32 code (``nested_quant_map``)."""


def bnb_matrix_bytes(values: int, absmax: BnbAbsmax) -> int:
    """One checkpoint weight matrix of ``values`` as vLLM holds it after a bitsandbytes 4-bit
    load (vllm/model_executor/layers/quantization/bitsandbytes.py
    ``BitsAndBytesLinearMethod.create_weights`` / ``create_qweight_for_4bit``; the loader
    ``BitsAndBytesModelLoader``, in model_loader/loader.py in 0.7 (``_load_weights``) and in
    model_loader/bitsandbytes_loader.py by 0.10 (``load_weights``)):

    * the packed weight: uint8 of values / quant_ratio, quant_ratio = 16-bit params_dtype bits
      / 8 = 2, i.e. two 4-bit values a byte; a fused module (qkv_proj, gate_up_proj) holds its
      matrices' bytes back to back in one parameter (``bnb_shard_offsets``);
    * its ``QuantState``, one per checkpoint matrix (``_quantized_4bit_generator`` parses it from
      the checkpoint's ``.absmax``, ``.quant_map``, ``.nested_absmax``, ``.nested_quant_map`` and
      ``.quant_state.bitsandbytes__nf4`` tensors with ``QuantState.from_dict(...,
      device="cuda")``; in-flight quantisation gets the same from ``quantize_4bit(...,
      compress_statistics=True, quant_type="nf4")``): the code (16 fp32 values) and the absmax,
      nested: a uint8 per 64 values, an fp32 per 256 of those, the nested 256-entry fp32 code
      and the fp32 offset scalar; fp32 (``_dequantize_dq``, 0.9.2 on): an fp32 per 64 values,
      the nested tensors freed.

    Small tensors are counted as the allocator's 512-byte blocks (``ALLOCATOR_BLOCK_BYTES``); the
    packed weight is a slice of its module's large parameter. Llama 3.1 8B's q_proj (16,777,216
    values), nested: 8,388,608 + 262,144 + 4,096 + 1,024 + 512 + 512 = 8,656,896 B."""
    blocks = ceil_div(values, BNB_BLOCK_VALUES)
    state = allocated(16 * 4)  # quant_map: the 16 NF4 levels, fp32
    if absmax == "fp32":
        state += allocated(blocks * 4)
    else:
        state += allocated(blocks)  # uint8 absmax
        state += allocated(ceil_div(blocks, BNB_NESTED_BLOCKS) * 4)  # nested_absmax
        state += allocated(256 * 4) + allocated(4)  # nested_quant_map, offset
    return ceil_div(values, 2) + state


def bnb_layer_bytes(model: ModelSpec, config: EngineConfig) -> list[int]:
    """Each decoder layer's linear weights on one rank under bitsandbytes 4-bit: its attention
    and MLP matrices as ``bnb_matrix_bytes`` holds them, or in the model's dtype where the
    checkpoint skips them (``bnb_skip_attention_layers`` / ``bnb_skip_mlp_layers``). Norms and
    biases are not included (they stay 16-bit with the embedding and LM head)."""
    require_dense(model, "bitsandbytes 4-bit", "quantization")
    attention, mlp = linear_shapes(model, config.tensor_parallel_size)
    sixteen = model_dtype_bytes(config)
    quantized_attention = sum(bnb_matrix_bytes(v, config.bnb_absmax) for v in attention)
    quantized_mlp = sum(bnb_matrix_bytes(v, config.bnb_absmax) for v in mlp)
    skip_attention = set(config.bnb_skip_attention_layers)
    skip_mlp = set(config.bnb_skip_mlp_layers)
    return [
        (sum(attention) * sixteen if i in skip_attention else quantized_attention)
        + (sum(mlp) * sixteen if i in skip_mlp else quantized_mlp)
        for i in range(model.layers)
    ]


def bnb_loaded_bytes(model: ModelSpec, config: EngineConfig) -> int:
    """One rank's weights under bitsandbytes 4-bit: the decoder layers' linear weights
    (``bnb_layer_bytes``) and everything else (embedding, LM head, norms, biases) in the model's
    dtype. vLLM's ``BitsAndBytesConfig.get_quant_method`` quantises ``LinearBase`` layers only:
    ``VocabParallelEmbedding`` and ``ParallelLMHead`` are not linear layers, and Unsloth's
    checkpoints list lm_head among llm_int8_skip_modules as well. ``replicated_params`` are whole
    on every rank."""
    attention, mlp = linear_shapes(model, 1)
    linear = model.layers * (sum(attention) + sum(mlp))
    b, whole = model_dtype_bytes(config), model.replicated_params
    rest = ceil_div((model.total_params - linear - whole) * b, config.tensor_parallel_size)
    return sum(bnb_layer_bytes(model, config)) + rest + whole * b


_BNB_SKIP = re.compile(r"^(?:model\.)?layers\.(\d+)\.(self_attn|mlp)$")


def bnb_skipped_layers(
    skip_modules: list[str], layers: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(attention layers, MLP layers) a checkpoint's llm_int8_skip_modules keeps 16-bit. vLLM's
    ``BitsAndBytesConfig.get_quant_method`` gives a linear layer ``UnquantizedLinearMethod`` when
    ``is_layer_skipped_bnb`` matches its prefix (a skip entry equal to one of the prefix's
    leading paths, "model.layers.0.self_attn" for "model.layers.0.self_attn.qkv_proj"). Entries
    naming one projection of a fused module ("model.layers.0.self_attn.q_proj") match no vLLM
    prefix (qkv_proj is one module) and Unsloth only writes them beside their parent
    (``vllm_dynamic_quant_supported``); "lm_head" and the vision entries are not decoder linear
    layers. Both are ignored."""
    attention: set[int] = set()
    mlp: set[int] = set()
    for entry in skip_modules:
        m = _BNB_SKIP.match(entry.strip())
        if not m:
            continue
        index = int(m[1])
        require(0 <= index < layers, "llm_int8_skip_modules", f"{entry}: no such layer")
        (attention if m[2] == "self_attn" else mlp).add(index)
    return tuple(sorted(attention)), tuple(sorted(mlp))


UNSLOTH_NESTED_ABSMAX_FROM: Release = (2025, 8, 4)
"""The first Unsloth release known to run with the patch that keeps the nested scales: its
published wheel requires unsloth_zoo >= 2025.8.3, and every unsloth_zoo from 2025.7.5 on replaces
vLLM's ``BitsAndBytesModelLoader._dequantize_dq`` (and the module-level ``dequantize_dq``) by a
function that returns the quant states unchanged (``unsloth_zoo/vllm_utils.py``: "vLLM
dequantizes the Double quant scalars on the fly / We disable this"); 2025.7.4 and earlier lack it.
Which unsloth_zoo the Unsloth releases between those pulled in is not established, so they keep
the vLLM release's own layout."""


def unsloth_keeps_nested_absmax(unsloth_version: str | None) -> bool:
    """Whether an engine Unsloth's fast_inference built keeps bitsandbytes' double-quantised
    block scales (``bnb_absmax`` nested) whatever the vLLM release (UNSLOTH_NESTED_ABSMAX_FROM)."""
    release = release_of(unsloth_version) if unsloth_version else None
    return release is not None and release >= UNSLOTH_NESTED_ABSMAX_FROM
