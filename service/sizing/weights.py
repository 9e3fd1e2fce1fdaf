"""Weights: parameters times bytes per parameter.

Seed rule (part 7, "How big is a model in memory?"): the size of the weights is the number of
parameters times the bytes used to store each one. Use total parameters, even for MoE models
(step 1 of the six-step method); active parameters only set the bytes read per token.
"""

from typing import Literal

import msgspec

from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.models import ModelSpec
from service.sizing.params import (
    Architecture,
    LinearKind,
    LinearWeight,
    count_params,
    decoder_layer_params,
    linear_weights,
    mtp_extra_params,
    mtp_layer_architecture,
)


def weight_bytes(params: int, fmt: NumberFormat) -> int:
    """Bytes to hold ``params`` parameters in ``fmt`` (scales included), rounded up."""
    return fmt.bytes_for(params)


def model_weight_bytes(model: ModelSpec, fmt: NumberFormat) -> int:
    """Bytes the whole model occupies: TOTAL parameters, every expert included; a quantised
    checkpoint imported from its config is its real stored size in its own format."""
    if model.checkpoint_bytes and fmt.slug == model.checkpoint_format:
        return model.checkpoint_bytes
    return weight_bytes(model.total_params, fmt)


def decoder_linear_params(model: ModelSpec) -> int:
    """Values of the decoder layers' linear weight matrices, from the spec's shapes: attention
    (q, k, v, o; MLA's q_a/q_b, kv_a_proj_with_mqa, kv_b and o; Gated DeltaNet's in_proj_qkvz,
    in_proj_ba and out_proj), the dense FFNs (gate, up, down) and, for MoE, every routed expert
    and the router. What a spec does not describe (shared experts, Qwen3-Next's output gate)
    is left out, so it counts with the 16-bit rest: an overestimate, never an underestimate.
    MLA's no-rope query/key width is taken as head_dim (DeepSeek-V3: 128, its v_head_dim)."""
    h, head, heads = model.hidden_size, model.resolved_head_dim, model.attention_heads
    q, kv = heads * head, model.kv_heads * head
    gqa_layers = model.count_layers("full") + model.count_layers("sliding")
    total = gqa_layers * (2 * h * q + 2 * h * kv)
    mla_layers = model.count_layers("mla")
    if mla_layers:
        qk_head = head + model.qk_rope_head_dim
        rank = model.q_lora_rank
        query = h * rank + rank * heads * qk_head if rank else h * heads * qk_head
        latent = h * (model.kv_lora_rank + model.qk_rope_head_dim)
        total += mla_layers * (query + latent + model.kv_lora_rank * heads * 2 * head + q * h)
    linear_layers = model.count_layers("linear")
    if linear_layers:
        key = model.linear_key_heads * model.linear_key_head_dim
        value = model.linear_value_heads * model.linear_value_head_dim
        qkvz_ba = h * (2 * key + 2 * value) + h * 2 * model.linear_value_heads
        total += linear_layers * (qkvz_ba + value * h)
    if model.is_moe:
        moe_layers = model.layers - model.dense_layers
        total += model.dense_layers * 3 * h * model.dense_intermediate_size
        total += moe_layers * (model.experts * 3 * h * model.intermediate_size + model.experts * h)
    else:
        total += model.layers * 3 * h * model.intermediate_size
    return min(total, model.total_params)


def qlora_base_bytes(model: ModelSpec, fmt: NumberFormat) -> int:
    """QLoRA's frozen base: the decoder's linear layers in ``fmt`` (NF4), the rest 16-bit.

    transformers' bitsandbytes integration (``replace_with_bnb_linear``) swaps only
    ``nn.Linear`` modules for ``Linear4bit`` and skips ``modules_to_not_convert``, which
    ``get_keys_to_not_convert`` fills with the output embedding (``lm_head``); the input
    embedding is an ``nn.Embedding`` and the norms are not linear, so embedding, head, norms
    and biases stay in the load dtype (bf16). peft's ``prepare_model_for_kbit_training`` then
    upcasts every non-``Params4bit`` 16-bit parameter to fp32; the QLoRA authors' script
    (artidoro/qlora ``qlora.py``) casts ``embed_tokens`` and ``lm_head`` back to bf16 and keeps
    the norms fp32 (hidden-sized vectors, under 0.01% of a model), which is counted 16-bit here.
    """
    linear = decoder_linear_params(model)
    return fmt.bytes_for(linear) + (model.total_params - linear) * 2


def active_weight_bytes(model: ModelSpec, fmt: NumberFormat) -> int:
    """Bytes one token reads (part 20's speed check): active parameters for MoE, all for dense."""
    return weight_bytes(model.resolved_active_params, fmt)


QuantMethod = Literal["none", "fp8", "mxfp4", "int4"]


class QuantScheme(msgspec.Struct, frozen=True, kw_only=True):
    """How a checkpoint stores its weight matrices (a Hugging Face ``quantization_config``)."""

    method: QuantMethod = "none"
    quantized: frozenset[LinearKind] = frozenset()
    """Which kinds of decoder weight matrices are quantised; everything else (embeddings, LM
    head, norms, biases, and the kinds not listed) stays at ``unquantized_bytes_per_param``."""
    value_format: NumberFormat | None = None
    """Per-value cost with in-row group scales (MXFP4, GPTQ/AWQ int4)."""
    block: tuple[int, int] | None = None
    """2-D block scaling (DeepSeek FP8: one FP32 scale per 128 x 128 block)."""
    block_scale_bytes: int = 4
    unquantized_bytes_per_param: int = 2


class CheckpointBytes(msgspec.Struct, frozen=True, kw_only=True):
    method: QuantMethod
    total_bytes: int
    quantized_params: int
    quantized_bytes: int
    """Quantised values and their scales."""
    unquantized_params: int
    unquantized_bytes: int
    mtp_bytes: int
    """Part of ``total_bytes`` that is the multi-token-prediction layers (not served)."""


def _quantized_bytes(w: LinearWeight, scheme: QuantScheme) -> int:
    if scheme.block is not None:
        rows, cols = scheme.block
        fmt = scheme.value_format or FORMATS["fp8"]
        scales = -(-w.out_features // rows) * -(-w.in_features // cols) * w.count
        return fmt.bytes_for(w.params) + scales * scheme.block_scale_bytes
    assert scheme.value_format is not None
    return scheme.value_format.bytes_for(w.params)


def _stored(arch: Architecture, scheme: QuantScheme, total_params: int) -> tuple[int, int, int]:
    quantized = [w for w in linear_weights(arch) if w.kind in scheme.quantized]
    q_params = sum(w.params for w in quantized)
    q_bytes = sum(_quantized_bytes(w, scheme) for w in quantized)
    rest = total_params - q_params
    return q_params, q_bytes, rest


def checkpoint_bytes(
    arch: Architecture, scheme: QuantScheme, mtp_layers: int = 0
) -> CheckpointBytes:
    """Bytes of the stored weights: quantised matrices with their scales, the rest at 16 bits.

    With ``mtp_layers`` (DeepSeek), the checkpoint also holds the MTP layers and its own copies
    of the embedding and LM head; ``mtp_bytes`` says how much of the total that is.
    """
    total = count_params(arch).total
    q_params, q_bytes, rest = _stored(arch, scheme, total)
    mtp = 0
    if mtp_layers:
        layer = mtp_layer_architecture(arch)
        lq_params, lq_bytes, _ = _stored(layer, scheme, 0)
        counted = count_params(layer)
        layer_params = decoder_layer_params(layer)
        copies = counted.embedding + (counted.lm_head or counted.embedding)
        unquantized = layer_params - lq_params + mtp_extra_params(arch) + copies
        mtp = mtp_layers * (lq_bytes + unquantized * scheme.unquantized_bytes_per_param)
        q_params += mtp_layers * lq_params
        rest += mtp_layers * unquantized
        q_bytes += mtp_layers * lq_bytes
    rest_bytes = rest * scheme.unquantized_bytes_per_param
    return CheckpointBytes(
        method=scheme.method,
        total_bytes=q_bytes + rest_bytes,
        quantized_params=q_params,
        quantized_bytes=q_bytes,
        unquantized_params=rest,
        unquantized_bytes=rest_bytes,
        mtp_bytes=mtp,
    )
