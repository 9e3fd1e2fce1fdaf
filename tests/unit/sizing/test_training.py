"""Training and fine-tuning (part 7, "Why does training need so much more memory?"; the second
article's "Training Multiplier")."""

import pytest

from service.sizing.errors import SizingError
from service.sizing.models import ModelSpec
from service.sizing.training import (
    RECIPES,
    adapter_training_memory,
    full_training_memory,
    get_recipe,
    lora_adapter_params,
    training_plan,
)
from tests.unit.sizing.specs import H100, L40S, LLAMA_8B, LLAMA_70B_SEED, seed_workload

GB = 10**9
ADAM = RECIPES["mixed-precision-adam"]


def test_full_training_of_70b_is_1130_gb_plus_20_percent_about_1_36_tb() -> None:
    # "full training of Llama 3.1 70B is 70.6 x 16 = 1,130 GB, plus 20% ~ 1.36 TB".
    m = full_training_memory(LLAMA_70B_SEED, ADAM, gpu_count=1, zero_stage=0)
    assert ADAM.bytes_per_param == 16
    assert m.model_state_bytes == 1_129_600_000_000
    assert m.total_bytes == 1_355_520_000_000
    assert round(m.total_bytes / 10**12, 2) == 1.36
    # "nearly ten times the 141 GB needed to run it".
    assert round(m.total_bytes / 141.2e9) == 10


def test_second_article_7b_training_breakdown_is_98_gb() -> None:
    # "Adam States (56 GB), Gradients (28 GB), Weights (14 GB), ~98 GB Total!"
    seven_b = ModelSpec(
        slug="7b",
        total_params=7 * GB,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=32,
        max_context_tokens=4096,
    )
    recipe = get_recipe("fp32-gradients-adam")
    m = full_training_memory(seven_b, recipe, zero_stage=0, activation_fraction=0.0)
    assert (m.weights_bytes_per_gpu, m.gradients_bytes_per_gpu, m.optimizer_bytes_per_gpu) == (
        14 * GB,
        28 * GB,
        56 * GB,
    )
    assert m.total_bytes == 98 * GB


def test_zero_stages_shard_optimizer_then_gradients_then_weights() -> None:
    # 70.6e9 params on 8 GPUs: weights 141.2 GB, gradients 141.2 GB, optimizer 847.2 GB.
    def parts(stage: int) -> tuple[int, int, int]:
        m = full_training_memory(LLAMA_70B_SEED, ADAM, 8, stage, 0.0)  # type: ignore[arg-type]
        return m.weights_bytes_per_gpu, m.gradients_bytes_per_gpu, m.optimizer_bytes_per_gpu

    assert parts(0) == (141_200_000_000, 141_200_000_000, 847_200_000_000)
    assert parts(1) == (141_200_000_000, 141_200_000_000, 105_900_000_000)
    assert parts(2) == (141_200_000_000, 17_650_000_000, 105_900_000_000)
    assert parts(3) == (17_650_000_000, 17_650_000_000, 105_900_000_000)


def test_fewest_h100s_for_full_70b_training_with_fsdp() -> None:
    # 1,355.52 GB / 68 GB = 19.9 GPUs: 16 is too few, 24 (three servers) holds it.
    # At 24: ceil(141.2e9/24) x 2 + 847.2e9/24 = 47,066,666,668 B of states,
    # + 20% (rounded up) = 9,413,333,334 B of activations.
    p = training_plan(LLAMA_70B_SEED, H100, seed_workload(), mode="full")
    assert p.fits and p.gpu_count == 24
    assert p.memory.total_bytes_per_gpu == 47_066_666_668 + 9_413_333_334
    assert p.spare_bytes_per_gpu == 68 * GB - 56_480_000_002


def test_lora_adapter_count_follows_the_projection_shapes() -> None:
    # Rank 16 on q, k, v, o of Llama 70B (hidden 8192, 64 heads, 8 KV heads x 128):
    # q 16 x (8192 + 8192) + k 16 x (8192 + 1024) + v the same + o like q = 819,200 per layer.
    assert lora_adapter_params(LLAMA_70B_SEED, 16, ("q", "k", "v", "o")) == 819_200 * 80
    # MLP: gate and up 16 x (8192 + 28672), down the same: 3 x 589,824 per layer.
    assert lora_adapter_params(LLAMA_70B_SEED, 16, ("gate", "up", "down")) == 3 * 589_824 * 80


def test_lora_keeps_a_frozen_16_bit_base() -> None:
    # 141.2 GB base + 65,536,000 adapter params x (2 + 2 + 12) B = 142,248,576,000 B,
    # + 20% = 170,698,291,200 B.
    m = adapter_training_memory(LLAMA_70B_SEED, "lora", rank=16)
    assert m.trainable_params == 65_536_000
    assert m.model_state_bytes == 142_248_576_000
    assert m.total_bytes == 170_698_291_200


def test_qlora_stores_the_linear_layers_in_nf4_and_the_rest_16_bit() -> None:
    # Seed-shaped Llama 70B: each layer's linear matrices are q 8,192 x 8,192 = 67,108,864,
    # k and v 8,192 x 1,024 = 8,388,608 each, o 67,108,864, gate/up/down 3 x 8,192 x 28,672
    # = 704,643,072: 855,638,016 a layer, x 80 = 68,451,041,280 values in NF4 at 67,616/16,384
    # bits (4 + 8/64 + 32/16,384): 68,451,041,280 / 131,072 x 67,616 = 522,240 x 67,616
    # = 35,311,779,840 B. The rest (embedding, head, norms) 70.6e9 - 68,451,041,280
    # = 2,148,958,720 x 2 B = 4,297,917,440 B. Base 39,609,697,280 B, + adapters
    # 65,536,000 x 16 B = 1,048,576,000 B.
    m = adapter_training_memory(LLAMA_70B_SEED, "qlora", rank=16)
    assert m.model_state_bytes == 39_609_697_280 + 1_048_576_000


def test_qlora_keeps_llama_8b_embeddings_and_head_16_bit() -> None:
    # bitsandbytes swaps nn.Linear for Linear4bit and skips lm_head (transformers'
    # replace_with_bnb_linear / get_keys_to_not_convert); nn.Embedding and the norms stay bf16.
    # Llama 3.1 8B: per layer q 4,096 x 4,096 = 16,777,216, k and v 4,096 x 1,024 = 4,194,304
    # each, o 16,777,216, gate/up/down 3 x 4,096 x 14,336 = 176,160,768: 218,103,808, x 32
    # = 6,979,321,856 values; NF4: 6,979,321,856 / 131,072 = 53,248 x 67,616 = 3,600,416,768 B.
    # 16-bit: embedding 128,256 x 4,096 = 525,336,576, the untied lm_head as many, norms
    # 32 x 2 x 4,096 + 4,096 = 266,240: 1,050,939,392 x 2 = 2,101,878,784 B. Base
    # 5,702,295,552 B (not 8,030,261,248 x 67,616 / 131,072 = 4,142,563,969 B, all in NF4).
    # Adapters, rank 16 on q/k/v/o: 16 x (4,096 + 4,096) x 2 + 16 x (4,096 + 1,024) x 2
    # = 425,984 a layer, x 32 = 13,631,488, held 16-bit: 27,262,976 B.
    m = adapter_training_memory(LLAMA_8B, "qlora", rank=16, activation_fraction=0.0)
    assert m.trainable_params == 13_631_488
    assert m.weights_bytes_per_gpu == 5_702_295_552 + 27_262_976


def test_qlora_fits_a_65b_model_on_one_48_gb_gpu() -> None:
    # QLoRA: "its authors fine-tuned a 65B model on a single 48 GB GPU". LLaMA-65B shape
    # (80 layers, hidden 8192, 64 heads, no GQA), rank 16 on q/k/v/o: 4 x 16 x 16,384 x 80
    # = 83,886,080 adapter params. Linear layers 80 x (4 x 8,192^2 + 3 x 8,192 x 22,016)
    # = 64,760,053,760 values in NF4: / 131,072 = 494,080 x 67,616 = 33,407,713,280 B; the
    # rest (65e9 - 64,760,053,760) x 2 = 479,892,480 B; + 83,886,080 x 16 = 1,342,177,280 B:
    # 35,229,783,040 B, + 20% (7,045,956,608) = 42,275,739,648 B.
    llama_65b = ModelSpec(
        slug="llama-65b",
        total_params=65 * GB,
        layers=80,
        hidden_size=8192,
        intermediate_size=22016,
        attention_heads=64,
        kv_heads=64,
        max_context_tokens=2048,
    )
    whole_card = seed_workload(gpu_memory_utilization=1.0, overhead_bytes_per_gpu=0)
    p = training_plan(llama_65b, L40S, whole_card, mode="qlora")
    assert p.fits and p.gpu_count == 1
    assert p.memory.total_bytes_per_gpu == 42_275_739_648
    # Full LoRA in 16-bit needs several such cards.
    assert training_plan(llama_65b, L40S, whole_card, mode="lora").gpu_count > 1


def test_bad_training_input_names_the_field() -> None:
    with pytest.raises(SizingError) as info:
        get_recipe("sgd")
    assert info.value.field == "recipe"
    with pytest.raises(SizingError) as info:
        lora_adapter_params(LLAMA_70B_SEED, 0, ("q",))
    assert info.value.field == "lora_rank"
    with pytest.raises(SizingError) as info:
        full_training_memory(LLAMA_70B_SEED, ADAM, activation_fraction=-0.1)
    assert info.value.field == "activation_fraction"
