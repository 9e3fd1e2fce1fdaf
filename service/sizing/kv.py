"""The KV cache: what each token of each conversation leaves behind in every layer.

Seed rule (part 7, "How much does the KV cache add?"): per token, 2 (key and value) x layers x
KV heads x head size x bytes; multiply by tokens per conversation and conversations at once.
Architecture refinements (reference/models.md, from vLLM's kv_cache_interface):
- MLA (DeepSeek-V3) caches one latent of kv_lora_rank + qk_rope_head_dim values per token per
  layer, no factor 2, and that latent is replicated on every tensor-parallel rank;
- a sliding-window layer holds at most ``window`` tokens, so past the window it is a fixed
  cost per conversation, not a per-token growth;
- a linear-attention layer (Qwen3-Next's Gated DeltaNet, vLLM's ``MambaSpec``) caches nothing
  per token: each conversation holds one recurrent state, the convolution's last kernel - 1
  inputs and one key_head_dim x value_head_dim matrix per value head, in the model's 16-bit
  dtype (vLLM's mamba cache dtype follows the model, not kv_cache_dtype), split by TP.
"""

import typing
from collections.abc import Sequence

import msgspec

from service.sizing.formats import NumberFormat
from service.sizing.models import LayerType, ModelSpec
from service.sizing.parallel import kv_heads_per_gpu, stage_layers
from service.sizing.units import ceil_div

LAYER_KINDS: tuple[LayerType, ...] = typing.get_args(LayerType)

STATE_VALUE_BYTES = 2
"""Linear-attention states are held in the model's 16-bit dtype."""


class KvShape(msgspec.Struct, frozen=True, kw_only=True):
    """What one GPU (or the whole model when tp=1 and all layers) holds per token."""

    growth_bytes_per_token: int
    """Full-attention and MLA layers: bytes per token of context, with no cap."""
    sliding_bytes_per_token: int
    """Sliding-window layers: bytes per token, only up to ``window_tokens`` tokens."""
    window_tokens: int
    state_bytes_per_sequence: int = 0
    """Linear-attention layers: one recurrent state per conversation, whatever its length."""

    def fixed_bytes_per_sequence(self, context_tokens: int) -> int:
        """The sliding layers' part of one conversation (min(context, window) tokens) and the
        linear layers' states."""
        return (
            self.sliding_bytes_per_token * min(context_tokens, self.window_tokens)
            + self.state_bytes_per_sequence
        )

    def bytes_per_sequence(self, context_tokens: int) -> int:
        """One conversation of ``context_tokens`` tokens."""
        return self.growth_bytes_per_token * context_tokens + self.fixed_bytes_per_sequence(
            context_tokens
        )


def _layer_values_per_token(model: ModelSpec, kind: LayerType, tensor_parallel: int) -> int:
    """Values one layer caches per token on one GPU (times the format's bits gives bits)."""
    if kind == "mla":
        # One latent vector per token per layer, whole on every TP rank: never divided.
        return model.kv_lora_rank + model.qk_rope_head_dim
    if kind == "linear":
        return 0  # a fixed state per sequence instead (linear_state_values)
    return 2 * kv_heads_per_gpu(model, tensor_parallel) * model.resolved_head_dim


def linear_state_values(model: ModelSpec, tensor_parallel: int = 1) -> int:
    """One linear-attention layer's recurrent state for one sequence on one GPU, in values
    (vLLM ``MambaStateShapeCalculator.gated_delta_net_state_shape``): the convolution state,
    (kernel - 1) x its channels / TP, and the temporal state, value heads / TP x key_head_dim x
    value_head_dim. Qwen3-Next at TP 2: 3 x 4,096 + 16 x 128 x 128 = 274,432 values."""
    conv = (model.linear_conv_kernel - 1) * (model.linear_conv_channels // tensor_parallel)
    temporal = (
        model.linear_value_heads
        // tensor_parallel
        * model.linear_key_head_dim
        * model.linear_value_head_dim
    )
    return conv + temporal


def kv_shape(
    model: ModelSpec,
    fmt: NumberFormat,
    tensor_parallel: int = 1,
    layers: Sequence[LayerType] | None = None,
) -> KvShape:
    """Per-token KV bytes on one GPU of a ``tensor_parallel`` group holding ``layers``
    (default: every layer, i.e. the whole model when tp=1)."""
    numerator, denominator = fmt.bits_ratio
    growth = sliding = 0  # values per token, summed over layers
    types = model.resolved_layer_types if layers is None else layers
    linear = 0
    for kind in LAYER_KINDS:
        count = types.count(kind)
        if not count:
            continue
        values = count * _layer_values_per_token(model, kind, tensor_parallel)
        if kind == "sliding":
            sliding += values
        else:
            growth += values
        if kind == "linear":
            linear = count
    return KvShape(
        growth_bytes_per_token=ceil_div(growth * numerator, denominator * 8),
        sliding_bytes_per_token=ceil_div(sliding * numerator, denominator * 8),
        window_tokens=model.sliding_window_tokens,
        state_bytes_per_sequence=linear
        * linear_state_values(model, tensor_parallel)
        * STATE_VALUE_BYTES,
    )


def kv_bytes_per_token(model: ModelSpec, fmt: NumberFormat) -> int:
    """Whole-model growth per token of context (tp=1): 327,680 B for Llama 3.1 70B in 16-bit."""
    return kv_shape(model, fmt).growth_bytes_per_token


def naive_kv_bytes_per_token(model: ModelSpec, fmt: NumberFormat) -> int:
    """The seed's formula applied to every layer as if it were full attention."""
    numerator, denominator = fmt.bits_ratio
    values = 2 * model.kv_heads * model.resolved_head_dim * model.layers
    return ceil_div(values * numerator, denominator * 8)


def kv_cache_bytes(
    model: ModelSpec, fmt: NumberFormat, concurrency: int, context_tokens: int
) -> int:
    """Worst case, every conversation at full length (step 2 of the six-step method)."""
    return concurrency * kv_shape(model, fmt).bytes_per_sequence(context_tokens)


_SHAPES: dict[tuple[int, int, int, int], tuple[ModelSpec, NumberFormat, tuple[KvShape, ...]]] = {}
MAX_SHAPES = 4096


def stage_shapes(
    model: ModelSpec, kv_format: NumberFormat, tensor_parallel: int, pipeline_parallel: int
) -> tuple[KvShape, ...]:
    """kv_shape of each pipeline stage's layers on one GPU of its tensor-parallel group. Pure
    in frozen specs, so remembered by their identity (each kept while listed, so its id is not
    reused): a catalogue model's shapes are counted once, not on every plan and split."""
    key = (id(model), id(kv_format), tensor_parallel, pipeline_parallel)
    hit = _SHAPES.get(key)
    if hit is not None and hit[0] is model and hit[1] is kv_format:
        return hit[2]
    shapes = tuple(
        kv_shape(model, kv_format, tensor_parallel, layers)
        for layers in stage_layers(model, pipeline_parallel)
    )
    if len(_SHAPES) >= MAX_SHAPES:
        _SHAPES.clear()
    _SHAPES[key] = (model, kv_format, shapes)
    return shapes
