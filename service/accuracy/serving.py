"""How close the serving-speed model comes to public benchmark runs
(``python -m service accuracy --serving``; ``--markdown`` prints docs/serving-accuracy.md).

Every run in service/accuracy/cases/serving/ is one result block (or InferenceMAX JSON record)
with its serve command, GPU and engine; each is marked calibration or held_out once, by its page
(the data's README).
For each run the model predicts output tokens/s, mean TPOT and mean TTFT; the report prints
them against the measured ones. The fitted constants in service/sizing/serving/efficiency.py
come from the calibration half only (bench/serving_calibration.py); the bar is on the held-out
half: median absolute error <= 15% on output tokens/s and on mean TPOT, and >= 80% of runs
within 25% on both.
"""

import json
import statistics
from pathlib import Path
from typing import Any

import msgspec

from service.accuracy.serve_command import expert_parallel_of, flag, option
from service.sizing.errors import SizingError
from service.sizing.serving.deploy import (
    Deployment,
    mxfp4_failure,
    replica_failure,
    replica_inputs,
)
from service.sizing.serving.efficiency import Engine, efficiency_for
from service.sizing.serving.engines import async_scheduling
from service.sizing.serving.loop import EngineLimits, LengthDistribution, Workload, benchmark
from service.sizing.serving.simulate import POLICIES
from service.sizing.serving.step import StepCosts
from service.sizing.vllm.config import EngineConfig, for_release
from service.sizing.vllm.predict import predict_vllm

RUNS_DIR = Path(__file__).resolve().parent / "cases" / "serving"
MEDIAN_BAR = 0.15
WITHIN = 0.25
WITHIN_SHARE_BAR = 0.80

MODEL_SLUGS: dict[str, str] = {
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3.1": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-8B-FP8": "qwen3-8b",
    "Qwen/Qwen3-14B": "qwen3-14b",
    "Qwen/Qwen3-14B-FP8": "qwen3-14b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen3-Next-80B-A3B-Instruct": "qwen3-next-80b-a3b",
    "zai-org/GLM-4.5-Air": "glm-4.5-air",
    "zai-org/GLM-4.5-Air-FP8": "glm-4.5-air",
    "zai-org/GLM-4.6": "glm-4.6",
    "zai-org/GLM-4.6-FP8": "glm-4.6",
    "amd/Llama-3.3-70B-Instruct-FP8-KV": "llama-3.1-70b",
    "amd/Llama-3.3-70B-Instruct-MXFP4-Preview": "llama-3.1-70b",
    "amd/Llama-3.1-405B-Instruct-FP8-KV": "llama-3.1-405b",
    "amd/Llama-3.1-405B-Instruct-MXFP4-Preview": "llama-3.1-405b",
}
"""Served Hugging Face id -> the catalogue model of the same architecture (an -FP8 repository is
the same model in another format; Llama 3.3 70B has Llama 3.1 70B's shape)."""

NON_VLLM_CHECKED_LEN = 4096
"""SGLang and TensorRT-LLM do not refuse to start when one request of the model's whole context
would not fit the pool, as vLLM does: the vLLM method checks them at a length a ShareGPT or
random-1k request fits (4,096 tokens) instead."""

QUANTIZATION = {"fp8": "fp8", "mxfp4": "mxfp4"}


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    run: str
    split: str
    collected: str
    """The day the run was copied in (ISO date): the newest batch was never looked at."""
    engine: str
    gpu: str
    skipped: str | None = None
    """Why the run is not predicted (a GPU or model the catalogue lacks)."""
    measured_output_tokens_per_s: float
    measured_tpot_s: float
    measured_ttft_s: float
    predicted_output_tokens_per_s: float | None = None
    predicted_tpot_s: float | None = None
    predicted_ttft_s: float | None = None
    bottleneck: str | None = None
    running_batch: float | None = None

    def predicted(self) -> tuple[float, float, float] | None:
        """Predicted output tokens/s, mean TPOT and mean TTFT; None: the run was skipped."""
        out, tpot = self.predicted_output_tokens_per_s, self.predicted_tpot_s
        ttft = self.predicted_ttft_s
        if out is None:
            return None
        assert tpot is not None and ttft is not None
        return out, tpot, ttft

    def errors(self) -> tuple[float, float, float] | None:
        predicted = self.predicted()
        if predicted is None:
            return None
        out, tpot, ttft = predicted
        return (
            out / self.measured_output_tokens_per_s - 1,
            tpot / self.measured_tpot_s - 1,
            ttft / self.measured_ttft_s - 1,
        )


class HalfFigures(msgspec.Struct, frozen=True, kw_only=True):
    runs: int
    skipped: int
    median_output_error: float
    median_tpot_error: float
    median_ttft_error: float
    share_within: float
    """Runs with output tokens/s and mean TPOT both within 25%."""
    meets_bar: bool


def load_runs(directory: Path = RUNS_DIR) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))]


INFERENCEMAX_RANGE_RATIO = 0.8
"""InferenceMAX's --random-range-ratio (RANDOM_RANGE_RATIO in its
.github/workflows/benchmark-tmpl.yml): its benchmark_serving.py draws each request's input and
output lengths uniformly from int(L x 0.8) to L (``sample_uniform``)."""


def _drawn_mean(length: int) -> float:
    return (int(length * INFERENCEMAX_RANGE_RATIO) + length) / 2


def workload_of(run: dict[str, Any]) -> Workload:
    if run["total_input_tokens"] is None:
        # An InferenceMAX record keeps no totals: the mean of the client's draw instead
        # (--ignore-eos, so each request produces its drawn output length).
        prompts = int(run["num_prompts"])
        input_tokens = _drawn_mean(run["input_tokens"])
        output_tokens = _drawn_mean(run["output_tokens"])
    else:
        prompts = int(run["successful_requests"])
        input_tokens = run["total_input_tokens"] / prompts
        output_tokens = run["total_output_tokens"] / prompts
    distribution: LengthDistribution = "exponential"
    low = 0.0
    if run["dataset"] == "random":
        # vllm bench serve's random lengths are fixed (range ratio 0); sglang.bench_serving
        # draws each request's from ratio x L to L, its ratio 0 unless the command sets one;
        # InferenceMAX's client from 0.8 x L to L.
        command = run.get("bench_command") or ""
        ratio = flag(command, "--random-range-ratio")
        if run["total_input_tokens"] is None:
            distribution, low = "uniform", INFERENCEMAX_RANGE_RATIO
        elif (run.get("bench_tool") or "").startswith("sglang.bench_serving"):
            distribution, low = "uniform", float(ratio) if ratio else 0.0
        else:
            distribution = "fixed"
    return Workload(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        concurrency=run["max_concurrency"],
        num_prompts=prompts,
        output_distribution=distribution,
        length_low_ratio=low,
    )


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """A run's deployment, priced once: the fitted factors apply after."""

    costs: StepCosts
    limits: EngineLimits
    architecture: str


def _base(run: dict[str, Any]) -> RunResult:
    m = run["measured"]
    return RunResult(
        run=run["id"],
        split=run["split"],
        collected=run["collected"],
        engine=run["engine"],
        gpu=run["gpu"]["slug"] or run["gpu"]["name"],
        measured_output_tokens_per_s=m["output_tokens_per_s"],
        measured_tpot_s=m["mean_tpot_ms"] / 1000,
        measured_ttft_s=m["mean_ttft_ms"] / 1000,
    )


def prepare(run: dict[str, Any]) -> Prepared | str:
    """The run's step costs and engine limits, or why the run cannot be predicted."""
    from service.offline import local_catalogue  # the shipped catalogue, no database

    if run["gpu"]["slug"] is None:
        return "GPU not in the catalogue"
    if run["model"] not in MODEL_SLUGS:
        return "model not in the catalogue"
    cat = local_catalogue()
    gpu = cat.gpu(run["gpu"]["slug"])
    model = cat.model(MODEL_SLUGS[run["model"]])
    command = run["serve_command"]
    mml = flag(command, "--max-model-len", "--max_seq_len")
    # vLLM's utilisation; SGLang's --mem-fraction-static and trtllm-serve's free-memory
    # fraction go to their own memory rules (Deployment.memory_fraction).
    util = flag(command, "--gpu-memory-utilization") if run["engine"] == "vllm" else None
    fraction = flag(command, "--mem-fraction-static", "--kv_cache_free_gpu_memory_fraction")
    graphs = flag(command, "--cuda-graph-max-bs")
    if mml is None and run["engine"] != "vllm":
        mml = str(NON_VLLM_CHECKED_LEN)
    config = EngineConfig(
        tensor_parallel_size=run["tensor_parallel"],
        pipeline_parallel_size=run["pipeline_parallel"],
        max_model_len=int(mml) if mml else None,
        gpu_total_bytes=gpu.driver_visible_bytes or None,
        gpu_memory_utilization=float(util) if util else 0.9,
        kv_cache_dtype="fp8" if run["kv_format"] == "fp8" else "auto",
        quantization=QUANTIZATION.get(run["weight_format"] or "", "none"),  # type: ignore[arg-type]
    )
    if run["engine"] == "vllm":
        config = for_release(config, (run["engine_version"] or "").lstrip("v") or None)
    # Each engine's own batch flags (vLLM's --max-num-seqs means nothing to the others).
    if run["engine"] == "vllm":
        seqs = flag(command, "--max-num-seqs")
        tokens = flag(command, "--max-num-batched-tokens")
    else:
        seqs = flag(command, "--max-running-requests", "--max_batch_size")
        tokens = flag(command, "--chunked-prefill-size", "--max_num_tokens")
    try:
        prediction = predict_vllm(model, gpu, config)
        deployment = Deployment(
            model=model,
            gpu=gpu,
            weight_format=run["weight_format"] or "bf16",
            tensor_parallel=run["tensor_parallel"],
            pipeline_parallel=run["pipeline_parallel"],
            expert_parallel=expert_parallel_of(run["engine"], command, run["tensor_parallel"]),
            max_num_seqs=int(seqs) if seqs else None,
            max_num_batched_tokens=int(tokens) if tokens else None,
            release=run["engine_version"],
            memory_fraction=float(fraction) if fraction and run["engine"] != "vllm" else None,
            cuda_graph_max_bs=int(graphs) if graphs else None,
            attention_backend=option(command, "--attention-backend"),
            # A run without a release scheduled as its command says (not as the current
            # releases do, which is what a plan without one assumes).
            async_scheduling=async_scheduling(
                run["engine"],
                run["engine_version"],
                "--async-scheduling" in command and "--no-async-scheduling" not in command,
            ),
        )
        kernel = mxfp4_failure(deployment, run["engine"])
        if kernel:
            return f"no kernel: {kernel}"
        failure = replica_failure(deployment, prediction, run["engine"])
        if failure:
            return f"no KV pool: {failure}"
        costs, limits, _ = replica_inputs(deployment, prediction, run["engine"])
    except SizingError as exc:
        return f"{exc.field}: {exc.message}"
    return Prepared(costs=costs, limits=limits, architecture=gpu.architecture)


def predict_run(
    run: dict[str, Any],
    prepared: Prepared | str | None = None,
    sharegpt_shape: float | None = None,
    **factors: Any,
) -> RunResult:
    """``prepared``: ``prepare(run)`` done before; ``factors``: replace the fitted constants
    (``efficiency_for``'s keyword arguments; the calibration script's search), and
    ``sharegpt_shape`` the ShareGPT lengths' Weibull shape."""
    base = _base(run)
    ready = prepare(run) if prepared is None else prepared
    if isinstance(ready, str):
        return msgspec.structs.replace(base, skipped=ready)
    engine: Engine = run["engine"]
    try:
        eff = efficiency_for(ready.architecture, engine, **factors)
        w = workload_of(run)
        policy = POLICIES[engine]
        if "no-enable-prefix-caching" in run["serve_command"] + " ".join(run["notes"]):
            policy = msgspec.structs.replace(policy, prefix_caching=False)
        out = benchmark(ready.costs, eff, ready.limits, w, policy, sharegpt_shape)
    except SizingError as exc:
        return msgspec.structs.replace(base, skipped=f"{exc.field}: {exc.message}")
    return msgspec.structs.replace(
        base,
        predicted_output_tokens_per_s=out.output_tokens_per_s,
        predicted_tpot_s=out.tpot_s,
        predicted_ttft_s=out.ttft_s,
        bottleneck=out.bottleneck,
        running_batch=out.running_batch,
    )


def figures(results: list[RunResult]) -> HalfFigures:
    errs = [e for r in results if (e := r.errors()) is not None]
    if not errs:
        return HalfFigures(
            runs=0,
            skipped=len(results),
            median_output_error=0,
            median_tpot_error=0,
            median_ttft_error=0,
            share_within=0,
            meets_bar=False,
        )
    out = statistics.median(abs(e[0]) for e in errs)
    tpot = statistics.median(abs(e[1]) for e in errs)
    ttft = statistics.median(abs(e[2]) for e in errs)
    within = sum(1 for e in errs if abs(e[0]) <= WITHIN and abs(e[1]) <= WITHIN) / len(errs)
    return HalfFigures(
        runs=len(errs),
        skipped=len(results) - len(errs),
        median_output_error=out,
        median_tpot_error=tpot,
        median_ttft_error=ttft,
        share_within=within,
        meets_bar=out <= MEDIAN_BAR and tpot <= MEDIAN_BAR and within >= WITHIN_SHARE_BAR,
    )


def report(directory: Path = RUNS_DIR) -> list[RunResult]:
    return [predict_run(run) for run in load_runs(directory)]
