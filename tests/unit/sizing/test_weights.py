"""Weights = parameters x bytes per parameter, by TOTAL parameters (part 7, step 1)."""

import pytest

from service.sizing.formats import FORMATS
from service.sizing.weights import active_weight_bytes, model_weight_bytes, weight_bytes
from tests.unit.sizing.specs import DEEPSEEK_V3, LLAMA_70B_SEED

GB = 10**9


def test_70b_weights_in_bf16_fp8_and_4bit() -> None:
    # "in BF16, 70.6 x 2 = 141.2 GB. In FP8, 70.6 x 1 = 70.6 GB. In 4-bit,
    # 70.6 x 0.5625 ~ 39.7 GB."
    assert model_weight_bytes(LLAMA_70B_SEED, FORMATS["bf16"]) == 141_200_000_000
    assert model_weight_bytes(LLAMA_70B_SEED, FORMATS["fp8"]) == 70_600_000_000
    four_bit = model_weight_bytes(LLAMA_70B_SEED, FORMATS["int4"])
    assert four_bit == 39_712_500_000  # 70.6e9 x 9/16
    assert round(four_bit / GB, 1) == 39.7


@pytest.mark.parametrize(
    ("billions", "gb"),
    # Second article, "In 16-bit ... each weight = 2 Bytes": 7B = 14 GB, 13B = 26 GB,
    # 70B = 140 GB; its table: Llama-3 8B 16.0 GB, Mixtral 8x7B (47B) 94.0 GB.
    [(7, 14), (13, 26), (70, 140), (8, 16), (47, 94)],
)
def test_second_article_16_bit_weights(billions: int, gb: int) -> None:
    assert weight_bytes(billions * GB, FORMATS["fp16"]) == gb * GB


def test_second_article_fp8_70b_is_70_gb() -> None:
    # "FP8 ... 8 bits = 1.0 Byte / param, 70B Model Size: 70 GB".
    assert weight_bytes(70 * GB, FORMATS["fp8"]) == 70 * GB


def test_moe_is_sized_by_total_not_active_parameters() -> None:
    # "DeepSeek-V3 in FP8 needs 671 GB for weights alone, more than the 640 GB of a full
    # 8 x H100 server"; it "computes like a 37B model and stores like a 671B one".
    stored = model_weight_bytes(DEEPSEEK_V3, FORMATS["fp8"])
    assert stored == 671_026_404_352
    assert stored > 8 * 80 * GB
    assert active_weight_bytes(DEEPSEEK_V3, FORMATS["fp8"]) == 36_625_603_584
