"""Model specs: architecture fields and their validation."""

import msgspec
import pytest

from service.sizing.errors import SizingError
from service.sizing.models import ModelSpec, validate_model
from tests.unit.sizing.specs import DEEPSEEK_V3, GEMMA_3_27B, GPT_OSS_120B, LLAMA_70B


def test_layer_kinds_resolve_from_the_architecture() -> None:
    assert LLAMA_70B.count_layers("full") == 80
    assert DEEPSEEK_V3.count_layers("mla") == 61
    assert (GPT_OSS_120B.count_layers("full"), GPT_OSS_120B.count_layers("sliding")) == (18, 18)
    assert (GEMMA_3_27B.count_layers("full"), GEMMA_3_27B.count_layers("sliding")) == (10, 52)
    assert LLAMA_70B.resolved_head_dim == 128  # 8192 / 64
    assert LLAMA_70B.resolved_active_params == LLAMA_70B.total_params
    assert DEEPSEEK_V3.is_moe and not LLAMA_70B.is_moe


def test_shipped_shapes_validate() -> None:
    for spec in (LLAMA_70B, DEEPSEEK_V3, GPT_OSS_120B, GEMMA_3_27B):
        assert validate_model(spec) is spec


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"total_params": -1}, "model_spec.total_params"),
        ({"attention_heads": 0}, "model_spec.attention_heads"),
        ({"kv_heads": 0}, "model_spec.kv_heads"),
        ({"kv_heads": 7}, "model_spec.kv_heads"),
        ({"kv_heads": 128}, "model_spec.kv_heads"),
        ({"layers": 0}, "model_spec.layers"),
        ({"hidden_size": 8100}, "model_spec.attention_heads"),
        ({"active_params": 10**12}, "model_spec.active_params"),
        ({"experts": 1, "experts_per_token": 1}, "model_spec.experts"),
        ({"layer_types": ("full",) * 3}, "model_spec.layer_types"),
        ({"layer_types": ("sliding",) * 80}, "model_spec.sliding_window_tokens"),
        ({"sliding_window_tokens": 200_000}, "model_spec.sliding_window_tokens"),
        ({"slug": " "}, "model_spec.slug"),
        ({"max_context_tokens": 0}, "model_spec.max_context_tokens"),
        ({"kv_lora_rank": 512, "layer_types": ("full",) * 80}, "model_spec.layer_types"),
        ({"rope_cache_rows": (0,)}, "model_spec.rope_cache_rows"),
        ({"rope_cache_rows": (4096,) * 9}, "model_spec.rope_cache_rows"),
        # Beyond the catalogue's bounds (an inline spec of 10^8 layers kept a worker busy for
        # four minutes): 4,096 layers, widths of 2^20, 2^30 tokens, 2^53 parameters.
        ({"layers": 4097}, "model_spec.layers"),
        ({"hidden_size": 2**20 + 1}, "model_spec.hidden_size"),
        ({"intermediate_size": 2**20 + 1}, "model_spec.intermediate_size"),
        ({"max_context_tokens": 2**30 + 1}, "model_spec.max_context_tokens"),
        ({"vocab_size": 2**31}, "model_spec.vocab_size"),
        ({"total_params": 2**53 + 1}, "model_spec.total_params"),
    ],
)
def test_bad_architecture_raises_one_error_naming_the_field(
    change: dict[str, object], field: str
) -> None:
    with pytest.raises(SizingError) as info:
        validate_model(msgspec.structs.replace(LLAMA_70B, **change))
    assert info.value.field == field


def test_the_largest_allowed_architecture_validates() -> None:
    # Each bound is inclusive: Llama 3.1 70B stretched to 4,096 layers and 2^30 tokens of
    # context is still a valid (if imaginary) architecture.
    big = msgspec.structs.replace(LLAMA_70B, layers=4096, max_context_tokens=2**30)
    assert validate_model(big) is big


def test_linear_layers_need_their_sizes_and_sizes_need_linear_layers() -> None:
    base = ModelSpec(
        slug="hybrid",
        total_params=1_000_000,
        layers=4,
        hidden_size=64,
        attention_heads=4,
        kv_heads=4,
        max_context_tokens=4096,
        layer_types=("linear", "linear", "linear", "full"),
    )
    with pytest.raises(SizingError) as err:
        validate_model(base)
    assert err.value.field == "model_spec.linear_key_heads"
    full = msgspec.structs.replace(base, layer_types=(), linear_key_heads=4)
    with pytest.raises(SizingError) as err:
        validate_model(full)
    assert err.value.field == "model_spec.layer_types"
    only_linear = msgspec.structs.replace(
        base,
        layer_types=("linear",) * 4,
        linear_key_heads=2,
        linear_value_heads=4,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        linear_conv_kernel=4,
    )
    with pytest.raises(SizingError) as err:
        validate_model(only_linear)
    assert err.value.field == "model_spec.layer_types"
