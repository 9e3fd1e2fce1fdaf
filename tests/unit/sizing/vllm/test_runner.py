"""Which runner a 0.23-0.28 release picks, and the sliding window's reserve, by release.

The rules are read from vllm/config/vllm.py (``use_v2_model_runner``,
``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``) and vllm/v1/kv_cache_interface.py
(``SlidingWindowSpec.max_memory_usage_bytes``) in the 0.23.0-0.28.0 wheels, and checked on six
start-ups measured on an H200 with 0.24.0 (service/accuracy/cases/vllm_logs/h200-own/).
"""

import msgspec
import pytest

from service.sizing.models import ModelSpec
from service.sizing.vllm.config import EngineConfig, for_release
from service.sizing.vllm.predict import predict_vllm
from service.sizing.vllm.releases import release_of, release_rules
from service.sizing.vllm.runner import runs_on_model_runner_v2
from service.verify.startup_log import parse_startup_log
from tests.unit.sizing.specs import (
    DEEPSEEK_V3,
    GEMMA_3_27B,
    H200,
    LLAMA_8B,
    QWEN3_NEXT_80B,
    QWEN25_7B,
)


def _at(version: str) -> EngineConfig:
    return EngineConfig(era="v2-runner", release=release_of(version))


def _named(model: ModelSpec, architecture: str) -> ModelSpec:
    return msgspec.structs.replace(model, architecture=architecture)


DEEPSEEK_V2 = _named(DEEPSEEK_V3, "DeepseekV2ForCausalLM")  # an MLA MoE of the listed class
QWEN2 = _named(QWEN25_7B, "Qwen2ForCausalLM")
LLAMA = _named(LLAMA_8B, "LlamaForCausalLM")
GEMMA = _named(GEMMA_3_27B, "Gemma3ForCausalLM")
QWEN3_NEXT = _named(QWEN3_NEXT_80B, "Qwen3NextForCausalLM")


@pytest.mark.parametrize(
    ("model", "version", "on_v2"),
    [
        # 0.23 lists Llama, Mistral and Qwen3 only.
        (LLAMA, "0.23.0", True),
        (DEEPSEEK_V2, "0.23.0", False),
        (QWEN2, "0.23.0", False),
        # 0.24 adds DeepseekV2 (the H200 DeepSeek-V2-Lite run: "gpu/model_runner.py"), Qwen2-MoE
        # and Granite-MoE; a dense class it does not list (Qwen2) keeps the original runner.
        (DEEPSEEK_V2, "0.24.0", True),
        (QWEN2, "0.24.0", False),
        (GEMMA, "0.24.0", False),
        # 0.25-0.28: every non-MoE model that is not a linear-attention hybrid (a sliding window
        # does not make a model hybrid), plus the listed MoE classes.
        (QWEN2, "0.25.0", True),
        (GEMMA, "0.26.0", True),
        (DEEPSEEK_V2, "0.28.0", True),
        (_named(DEEPSEEK_V3, "DeepseekV3ForCausalLM"), "0.28.0", False),
        (QWEN3_NEXT, "0.27.1", False),
    ],
)
def test_model_runner_v2_takes_the_classes_each_release_lists(
    model: ModelSpec, version: str, on_v2: bool
) -> None:
    assert runs_on_model_runner_v2(model, _at(version)) is on_v2


def test_an_unnamed_model_falls_back_to_its_shape() -> None:
    # No class name: 0.23-0.24 treat a dense full-attention model as listed, nothing else.
    assert runs_on_model_runner_v2(LLAMA_8B, _at("0.24.0"))
    assert not runs_on_model_runner_v2(DEEPSEEK_V3, _at("0.24.0"))
    # Without a release the era's last (0.28) applies: a dense sliding model is on V2.
    assert runs_on_model_runner_v2(GEMMA_3_27B, EngineConfig(era="v2-runner"))


def test_sliding_reserve_counts_in_flight_batches_from_0_26() -> None:
    # Gemma 3 (text): 52 sliding + 10 full layers in groups of 10 -> 1 full group, 6 sliding.
    # max_model_len 131,072, block 16, max_num_batched_tokens 16,384 (LLM class defaults).
    # Full group: 131,072 / 16 = 8,192 blocks a request.
    # 0.24 (one step): cdiv(1,024 - 1 + 16,384, 16) + 1 = 1,088 + 1 = 1,089 blocks a sliding
    # group -> 8,192 + 6 x 1,089 = 14,726 blocks a request (the H200 run logs 4.06x, i.e.
    # ~59,760 blocks of 72.95 GiB / 1,310,720 B over 14,726).
    # 0.26 (Model Runner V2 since 0.25, pp + 1 = 2 batches in flight):
    # cdiv(1,023 + 32,768, 16) + 1 = 2,112 + 1 = 2,113 -> 8,192 + 6 x 2,113 = 20,870.
    base = EngineConfig(
        era="v2-runner",
        max_model_len=131_072,
        max_num_batched_tokens=16_384,
        max_num_seqs=1_024,
        gpu_memory_utilization=0.92,
    )
    at_24 = msgspec.structs.replace(base, release=release_of("0.24.0"))
    at_26 = msgspec.structs.replace(base, release=release_of("0.26.0"))
    assert predict_vllm(GEMMA, H200, at_24).blocks_per_request == 14_726
    assert predict_vllm(GEMMA, H200, at_26).blocks_per_request == 20_870


def test_a_named_runner_overrides_the_release_rule() -> None:
    # A log that says "Using V2 Model Runner" (or VLLM_USE_V2_MODEL_RUNNER=0) settles it.
    v2 = msgspec.structs.replace(_at("0.24.0"), model_runner="v2")
    original = msgspec.structs.replace(_at("0.24.0"), model_runner="original")
    assert runs_on_model_runner_v2(GEMMA, v2)
    assert not runs_on_model_runner_v2(LLAMA, original)
    # The override is modelled for 0.23-0.28: no V2 before them, and 0.29 on serves every
    # model on V2 (PR #53183; whether the old runner can still be forced is not modelled).
    assert not runs_on_model_runner_v2(LLAMA, EngineConfig(era="v1-0.19", model_runner="v2"))
    assert runs_on_model_runner_v2(GEMMA, EngineConfig(era="v2-all", model_runner="original"))


def test_the_log_names_its_runner() -> None:
    # The H200 Llama-3.1-8B start-up
    # (service/accuracy/cases/vllm_logs/h200-own/llama-3.1-8b.log.gz).
    lines = [
        "(EngineCore pid=2109) INFO 11-29 19:48:21 [v1/worker/gpu_worker.py:331] Using V2 Model "
        "Runner",
        "(EngineCore pid=2109) INFO 11-29 19:48:47 [v1/core/kv_cache_utils.py:2146] GPU KV cache "
        "size: 914,304 tokens",
    ]
    assert parse_startup_log("\n".join(lines)).model_runner == "v2"
    assert parse_startup_log(lines[1]).model_runner is None


def test_the_utilisation_default_follows_the_release() -> None:
    # CacheConfig.gpu_memory_utilization: 0.9 in the 0.19.0 wheel, 0.92 from 0.20.0 (the H200
    # runs print "Desired GPU memory utilization is (0.92, 128.62 GiB)": 139.8 x 0.92).
    assert release_rules("v1-0.19", release_of("0.19.0")).gpu_memory_utilization == 0.9
    assert release_rules("v1-0.19", release_of("0.20.0")).gpu_memory_utilization == 0.92
    assert release_rules("v2-all", None).gpu_memory_utilization == 0.92
    assert release_rules("v1-0.11", None).gpu_memory_utilization == 0.9


def test_a_release_sets_every_rule_it_decides_at_once() -> None:
    # 0.7.2 (V0): the MLA latent is cached (from 0.7.1) with the absorbed weights kept in fp32
    # (0.7.1-0.7.2), bitsandbytes scales stay nested (before 0.9.2), LoRA adds 256 vocabulary
    # rows (before 0.12) and its slots are outside the weights line (before 0.8).
    old = for_release(EngineConfig(era="v0"), "0.7.2")
    assert (old.release, old.mla_latent_cache, old.mla_weights) == (
        (0, 7, 2),
        True,
        "absorbed-fp32",
    )
    assert (old.bnb_absmax, old.lora_extra_vocab_size, old.lora_in_weights) == (
        "nested",
        256,
        False,
    )
    # No release: each rule's current answer.
    now = for_release(EngineConfig(era="v2-all"), None)
    assert (now.release, now.mla_latent_cache, now.mla_weights) == (None, True, "current")
    assert (now.bnb_absmax, now.lora_extra_vocab_size, now.lora_in_weights) == ("fp32", 0, True)
