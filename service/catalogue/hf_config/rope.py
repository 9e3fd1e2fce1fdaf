"""The rotary embedding as vLLM builds it: the rows of its caches and the rotary width."""

from collections.abc import Mapping

from service.catalogue.hf_config.reader import MAX_DIMENSION, Config
from service.sizing.errors import require


def rope_cache_rows(c: Config, model_type: str) -> tuple[int, ...]:
    """The rows of each rotary cache vLLM builds (``get_rope`` in
    ``vllm/model_executor/layers/rotary_embedding``): max_position_embeddings; linear scaling
    multiplies it by the factor; YaRN builds original_max_position_embeddings x factor. Gemma 3
    has two ropes: the sliding layers' local one (rope_local_base_freq, no scaling) and the
    global layers' (rope_scaling). Multimodal RoPE (a rope_scaling with mrope_section: Qwen2-VL,
    Qwen2.5-VL) is ``MRotaryEmbedding``, whose cache holds 4 x max_position_embeddings rows
    ("we enlarge max_position_embeddings to 4 times" for long videos: vLLM 0.8.2
    ``rotary_embedding.py``, still so in 0.24's ``rotary_embedding/mrope.py``)."""
    max_position = c.integer("max_position_embeddings")
    scaling = c.raw.get("rope_scaling")
    rows = max_position
    if isinstance(scaling, Mapping):
        kind = scaling.get("rope_type") or scaling.get("type")
        if "mrope_section" in scaling and kind in (None, "default", "mrope"):
            return (max_position * 4,)
        factor = scaling.get("factor")
        original = scaling.get("original_max_position_embeddings")
        if isinstance(factor, int | float) and factor > 0:
            # A factor too large to be real (1e308: an infinite row count) is refused here, as
            # validate_model refuses any count over 2**30 (int() of infinity raised a 500).
            require(
                factor <= MAX_DIMENSION,
                c.field("rope_scaling.factor"),
                "is larger than any supported model",
            )
            if kind == "linear":
                rows = int(max_position * factor)
            elif kind == "yarn" and isinstance(original, int) and original > 0:
                rows = int(original * factor)
    if model_type in ("gemma3", "gemma3_text"):
        return (max_position, rows)
    return (rows,)


def rotary_dim(c: Config, head_dim: int) -> int:
    """partial_rotary_factor x head_dim (top level or in rope_parameters); 0: the whole head."""
    factor = c.raw.get("partial_rotary_factor")
    rope = c.raw.get("rope_parameters")
    if factor is None and isinstance(rope, Mapping):
        factor = rope.get("partial_rotary_factor")
    if factor is None:
        return 0
    require(
        isinstance(factor, int | float) and 0 < factor <= 1,
        c.field("partial_rotary_factor"),
        "must be a number in (0, 1]",
    )
    rotary = int(head_dim * factor)
    return 0 if rotary == head_dim else rotary
