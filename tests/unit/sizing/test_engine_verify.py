"""/verify's core: the configuration a log echoes, and each logged budget term against the
vLLM method's prediction (service/verify/compare.py, pure)."""

from service.sizing.engine import EngineConfig
from service.sizing.startup_log import StartupLog
from service.verify.compare import compare, config_from_log
from tests.unit.sizing.specs import LLAMA_8B
from tests.unit.sizing.test_engine import GIB, H100

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
    assert (c.version, c.quantization, c.kv_cache_dtype) == ("v0", "fp8", "fp8")
    assert (c.tensor_parallel_size, c.max_model_len) == (2, 20_000)
    assert c.gpu_total_bytes == 80 * GIB  # the log is silent: the request's value stays
    # The request's own quantization and era win over what the log echoes.
    c = config_from_log(log, BASE, "none", "v1-0.11")
    assert (c.version, c.quantization) == ("v1-0.11", "none")


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
