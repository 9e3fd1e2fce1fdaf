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
from tests.unit.sizing.specs import H100, L40S, LLAMA_70B_SEED, seed_workload

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


def test_qlora_stores_the_base_in_nf4() -> None:
    # 70.6e9 x 4.126953125 / 8 = 36,420,361,328.125 -> 36,420,361,329 B of NF4 base,
    # + adapters 65,536,000 x 16 B = 1,048,576,000 B.
    m = adapter_training_memory(LLAMA_70B_SEED, "qlora", rank=16)
    assert m.model_state_bytes == 36_420_361_329 + 1_048_576_000


def test_qlora_fits_a_65b_model_on_one_48_gb_gpu() -> None:
    # QLoRA: "its authors fine-tuned a 65B model on a single 48 GB GPU". LLaMA-65B shape
    # (80 layers, hidden 8192, 64 heads, no GQA), rank 16 on q/k/v/o: 4 x 16 x 16,384 x 80
    # = 83,886,080 adapter params. NF4 base 65e9 x 0.515869140625 = 33,531,494,140.6
    # -> 33,531,494,141 B; + 83,886,080 x 16 = 1,342,177,280 B; + 20% -> 41,848,405,706 B.
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
    assert p.memory.total_bytes_per_gpu == 41_848_405_706
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
