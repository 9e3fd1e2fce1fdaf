"""vLLM's KV cache as the engine lays it out (``vllm/v1/kv_cache_interface.py`` and
``vllm/v1/core/kv_cache_utils.py``, as read in docs/reference/models.md): a page holds
``block_size`` tokens of one layer, by spec: full attention (``FullAttentionSpec``), sliding
window (``SlidingWindowSpec``: the window and the tokens in flight), MLA (``MLAAttentionSpec``:
one latent per token, whole on every TP rank) and linear attention (``MambaSpec``: one page of
recurrent state per request, the attention block raised until a page holds it). Full and
sliding layers are grouped in equal-size groups (the hybrid manager), each KV tensor shared by
one layer of every group, so a block costs group size x page."""

from collections import Counter

import msgspec

from service.sizing.errors import require
from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.kv import kv_shape, linear_state_values
from service.sizing.models import LayerType, ModelSpec
from service.sizing.units import ceil_div
from service.sizing.vllm.config import EngineConfig, model_dtype_bytes
from service.sizing.vllm.defaults import EngineDefaults
from service.sizing.vllm.releases import release_rules
from service.sizing.vllm.shapes import round_up

PRE_MLA_HEAD_SIZE = 256
"""The padded head size of DeepSeek attention before the MLA latent cache (0.5-0.7.0)."""


def layer_bytes_per_token(
    model: ModelSpec, kind: LayerType, tp: int, kv_format: NumberFormat, config: EngineConfig
) -> int:
    """One layer's KV bytes per token on one rank (the page is block_size of these). The V0
    cache engine aligns MLA entries to 256 bytes (``align_to_256bytes``): DeepSeek's 576 values
    x 2 B = 1,152 B take 1,280 (the 8x H200 DeepSeek-R1 log: 18,418 blocks, 0.9x the unaligned
    count). Before 0.7.1 an MLA layer cached K and V of 256 values for each of its heads (the
    H100 DeepSeek-V2-Lite-Chat log of vLLM PR #10927: 35.42 GiB for 85,968 tokens, 442,396 B a
    token = 27 layers x 2 x 16 heads x 256 x 2 B)."""
    if kind == "mla" and not config.mla_latent_cache:
        values = 2 * ceil_div(model.attention_heads, tp) * PRE_MLA_HEAD_SIZE
        num, den = kv_format.bits_ratio
        return ceil_div(values * num, 8 * den)
    shape = kv_shape(model, kv_format, tp, (kind,))
    per_token = shape.growth_bytes_per_token + shape.sliding_bytes_per_token
    v0 = release_rules(config.era, config.release).engine == "V0"
    return round_up(per_token, 256) if v0 and kind == "mla" else per_token


KERNEL_BLOCK_ALIGNMENT_TOKENS = 16
"""Attention backends take block sizes in multiples of 16 tokens (vLLM's
``HybridAttentionMambaModelConfig``: "some attention backends (e.g. FA) only support setting
block size to multiple of 16")."""


XPU_MIN_BLOCK_TOKENS = 64
"""vLLM's attention backends on XPU prefer blocks of at least 64 tokens
(``get_preferred_block_size``: ``max(default_block_size, 64)`` when ``is_xpu()``)."""


def hybrid_block_size(
    model: ModelSpec, per_token: dict[LayerType, int], tp: int, config: EngineConfig
) -> tuple[int, int]:
    """(attention block size, linear state bytes) for a model with linear-attention layers
    (vLLM 0.10.2 ``HybridAttentionMambaModelConfig.verify_and_update_config``): the block grows
    to 16 x ceil(state / (16 x one token's attention page)) tokens unless the flag asks for
    more, and the state's page is padded to the attention page ("Setting attention block size
    to 544 tokens ... Padding mamba page size by 1.49%" for Qwen3-Next at TP 2: a 548,864 B
    state against 1,024 B a token). The state is in the model's dtype, never the KV cache's."""
    require(
        release_rules(config.era, config.release).linear_attention,
        "vllm_version",
        "linear-attention (Gated DeltaNet) models are served from vLLM 0.10.2 on",
    )
    state = linear_state_values(model, tp) * model_dtype_bytes(config)
    attention_token = max(v for k, v in per_token.items() if k != "linear")
    align = KERNEL_BLOCK_ALIGNMENT_TOKENS
    needed = align * ceil_div(state, align * attention_token)
    return max(config.block_size, needed), state


class KvCacheGroups(msgspec.Struct, frozen=True):
    """How many layers a group holds and how many groups of each spec there are."""

    group_size: int
    full_groups: int
    sliding_groups: int
    linear_groups: int = 0


def kv_groups(layers: tuple[LayerType, ...]) -> KvCacheGroups:
    """vLLM's hybrid grouping (``_get_kv_cache_config_uniform_page_size``): layers grouped by
    spec type (full attention and MLA; sliding window; linear attention's mamba state), in
    groups of equal size, the smallest type count (or the largest one when it is under 1.5x
    the smallest); a single type is one group of every layer."""
    full = layers.count("full") + layers.count("mla")
    sliding = layers.count("sliding")
    linear = len(layers) - full - sliding
    present = [n for n in (full, sliding, linear) if n]
    if len(present) == 1:
        return KvCacheGroups(len(layers), int(full > 0), int(sliding > 0), int(linear > 0))
    small, large = min(present), max(present)
    size = large if large < 1.5 * small else small
    return KvCacheGroups(
        size, ceil_div(full, size), ceil_div(sliding, size), ceil_div(linear, size)
    )


def in_flight_batches(config: EngineConfig, on_v2: bool) -> int:
    """Scheduling steps whose tokens a sliding-window layer must still hold (the window's
    reserve is window - 1 + this x max_num_batched_tokens). From vLLM PR #47728 ("Free
    out-of-window blocks on the processed-token basis under async scheduling", in 0.27.1 and
    0.29) ``max_in_flight_tokens`` counts every batch in flight: two under async scheduling, the
    default (pipeline stages + 1 on Model Runner V2). ``VllmConfig.max_in_flight_tokens`` is
    first in the 0.26.0 wheel; 0.23.0-0.25.0 reserve window - 1 + max_num_batched_tokens (the
    0.24 H200 Gemma 3 text run: 531,880 tokens, 1,089 blocks for each sliding group). The 0.28
    gpt-oss-20b log on XPU needs it (131,815 tokens: 67 blocks for the 128-token window with
    2 x 2,048 in flight). Earlier releases: one step."""
    if release_rules(config.era, config.release).sliding_in_flight == "one-step":
        return 1
    if on_v2:
        return config.pipeline_parallel_size + 1
    return max(2, config.pipeline_parallel_size)


class KvLayout(msgspec.Struct, frozen=True, kw_only=True):
    """The cache's pages on one rank, for every stage alike."""

    bytes_per_token: dict[LayerType, int]
    """One layer's KV bytes a token, by kind (``layer_bytes_per_token``)."""
    block_size: int
    """Tokens a block holds: the flag, or what XPU or a linear-attention model raises it to."""
    state_page: int
    """A linear-attention layer's recurrent state, padded to the page; 0 without such layers."""
    full_blocks: int
    """Blocks a request of max_model_len takes on a full-attention (or MLA) layer."""
    sliding_blocks: int
    """... on a sliding-window layer: the window and the batches in flight, and one block."""

    def blocks_of(self, kind: LayerType) -> int:
        """Blocks one request takes on a layer of ``kind`` (a linear layer: its one state)."""
        if kind in ("full", "mla"):
            return self.full_blocks
        return self.sliding_blocks if kind == "sliding" else 1

    def page_bytes(self, layers: tuple[LayerType, ...]) -> int:
        """One block of one KV tensor on a stage of ``layers``. With linear layers every page is
        the model's attention page (their states are padded to it), even on a stage of linear
        layers only."""
        kinds = set(self.bytes_per_token) if self.state_page else set(layers)
        return self.block_size * max(self.bytes_per_token[k] for k in kinds)

    def request_bytes(self, layers: tuple[LayerType, ...]) -> int:
        """The KV bytes one request of max_model_len needs on a stage of ``layers``."""
        counts = Counter(layers)  # the same bytes for every layer of a kind
        return sum(
            count
            * (
                self.page_bytes(layers)
                if kind == "linear"
                else self.block_size * self.blocks_of(kind) * self.bytes_per_token[kind]
            )
            for kind, count in counts.items()
        )


def kv_format_of(config: EngineConfig) -> NumberFormat:
    """The cache's values: FP8 with kv_cache_dtype fp8, else the model's dtype."""
    if config.kv_cache_dtype == "fp8":
        return FORMATS["fp8"]
    return FORMATS["fp32" if config.dtype == "float32" else "bf16"]


def kv_layout(
    model: ModelSpec, config: EngineConfig, defaults: EngineDefaults, on_v2: bool
) -> KvLayout:
    """The pages and the blocks a request of max_model_len takes per layer: every token on a
    full-attention (or MLA) layer, the window plus the tokens in flight (and a block) on a
    sliding one, one block (its state) on a linear one."""
    tp, mml = config.tensor_parallel_size, defaults.max_model_len
    kv_format = kv_format_of(config)
    per_token = {
        kind: layer_bytes_per_token(model, kind, tp, kv_format, config)
        for kind in set(model.resolved_layer_types)
    }
    bs, state_page = config.block_size, 0
    if config.device == "xpu":
        bs = max(bs, XPU_MIN_BLOCK_TOKENS)
    if "linear" in per_token:
        bs, state_page = hybrid_block_size(model, per_token, tp, config)
    window = model.sliding_window_tokens
    in_flight = defaults.max_num_batched_tokens * in_flight_batches(config, on_v2)
    return KvLayout(
        bytes_per_token=per_token,
        block_size=bs,
        state_page=state_page,
        full_blocks=ceil_div(mml, bs),
        sliding_blocks=ceil_div(min(window - 1 + in_flight, mml), bs) + 1 if window else 0,
    )
