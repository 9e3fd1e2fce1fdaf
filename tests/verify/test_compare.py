"""/verify's core: the configuration a log echoes, and each logged budget term against the
vLLM method's prediction (service/verify/compare.py, pure)."""

import msgspec

from service.sizing.hardware import GpuSpec
from service.sizing.vllm.config import EngineConfig
from service.verify.compare import compare, config_from_log
from service.verify.startup_log import StartupLog, parse_startup_log
from tests.unit.sizing.specs import LLAMA_8B
from tests.unit.sizing.vllm.test_predict import GIB, H100

BASE = EngineConfig(gpu_total_bytes=80 * GIB, max_model_len=8192)


def test_the_log_overrides_the_request_flags() -> None:
    log = StartupLog(
        vllm_version="0.6.4",
        quantization="compressed-tensors",
        kv_cache_dtype="fp8_e4m3",
        tensor_parallel_size=2,
        concurrency_tokens=20_000,
    )
    c = config_from_log(log, BASE, None, None)
    # 0.6.x runs the V0 engine; compressed-tensors loads FP8 linear layers; fp8_e4m3 is 1 byte;
    # the concurrency line's request length stands in for an unechoed max_model_len.
    assert (c.era, c.quantization, c.kv_cache_dtype) == ("v0", "fp8", "fp8")
    assert (c.tensor_parallel_size, c.max_model_len) == (2, 20_000)
    assert c.gpu_total_bytes == 80 * GIB  # the log is silent: the request's value stays
    # A log showing torch.compile loading from its cache sets the warm Model Runner V2 peak.
    assert config_from_log(StartupLog(compile_cache="warm"), BASE, None, None).compile_cache == (
        "warm"
    )
    assert c.compile_cache == "cold"  # silent log: the request's (default) state
    # The request's own quantization and era win over what the log echoes.
    c = config_from_log(log, BASE, "none", "v1-0.11")
    assert (c.era, c.quantization) == ("v1-0.11", "none")


def test_a_bitsandbytes_lora_log_sets_the_release_layouts() -> None:
    # A 0.7.2 log: bitsandbytes 4-bit with the nested scales of releases before 0.9.2, LoRA
    # slots outside the weights line (before 0.8) and the 256-row extra vocabulary.
    log = StartupLog(vllm_version="0.7.2", quantization="bitsandbytes", enable_lora=True)
    c = config_from_log(log, BASE, None, None)
    assert (c.quantization, c.bnb_absmax, c.enable_lora) == ("bnb-nf4", "nested", True)
    assert (c.lora_in_weights, c.lora_extra_vocab_size) == (False, 256)
    # 0.10.0: fp32 scales, slots in the weights; a rank in the log wins over the request's.
    log = StartupLog(vllm_version="0.10.0", quantization="bitsandbytes", max_lora_rank=8)
    c = config_from_log(log, msgspec.structs.replace(BASE, enable_lora=True), None, None)
    assert (c.bnb_absmax, c.lora_in_weights, c.max_lora_rank) == ("fp32", True, 8)
    assert c.enable_lora  # the log is silent: the request's flag stays


def test_budget_terms_are_judged_against_their_tolerance() -> None:
    # The prediction worked in test_engine.py (Llama 3.1 8B, 80 GiB x 0.9, 8,192 tokens):
    # activation 5,101,018,152 B (4.75 GiB), non-torch 139,586,437 B (0.13 GiB), KV
    # 55,974,729,811 B (52.13 GiB), 427,040 tokens.
    log = StartupLog(activation_bytes=4 * GIB, non_torch_bytes=GIB, kv_cache_bytes=50 * GIB)
    answer = compare(LLAMA_8B, H100, log, BASE, users=8)
    by = {d.quantity: d for d in answer.differences}
    assert set(by) == {"activation_gib", "non_torch_gib", "kv_cache_gib"}
    # activation: (5,101,018,152 - 4,294,967,296) / 4,294,967,296 = +18.8%, within 25%.
    a = by["activation_gib"]
    assert (a.logged, a.predicted, a.severity) == (4.0, 4.75, "info")
    assert a.relative_error is not None and round(a.relative_error, 4) == 0.1877
    # non-torch: (139,586,437 - 1,073,741,824) / 1,073,741,824 = -87.0%, beyond 50%.
    n = by["non_torch_gib"]
    assert (n.logged, n.predicted, n.severity) == (1.0, 0.13, "warning")
    assert n.relative_error is not None and round(n.relative_error, 3) == -0.870
    # KV: (55,974,729,811 - 53,687,091,200) / 53,687,091,200 = +4.3%, within 5%.
    k = by["kv_cache_gib"]
    assert (k.logged, k.predicted, k.severity) == (50.0, 52.13, "info")
    assert k.relative_error is not None and round(k.relative_error, 4) == 0.0426
    # No tokens logged: the predicted 427,040 // 8,192 = 52 conversations hold the 8 users.
    assert answer.plan_short is False
    assert answer.summary == "0 problem(s), 1 warning(s): non_torch_gib"


def _cause(log: StartupLog, base: EngineConfig, quantity: str, gpu: GpuSpec = H100) -> str:
    answer = compare(LLAMA_8B, gpu, log, base, users=1)
    return next(d.likely_cause for d in answer.differences if d.quantity == quantity)


def test_a_non_torch_excess_names_what_holds_it() -> None:
    # One GPU, 1 GiB logged against the 0.13 GiB planned (v1-0.11): another process or the
    # platform's runtime.
    log = StartupLog(non_torch_bytes=GIB)
    assert "another process" in _cause(log, BASE, "non_torch_gib")
    # V0 at TP 8 on Hopper (NVSwitch, more than two GPUs): NCCL's NVLS buffers.
    v0 = msgspec.structs.replace(BASE, era="v0", tensor_parallel_size=8)
    assert "NVLS" in _cause(StartupLog(non_torch_bytes=7 * GIB), v0, "non_torch_gib")
    # TP 2 on GeForce cards (no peer-to-peer, no custom all-reduce): NCCL's own buffers.
    rtx = GpuSpec(
        slug="rtx-4090", memory_bytes=24 * GIB, hbm_bytes_per_s=10**12, peer_to_peer=False
    )
    tp2 = msgspec.structs.replace(BASE, tensor_parallel_size=2)
    assert "custom all-reduce" in _cause(StartupLog(non_torch_bytes=GIB), tp2, "non_torch_gib", rtx)
    # Within the tolerance the general sentence stays.
    assert _cause(StartupLog(non_torch_bytes=139_586_437), BASE, "non_torch_gib").startswith(
        "Non-torch memory is"
    )


def test_a_v2_activation_far_below_a_first_start_points_at_a_warm_compile_cache() -> None:
    # Model Runner V2 (0.23+, a dense model), first start: 4,096 x 343,409 = 1,406,603,264 B
    # planned; 0.2 GiB logged is the warm-cache figure. The other way round (planned warm,
    # logged a first start's peak): it compiled.
    v2 = msgspec.structs.replace(BASE, era="v2-runner")
    assert "warm" in _cause(StartupLog(activation_bytes=GIB // 5), v2, "activation_gib")
    warm = msgspec.structs.replace(v2, compile_cache="warm")
    assert "compiled" in _cause(StartupLog(activation_bytes=3 * GIB), warm, "activation_gib")


def test_an_unsloth_engine_from_2025_8_4_keeps_the_nested_scales() -> None:
    # vLLM 0.10.0 alone dequantises bitsandbytes' nested absmax to fp32 (from 0.9.2); Unsloth
    # 2025.8.4 requires unsloth_zoo >= 2025.8.3, which overrides that dequantisation, so the
    # engine it built keeps the nested scales. The banner is the case log's own first line.
    text = (
        "==((====))==  Unsloth 2025.8.4: Fast Qwen2 patching. Transformers: 4.55.0. "
        "vLLM: 0.10.0.\n"
        "INFO 08-12 22:32:01 [llm_engine.py:228] Initializing a V0 LLM engine (v0.10.0) with "
        "config: model='unsloth/qwen2.5-0.5b-instruct-unsloth-bnb-4bit', quantization=bitsandbytes"
    )
    log = parse_startup_log(text)
    assert (log.unsloth_version, log.vllm_version) == ("2025.8.4", "0.10.0")
    assert config_from_log(log, BASE, None, None).bnb_absmax == "nested"
    # Without the banner the release's own layout stands; an Unsloth release before 2025.8.4
    # (whose unsloth_zoo may predate the override, added in 2025.7.5) keeps it too.
    assert config_from_log(parse_startup_log(text.split("\n")[1]), BASE, None, None).bnb_absmax == (
        "fp32"
    )
    older = parse_startup_log(text.replace("2025.8.4", "2025.7.3"))
    assert config_from_log(older, BASE, None, None).bnb_absmax == "fp32"
