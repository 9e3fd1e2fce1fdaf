"""Each engine's KV pool under its own memory rule (service/sizing/serving/kv_pools.py), by
hand: SGLang's default mem_fraction_static and profile_max_num_token, TensorRT-LLM's free
fraction, and the wiring through deploy.replica_inputs."""

import msgspec
import pytest

from service.offline import local_catalogue
from service.sizing.errors import SizingError
from service.sizing.serving.deploy import Deployment, predict_serving, replica_inputs
from service.sizing.serving.kv_pools import (
    EngineMemory,
    engine_failure,
    kv_bytes_per_token,
    kv_pool_tokens_for_engine,
    sglang_mem_fraction_static,
)
from service.sizing.serving.loop import Workload
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.predict import EnginePrediction, predict_vllm

GiB = 1 << 30
MXFP4 = EngineConfig(quantization="mxfp4", max_model_len=32_768)
H100_MIB = 81_559  # nvidia-smi's total of an H100 SXM (the catalogue's driver-visible bytes)


def fraction(**kw: object) -> float:
    return sglang_mem_fraction_static(EngineMemory(gpu_mib=H100_MIB, **kw))  # type: ignore[arg-type]


def test_sglang_default_fraction_from_053_reserves_for_prefill_and_graphs() -> None:
    # H100 TP1: chunked_prefill_size 8,192 and cuda_graph_max_bs 256; reserved = 512 + 1.5 x
    # 8,192 + 2 x 256 + 1 / 8 x 1,024 = 512 + 12,288 + 512 + 128 = 13,440 MiB;
    # (81,559 - 13,440) / 81,559 = 68,119 / 81,559 = 0.83521 -> 0.835.
    assert fraction(release="v0.5.4.post2") == 0.835
    # No release: the current rule; TP4 takes 512 graphs: 512 + 12,288 + 1,024 + 512 = 14,336;
    # 67,223 / 81,559 = 0.82422 -> 0.824.
    assert fraction(tensor_parallel=4) == 0.824
    # --chunked-prefill-size 2048: 512 + 3,072 + 512 + 128 = 4,224, raised to 10 GiB on a GPU
    # over 60 GiB: 71,319 / 81,559 = 0.87445 -> 0.874.
    assert fraction(chunked_prefill_size=2048) == 0.874
    # --cuda-graph-max-bs 64: 512 + 12,288 + 128 + 128 = 13,056; 68,503 / 81,559 = 0.83992.
    assert fraction(cuda_graph_max_bs=64) == 0.84


def test_sglang_default_fraction_on_larger_gpus() -> None:
    # H200 (143,771 MiB) TP8, 0.5.3: 512 + 12,288 + 2 x 512 + 8 / 8 x 1,024 = 14,848;
    # 128,923 / 143,771 = 0.89672 -> 0.897.
    h200 = EngineMemory(gpu_mib=143_771, tensor_parallel=8, release="v0.5.3")
    assert sglang_mem_fraction_static(h200) == 0.897
    # B200 (183,359 MiB, over 160 GiB) TP8: chunked prefill 16,384, 512 graphs: 512 + 24,576 +
    # 1,024 + 1,024 = 27,136; 156,223 / 183,359 = 0.85201 -> 0.852.
    b200 = EngineMemory(gpu_mib=183_359, tensor_parallel=8, release="0.5.6")
    assert sglang_mem_fraction_static(b200) == 0.852


def test_sglang_before_053_keeps_its_table() -> None:
    # 0.5.3rc0 (a pre-release of 0.5.3): H100 and A100 reserve 9.5 + 0.5 x tp x pp GiB.
    # TP1: 10 GiB = 10,240 MiB; 71,319 / 81,559 = 0.87445 -> 0.874;
    # TP2: 10.5 GiB = 10,752 MiB; 70,807 / 81,559 = 0.86817 -> 0.868.
    assert fraction(release="v0.5.3rc0") == 0.874
    assert fraction(release="v0.5.3rc0", tensor_parallel=2) == 0.868
    # H200 (143,771 MiB) TP8: 12 + 4 = 16 GiB = 16,384 MiB; 127,387 / 143,771 = 0.88604;
    # a GPU of 160 GiB or more: 32 GiB flat, (196,608 - 32,768) / 196,608 = 0.8333.
    h200 = EngineMemory(gpu_mib=143_771, tensor_parallel=8, release="0.5.2")
    assert sglang_mem_fraction_static(h200) == 0.886
    assert sglang_mem_fraction_static(EngineMemory(gpu_mib=196_608, release="0.5.2")) == 0.833


def test_sglang_takes_the_command_fraction_and_aiter_derates_it() -> None:
    assert fraction(fraction=0.8) == 0.8
    # aiter with DeepSeek's 163,840-token context: 0.8 x 0.85 = 0.68; a short context keeps it.
    assert fraction(fraction=0.8, attention_backend="aiter", context_tokens=163_840) == (
        pytest.approx(0.68)
    )
    assert fraction(fraction=0.8, attention_backend="aiter", context_tokens=8192) == 0.8


def prediction_with(**per_gpu: int) -> EnginePrediction:
    """gpt-oss-120b on one H100 (whose vLLM pool the method predicts empty) with its memory
    terms replaced by round figures."""
    cat = local_catalogue()
    p = predict_vllm(cat.model("gpt-oss-120b"), cat.gpu("h100-sxm"), MXFP4)
    return msgspec.structs.replace(p, per_gpu=msgspec.structs.replace(p.per_gpu, **per_gpu))


def test_the_bytes_per_token_do_not_need_a_vllm_pool() -> None:
    cat = local_catalogue()
    p = predict_vllm(cat.model("gpt-oss-120b"), cat.gpu("h100-sxm"), MXFP4)
    assert not p.starts and p.kv_cache_tokens == 0
    # 36 layers x 8 KV heads x 64 x (K and V) x 2 B = 73,728 B a token.
    assert kv_bytes_per_token(p) == 73_728


def test_each_engine_prices_its_pool_from_the_memory_terms() -> None:
    # 80 GiB total, 0.5 GiB outside torch, 60 GiB of weights, 5 GiB of activations; 73,728 B a
    # token (gpt-oss-120b), so a GiB holds 2^30 / 73,728 = 14,563.56 tokens.
    p = prediction_with(
        total_bytes=80 * GiB,
        non_torch_bytes=GiB // 2,
        weights_bytes=60 * GiB,
        activation_bytes=5 * GiB,
    )
    m = EngineMemory(gpu_mib=H100_MIB, release="v0.5.3rc0")
    # SGLang: 0.874 x (80 - 0.5) - 60 = 69.483 - 60 = 9.483 GiB -> 9.483 x 14,563.56 = 138,106.
    assert kv_pool_tokens_for_engine("sglang", p, m) == 138_106
    # TensorRT-LLM: 0.9 x (80 - 60 - 5 - 0.5) = 13.05 GiB -> 190,054.5 tokens.
    assert kv_pool_tokens_for_engine("tensorrt-llm", p, m) == 190_054
    # --kv_cache_free_gpu_memory_fraction 0.5: 7.25 GiB -> 105,585.8 tokens.
    half = EngineMemory(gpu_mib=H100_MIB, fraction=0.5)
    assert kv_pool_tokens_for_engine("tensorrt-llm", p, half) == 105_585
    # vLLM: the method's own pool, none here, and its failure.
    assert kv_pool_tokens_for_engine("vllm", p, m) == 0
    assert engine_failure("vllm", p, m) == p.failure
    assert engine_failure("sglang", p, m) is None


def test_an_engine_whose_rule_leaves_nothing_does_not_start() -> None:
    # 70 GiB of weights: SGLang 0.874 x 79.5 - 70 = -0.517 GiB, no pool; TensorRT-LLM still
    # 0.9 x (80 - 70 - 5 - 0.5) = 4.05 GiB.
    p = prediction_with(
        total_bytes=80 * GiB,
        non_torch_bytes=GiB // 2,
        weights_bytes=70 * GiB,
        activation_bytes=5 * GiB,
    )
    m = EngineMemory(gpu_mib=H100_MIB, release="v0.5.3rc0")
    assert kv_pool_tokens_for_engine("sglang", p, m) == 0
    failure = engine_failure("sglang", p, m)
    assert failure is not None and "-0.52 GiB" in failure
    assert engine_failure("tensorrt-llm", p, m) is None


def test_the_serving_model_takes_the_engines_pool() -> None:
    # gpt-oss-120b on one H100: vLLM does not start; SGLang and TensorRT-LLM do, with the pool
    # their rules give (the figures of the tests above, on the method's terms).
    cat = local_catalogue()
    model, gpu = cat.model("gpt-oss-120b"), cat.gpu("h100-sxm")
    p = predict_vllm(model, gpu, MXFP4)
    d = Deployment(model=model, gpu=gpu, weight_format="mxfp4", release="v0.5.3rc0")
    w = Workload(input_tokens=1000, output_tokens=200, concurrency=4)
    with pytest.raises(SizingError):
        predict_serving(d, p, "vllm", w)
    for engine in ("sglang", "tensorrt-llm"):
        costs, limits, _ = replica_inputs(d, p, engine)
        m = EngineMemory(gpu_mib=H100_MIB, release="v0.5.3rc0", context_tokens=131_072)
        assert limits.kv_pool_tokens == kv_pool_tokens_for_engine(engine, p, m) > 0
        assert costs.kv_bytes_per_token == 73_728
        assert predict_serving(d, p, engine, w).tpot_s > 0
