"""How close the vLLM method comes to real start-up logs (``python -m service accuracy``).

Every case in cases/vllm_logs/ is a real log (or a benchmark's table of real runs) with its
source. For each, the engine model predicts the KV tokens, the weights and whether the engine
starts; the report prints predicted, logged and the error, and says which cases the fitted
constants in service/sizing/vllm/calibration.py were fitted on ("fit") and which were not
("held-out").
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from service.accuracy.vllm_cases import CASES_DIR, load_cases, predict_case, source_of
from service.sizing.errors import SizingError
from service.sizing.units import GiB
from service.sizing.vllm.predict import EnginePrediction
from service.sizing.vllm.releases import last_of

TOKENS_TOLERANCE = 0.05
WEIGHTS_TOLERANCE = 0.01
BAR = 0.90

FIT_CASES = frozenset(
    {
        # v1-0.11 sampler factor and non-torch memory
        "llmd-h100-llama-3.1-8b",
        "llmd-h100-qwen3-32b-tp1",
        "llmd-h100-qwen3-32b-tp2",
        "llmd-h100-gpt-oss-20b",
        "llmd-h100-llama-3.3-70b-fp8-tp2",
        # v1-0.10 sampler factor, the A100 80GB total and the smallest graph capture
        "dennislee-a100-qwen2-7b-util0.5",
        # V0 non-torch memory: the median of the TP 1 logs that print it; split with custom
        # all-reduce, the SageMaker TP 8 log
        "vllm-pr10511-h100-llama-3-8b-tp1",
        "vllm-pr10927-h100-deepseek-v2-lite-chat-pre-mla",
        "oci-a10-llama-3.1-8b-128k-fails",
        "unknownrepo-24gb-qwen2.5-math-1.5b-v0.7.2",
        "unknownrepo-rtx2060-12gb-qwen3-4b-fp16-10k-seqs1-util0.95",
        "unknownrepo-rtx3090-qwen2.5-7b-8k-seqs16",
        "unknownrepo-rtx4090-48gb-qwen2.5-0.5b-instruct-bnb4-unsloth-32k-util0.78-v0.10.0",
        "unknownrepo-t4-llama-3.1-8b-instruct-bnb4-unsloth-512-util0.6-lora32-v0.7.2",
        "unknownrepo-t4-qwen2.5-1.5b-instruct-fp16-32k-util0.5-v0.7.2",
        "david-share-80gb-phi-4-autoround-gptq-4bit-util0.15-2k",
        "unknownrepo-sagemaker-p4d-a100-40gb-x8-deepseek-coder-v2-lite-tp8-v0.7.1",
        "vllm-10517-rtx3090-llama-3.1-8b-20k",
        "vllm-10517-rtx3090-llama-3.1-8b-29k-fails",
        # v1-0.19 sampler factor and non-torch memory
        "llmdplanner-h100-qwen2.5-7b-fp8-dynamic-v0.19",
        "llmdplanner-h100-llama-3.3-70b-fp8-dynamic-tp2-v0.19",
        # "Estimated CUDA graph memory" lines whose median is the 0.21+ estimate
        "llmdplanner-h100-llama-3.1-8b-v0.19-online-fp8",
        "tokenkaki-a100-40gb-qwen3-8b-v0.19.1",
        # the A100 40GB, MI300X and L40S totals torch reports
        "vllm-2363-a100-40gb-mixtral-8x7b-tp1-fails",
        "vllm-15196-l40s-deepseek-coder-v2-lite-cpu-offload30-util0.45-100k",
        "unknownrepo-mi300x-llama-3.1-8b-129k-v0.28-autokv",
        # Model Runner V2's activation on a first start
        "unknownrepo-a100-llama-3.1-8b-v0.31.0",
        "runpodrecon-rtx4090-qwen3-8b-v0.27.1-cold-compile",
        "runpodrecon-rtx4090-qwen3-8b-v0.27.1-warm-compile-cache",
        # Model Runner V2's warm forward peak (the MLP over 32,768 batched tokens)
        "unknownrepo-16gb-qwen2.5-0.5b-fp16-32k-v0.26.0",
        # Intel XPU non-torch memory (original runner, Model Runner V2) and compile cost
        "unknownrepo-arcb60-xpu-gpt-oss-20b-128k-util0.8-eager-v0.28.0",
        "unknownrepo-arcb60-xpu-gpt-oss-20b-128k-util0.8-eager-v0.29.0-mrv2",
        "unknownrepo-arcb60-xpu-gpt-oss-20b-128k-util0.8-compile-v0.28.0-fails",
        # the W4A16 group size was chosen with its logged weights in view
        "unknownrepo-l40s-qwen3-next-80b-a3b-w4a16-tp2-fp8kv-v0.13.0",
        # the graph-capture OOM rule was written with this run in view
        "vllm-13074-h20-3e-deepseek-r1-tp8-pp2-util1.0-fails",
    }
)
"""The cases whose numbers set the fitted constants (activation, non-torch, driver reserve)."""


class CaseResult(msgspec.Struct, frozen=True, kw_only=True):
    case: str
    role: str
    """fit: its numbers set a fitted constant; held-out: they did not."""
    model: str
    gpu: str
    tensor_parallel: int
    version: str
    logged_failed: bool
    predicted_failed: bool
    failure_ok: bool
    logged_tokens: int | None
    tokens_source: str
    predicted_tokens: int
    tokens_error: float | None
    logged_weights_gib: float | None
    predicted_weights_gib: float
    weights_error: float | None
    logged_kv_gib: float | None
    predicted_kv_gib: float
    page_tokens_range: tuple[int, int] | None = None
    """The tokens the engine's page and block rule makes of the logged KV memory, for the two
    ends of the rounding of its printed GiB (None when the log has no KV memory and tokens)."""
    page_ok: bool | None = None
    """Whether the logged tokens lie in that range: the page arithmetic alone, no fitted
    constant involved."""
    source: str
    inconsistent: str | None = None
    """Why the source cannot measure the method: it contradicts itself (its numbers cannot all
    be true of one run), or its log shows an outside cause (another process on the GPU). Such a
    case stays in the table but outside the bar."""
    unsupported: str | None = None
    """Why the method cannot predict this case (its checks then count as misses)."""


class Report(msgspec.Struct, frozen=True, kw_only=True):
    cases: list[CaseResult]
    tokens_within: int
    tokens_cases: int
    weights_within: int
    weights_cases: int
    failures_ok: int
    failure_cases: int
    false_failures: int
    """Cases that started but are predicted to fail (each is also a KV-token miss)."""
    page_ok: int
    page_cases: int
    """Cases whose logged KV memory and tokens check the page arithmetic alone."""
    tokens_by_counting: dict[str, tuple[int, int]]
    """KV tokens within 5% (within, cases) under each way of counting the bar that has been put
    to whoever files issues (``COUNTINGS``): the bar itself counts every case."""
    meets_bar: bool
    """The issue's bar: KV tokens within 5% in >= 90% of the cases that log or imply tokens,
    weights within 1% in every case that logs them, every logged failure predicted as one. A
    started case predicted to fail counts as a KV-token miss (predicted 0 tokens), so it is
    inside the 90%, and is also reported on its own as false_failures."""


def _logged_tokens(case: dict[str, Any], p: EnginePrediction) -> int | None:
    logged = case["logged"]
    if logged.get("kv_tokens") is not None:
        return int(logged["kv_tokens"])
    kv = logged.get("kv_cache_gib")
    if kv is None or logged.get("failed"):
        return None
    blocks = int(kv * GiB) // p.per_gpu.block_bytes
    bs = p.block_size
    return int(blocks // p.kv_groups * bs)


def _page_tokens_range(case: dict[str, Any], p: EnginePrediction) -> tuple[int, int] | None:
    """The engine's rule applied to the logged KV memory: blocks = memory // block bytes, tokens
    = blocks per group x block_size (V0: all blocks). The log prints GiB to 2 places, so the
    memory is anywhere within 0.005 GiB of it."""
    logged = case["logged"]
    kv, tokens = logged.get("kv_cache_gib"), logged.get("kv_tokens")
    if kv is None or tokens is None or logged.get("failed"):
        return None
    bs = p.block_size
    tokens_line = last_of(p.version).tokens_line
    groups = 1 if tokens_line == "blocks" else p.kv_groups

    def tokens_of(gib: float) -> int:
        blocks = int(max(gib, 0) * GiB) // p.per_gpu.block_bytes
        if tokens_line == "concurrency":  # concurrency x max_model_len
            return int(blocks / p.blocks_per_request * p.max_model_len)
        return blocks // groups * bs

    return tokens_of(kv - 0.005), tokens_of(kv + 0.005)


BUDGET_SLACK_GIB = 0.05
"""Five terms printed to 2 decimals (and the total x utilisation) round by up to 0.03 GiB."""


def _inconsistency(
    case: dict[str, Any], page: tuple[int, int] | None, graph_subtracted: bool
) -> str | None:
    """A source that contradicts itself, checked without any fitted constant: its KV memory and
    tokens disagree under the page arithmetic, or its budget terms do not add up (total x
    utilisation - weights - activation - non-torch = KV memory, less the CUDA-graph estimate
    where the release takes it out of the budget)."""
    logged = case["logged"]
    if case.get("external_cause"):  # the log shows a cause outside the model and its flags
        return f"outside cause: {case['external_cause']}"
    if page is not None and not page[0] <= int(logged["kv_tokens"]) <= page[1]:
        return (
            f"{logged['kv_tokens']:,} tokens is not what {logged['kv_cache_gib']} GiB of KV "
            f"memory holds ({page[0]:,}-{page[1]:,})"
        )
    total = case.get("gpu_total_gib_logged")
    names = ["weights_gib", "activation_gib", "non_torch_gib"]
    if graph_subtracted:  # the original runner's CUDA-graph estimate, 0.21 on
        names.append("cudagraph_gib")
    terms = [logged.get(k) for k in names]
    kv = logged.get("kv_cache_gib")
    if total and kv is not None and all(t is not None for t in terms) and not logged["failed"]:
        gap = total * case["config"]["gpu_memory_utilization"] - sum(terms) - kv
        if abs(gap) > BUDGET_SLACK_GIB:
            return f"its budget terms miss its KV memory by {gap:+.2f} GiB"
    return None


def _error(predicted: float, logged: float | None) -> float | None:
    if logged is None or logged == 0:
        return None
    return (predicted - logged) / logged


def _result(case: dict[str, Any], **predicted: Any) -> CaseResult:
    """A case's row: what the case logs, plus the ``predicted`` fields."""
    logged = case["logged"]
    return CaseResult(
        case=case["id"],
        model=case["config"]["model"],
        gpu=case["gpu"] or f"{case.get('gpu_total_gib_logged')} GiB (logged)",
        tensor_parallel=case["config"]["tensor_parallel_size"],
        version=case["vllm_version"],
        logged_failed=bool(logged.get("failed")),
        tokens_source=case.get("tokens_source", ""),
        logged_weights_gib=logged.get("weights_gib"),
        logged_kv_gib=logged.get("kv_cache_gib"),
        source=source_of(case),
        **predicted,
    )


def _unsupported(case: dict[str, Any], why: str) -> CaseResult:
    """A case the method cannot predict: every check it could have passed counts as a miss."""
    logged = case["logged"]
    failed = bool(logged.get("failed"))
    tokens = None if failed else logged.get("kv_tokens")
    return _result(
        case,
        role="unsupported",
        predicted_failed=False,
        failure_ok=not failed,
        logged_tokens=tokens,
        predicted_tokens=0,
        tokens_error=None if tokens is None else -1.0,
        predicted_weights_gib=0.0,
        weights_error=None if logged.get("weights_gib") is None else -1.0,
        predicted_kv_gib=0.0,
        unsupported=why,
    )


def evaluate_case(case: dict[str, Any]) -> CaseResult:
    try:
        p = predict_case(case)
    except (SizingError, LookupError) as exc:
        return _unsupported(case, str(exc))
    logged = case["logged"]
    tokens = None if logged.get("failed") else _logged_tokens(case, p)
    # A log's weights line is one rank's: the stage that printed it when the case names it
    # (V0's driver is rank 0, the first stage), else the stage the prediction reports.
    stage = logged.get("weights_stage")
    weights = p.per_gpu.weights_bytes if stage is None else p.stage_weights_bytes[stage]
    predicted_weights = weights / GiB
    page = _page_tokens_range(case, p)
    return _result(
        case,
        role="fit" if case["id"] in FIT_CASES else "held-out",
        predicted_failed=not p.starts,
        failure_ok=bool(logged.get("failed")) == (not p.starts),
        logged_tokens=tokens,
        predicted_tokens=p.kv_cache_tokens,
        tokens_error=None if tokens is None else _error(p.kv_cache_tokens, tokens),
        predicted_weights_gib=round(predicted_weights, 4),
        weights_error=_error(predicted_weights, logged.get("weights_gib")),
        predicted_kv_gib=p.per_gpu.kv_cache_gib,
        page_tokens_range=page,
        page_ok=None if page is None else page[0] <= int(logged["kv_tokens"]) <= page[1],
        inconsistent=_inconsistency(case, page, p.per_gpu.cuda_graph_bytes > 0),
    )


COUNTINGS: dict[str, Callable[[CaseResult], bool]] = {
    "every case": lambda r: True,  # the bar as the issue states it
    "held-out": lambda r: r.role == "held-out",  # no fitted constant set on it
    "modelled": lambda r: r.unsupported is None,  # a run the method models
    "held-out modelled": lambda r: r.role == "held-out" and r.unsupported is None,
}
"""The ways of counting the KV-token bar put to whoever files issues: which cases each keeps."""


def report(directory: Path = CASES_DIR) -> Report:
    results = [evaluate_case(c) for c in load_cases(directory)]
    measured = [r for r in results if r.inconsistent is None]
    tok = [r for r in measured if r.tokens_error is not None]
    wts = [r for r in measured if r.weights_error is not None]
    fails = [r for r in measured if r.logged_failed]
    weights_within = sum(1 for r in wts if abs(r.weights_error or 0) <= WEIGHTS_TOLERANCE)
    failures_ok = sum(1 for r in fails if r.failure_ok)
    false_failures = sum(1 for r in measured if not r.logged_failed and r.predicted_failed)
    pages = [r for r in results if r.page_ok is not None]
    by_counting = {}
    for counting, keeps in COUNTINGS.items():
        kept = [r for r in tok if keeps(r)]
        within = sum(1 for r in kept if abs(r.tokens_error or 0) <= TOKENS_TOLERANCE)
        by_counting[counting] = (within, len(kept))
    tokens_within = by_counting["every case"][0]
    meets = (
        bool(tok)
        and tokens_within >= BAR * len(tok)
        and weights_within == len(wts)
        and failures_ok == len(fails)
    )
    return Report(
        cases=results,
        tokens_within=tokens_within,
        tokens_cases=len(tok),
        weights_within=weights_within,
        weights_cases=len(wts),
        failures_ok=failures_ok,
        failure_cases=len(fails),
        false_failures=false_failures,
        tokens_by_counting=by_counting,
        page_ok=sum(1 for r in pages if r.page_ok),
        page_cases=len(pages),
        meets_bar=meets,
    )
