"""KV cache (part 7, "How much does the KV cache add?"; reference/models.md for MLA and
sliding windows)."""

from service.sizing.formats import FORMATS
from service.sizing.kv import (
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_shape,
    linear_state_values,
    naive_kv_bytes_per_token,
)
from service.sizing.units import KiB
from tests.unit.sizing.specs import (
    DEEPSEEK_V3,
    GEMMA_3_27B,
    GPT_OSS_120B,
    LLAMA_8B,
    LLAMA_70B,
    QWEN3_NEXT_80B,
)

BF16, FP8 = FORMATS["bf16"], FORMATS["fp8"]
GB = 10**9


def test_llama_8b_is_128_kib_per_token() -> None:
    # "2 x 32 x 8 x 128 x 2 bytes = 131,072 bytes, or 128 KiB."
    assert kv_bytes_per_token(LLAMA_8B, BF16) == 131_072 == 128 * KiB


def test_llama_70b_is_320_kib_per_token() -> None:
    # "Llama 3.1 70B, with 80 layers, needs 320 KiB per token": 2 x 80 x 8 x 128 x 2.
    assert kv_bytes_per_token(LLAMA_70B, BF16) == 327_680 == 320 * KiB


def test_32_users_of_4000_tokens_on_70b_is_about_42_gb() -> None:
    # "32 x 4,000 x 327,680 bytes ~ 42 GB".
    total = kv_cache_bytes(LLAMA_70B, BF16, concurrency=32, context_tokens=4000)
    assert total == 41_943_040_000
    assert round(total / GB) == 42


def test_six_step_kv_is_107_4_gb_in_16_bit_and_53_7_in_fp8() -> None:
    # Step 2: "40 x 8,192 tokens x 327,680 bytes = 107.4 GB in 16-bit, or 53.7 GB in FP8."
    assert kv_cache_bytes(LLAMA_70B, BF16, 40, 8192) == 107_374_182_400
    assert kv_cache_bytes(LLAMA_70B, FP8, 40, 8192) == 53_687_091_200


def test_one_128k_request_on_8b_needs_about_17_gb() -> None:
    # "one such request on the 8B model needs about 17 GB of KV cache": 131,072 x 131,072.
    total = kv_cache_bytes(LLAMA_8B, BF16, 1, 131_072)
    assert total == 17_179_869_184
    assert round(total / GB) == 17


def test_deepseek_v3_mla_caches_one_latent_per_layer_with_no_factor_two() -> None:
    # models.md: 61 x (kv_lora_rank 512 + rope 64) x 2 B = 70,272 B/token; FP8 halves it.
    assert kv_bytes_per_token(DEEPSEEK_V3, BF16) == 70_272
    assert kv_bytes_per_token(DEEPSEEK_V3, FP8) == 35_136
    # The naive GQA formula (kv 128 x head_dim 128) would be 61 x 2 x 128 x 128 x 2.
    assert naive_kv_bytes_per_token(DEEPSEEK_V3, BF16) == 3_997_696


def test_mla_latent_is_replicated_on_every_tensor_parallel_rank() -> None:
    # The latent is not split by heads: each of 8 TP ranks holds all 70,272 B/token.
    assert kv_shape(DEEPSEEK_V3, BF16, tensor_parallel=8).growth_bytes_per_token == 70_272


def test_gpt_oss_120b_grows_only_in_its_full_attention_layers() -> None:
    # models.md: 18 full layers x 2 x 8 x 64 x 2 B = 36,864 B/token growth;
    # the 18 sliding layers cost the same per token but only up to the 128-token window.
    shape = kv_shape(GPT_OSS_120B, BF16)
    assert shape.growth_bytes_per_token == 36_864
    assert shape.sliding_bytes_per_token == 36_864
    assert shape.window_tokens == 128
    assert shape.fixed_bytes_per_sequence(8192) == 36_864 * 128 == 4_718_592
    # Below the window a sliding layer holds only the context: min(context, window).
    assert shape.fixed_bytes_per_sequence(100) == 36_864 * 100
    assert shape.bytes_per_sequence(8192) == 36_864 * 8192 + 4_718_592
    assert naive_kv_bytes_per_token(GPT_OSS_120B, BF16) == 73_728


def test_gemma_3_grows_in_its_10_full_layers() -> None:
    # models.md: 10 full layers x 2 x 16 x 128 x 2 B = 81,920 B/token; naive 507,904.
    shape = kv_shape(GEMMA_3_27B, BF16)
    assert shape.growth_bytes_per_token == 81_920
    assert shape.sliding_bytes_per_token == 52 * 2 * 16 * 128 * 2
    assert shape.fixed_bytes_per_sequence(8192) == 52 * 8192 * 1024
    assert naive_kv_bytes_per_token(GEMMA_3_27B, BF16) == 507_904


def test_tensor_parallel_divides_kv_heads_until_it_must_replicate_them() -> None:
    # TP 8 on 8 KV heads: one head per GPU, 80 x 2 x 1 x 128 x 2 = 40,960 B/token each.
    assert kv_shape(LLAMA_70B, BF16, tensor_parallel=8).growth_bytes_per_token == 40_960
    # TP 16: max(1, 8 // 16) = 1 head per GPU, each head held twice: 16 x 40,960 in total,
    # twice the 327,680 of the unsplit model.
    per_gpu = kv_shape(LLAMA_70B, BF16, tensor_parallel=16).growth_bytes_per_token
    assert per_gpu == 40_960
    assert per_gpu * 16 == 2 * 327_680


def test_a_linear_layer_holds_one_state_per_sequence_not_per_token() -> None:
    # Qwen3-Next, whole model in 16-bit: 12 full-attention layers grow 2 x 2 KV heads x 256 x
    # 2 B = 2,048 B a token each (24,576 B); each of the 36 Gated DeltaNet layers holds one
    # state of 3 x 8,192 + 32 x 128 x 128 = 548,864 values x 2 B = 1,097,728 B whatever the
    # length: 39,518,208 B a conversation. At TP 2 both halve (heads are split).
    shape = kv_shape(QWEN3_NEXT_80B, FORMATS["bf16"])
    assert shape.growth_bytes_per_token == 24_576
    assert shape.state_bytes_per_sequence == 39_518_208
    assert shape.bytes_per_sequence(1) == 24_576 + 39_518_208
    assert shape.bytes_per_sequence(100_000) == 2_457_600_000 + 39_518_208
    assert linear_state_values(QWEN3_NEXT_80B, 2) == 274_432
    assert kv_shape(QWEN3_NEXT_80B, FORMATS["bf16"], 2).state_bytes_per_sequence == 19_759_104
