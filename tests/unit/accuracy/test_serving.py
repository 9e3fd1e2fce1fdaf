"""The serving model against the public benchmark runs (service/accuracy/serving.py).

The bar (issue 17, point 5), on the held-out half only: median absolute error <= 15% on output
tokens/s and on mean TPOT, and >= 80% of runs within 25% on both.
"""

import re
from pathlib import Path

import pytest

from service.__main__ import main
from service.accuracy.serve_command import option
from service.accuracy.serving import figures, load_runs, prepare, report, workload_of

HELD_OUT_FIGURES = (
    "held-out half, with the constants bench/serving_calibration.py fits on the calibration half "
    "(step-by-step benchmark simulation; prefill activation traffic, host/GPU overlap per engine, "
    "served-GEMM scales per generation; 4 us a kernel, 40 us a running sequence on the host, 40 us "
    "a kernel launched in SGLang's and TensorRT-LLM's eager prefill steps, half of a kernel's "
    "shorter side added to its longer, dense FP8 GEMMs at 1.3x the BF16 rate, each engine's own "
    "KV pool rule, dense MXFP4 sized, its GEMMs at the FP4 peak, an untied input embedding "
    "gathered, not streamed): 46 runs (4 skipped), median |error| output tok/s 16%, "
    "mean TPOT 15%; both within 25%: 59%; of them, the 22 collected on 2026-12-02 from pages "
    "never seen before: 12%, 18%, 55%. Calibration half: 84 runs, 15%, 16%, 63% (before the "
    "embedding was gathered: held out 46 runs, 14%, 15%, 54%, and 41 without the five RTX 4090 "
    "runs, 13%, 12%, 54%; calibration 14%, 17%, 62%; at the FP8 peak: 15%, 17%, 62%; before "
    "dense MXFP4: held out 40 runs, 55%; calibration 83 runs, 14%, 17%, 61%; with the vLLM "
    "method's pool for SGLang: held out 13%, 14%, 50%, steady runs 74%, 1,000-prompt bursts 18%; "
    "calibration 79 runs, 14%, 16%, 63%; without the eager prefill and the dense FP8 scale: held "
    "out 13%, 15%, 52%; calibration 14%, 16%, 61%). Before this model (160 us a running "
    "sequence): 23 held-out runs, 21%, 9%, 48%; before the step simulation: 18 runs, 51%, 71%, "
    "11%"
)


@pytest.mark.xfail(strict=True, reason=f"bar not met: {HELD_OUT_FIGURES}")
def test_the_held_out_half_meets_the_bar() -> None:
    results = report()
    calibration = figures([r for r in results if r.split == "calibration"])
    held_out = figures([r for r in results if r.split == "held_out"])
    print(f"calibration: {calibration}")
    print(f"held out: {held_out}")
    assert held_out.runs >= 15
    assert held_out.median_output_error <= 0.15
    assert held_out.median_tpot_error <= 0.15
    assert held_out.share_within >= 0.80


def test_every_run_is_printed_once_with_its_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["accuracy", "--serving"]) == 0
    text = capsys.readouterr().out
    for run in load_runs():
        (line,) = [line for line in text.splitlines() if line.startswith(run["id"] + " ")]
        assert run["split"] in line
    assert "held_out:" in text and "bar:" in text


def test_runs_the_catalogue_cannot_describe_are_skipped_with_the_reason() -> None:
    # Ministral 3 14B is not a catalogue model. Every run's GPU is a catalogue GPU since MI355X
    # shipped (migration 0014), so a run without a slug is made up here.
    by_run = {r.run: r for r in report()}
    assert by_run["vllm-recipes-ministral-3-14b-mi300x-vllm-tp1-c32"].skipped == (
        "model not in the catalogue"
    )
    run = next(r for r in load_runs() if r["id"].startswith("vllm-recipes-llama-3.3-70b-rocm"))
    assert prepare({**run, "gpu": {"name": "MI355", "slug": None}}) == "GPU not in the catalogue"


def test_the_mi355_runs_are_predicted_on_the_catalogue_gpu() -> None:
    # The MI355 recipe runs name the catalogue's MI355X since 0014; none is skipped for its GPU.
    # The FP8 Llama 3.3 70B run (calibration half) is predicted, and so is the dense MXFP4
    # checkpoint (AMD Quark's, held packed on the MI355X).
    by_run = {r.run: r for r in report()}
    mi355 = [run for run in load_runs() if "-rocm-mi355-" in run["id"]]
    assert len(mi355) == 4
    for run in mi355:
        assert run["gpu"]["slug"] == by_run[run["id"]].gpu == "mi355x"
        assert by_run[run["id"]].skipped != "GPU not in the catalogue", run["id"]
    fp8 = by_run["vllm-recipes-llama-3.3-70b-rocm-mi355-vllm-fp8-tp1-c64"]
    assert fp8.skipped is None and fp8.predicted_output_tokens_per_s is not None
    mxfp4 = by_run["vllm-recipes-llama-3.3-70b-rocm-mi355-vllm-mxfp4-tp1-c64"]
    assert mxfp4.skipped is None and mxfp4.predicted_output_tokens_per_s is not None
    # Held packed: Llama 3.1 70B's 70,553,706,496 weights less its embedding and head,
    # 2 x 128,256 x 8,192 = 2,101,346,304 (16-bit: 4,202,692,608 B), at 17/32 B:
    # 68,452,360,192 x 17 / 32 = 36,365,316,352 B; plus the rotary cache, 131,072 x 128 x 2 B
    # = 33,554,432: 40,601,563,392 B held, of which a step reads all but the input embedding
    # (gathered row by row: 128,256 x 8,192 x 2 B = 2,101,346,304), 38,500,217,088 B,
    # multiplied at the MI355X's FP4 peak (10,066.4 TFLOPS; attention at the FP8 one, 5,033.2).
    ready = prepare(next(r for r in mi355 if r["id"] == mxfp4.run))
    assert not isinstance(ready, str)
    assert ready.costs.dense_weight_bytes == (
        36_365_316_352 + 4_202_692_608 + 33_554_432 - 2_101_346_304
    )
    assert (ready.costs.fp8_gemms, ready.costs.peak_flops_per_s) == (True, 5033.2e12)
    assert ready.costs.fp4_dense_flops_per_s == 10066.4e12


def test_the_accuracy_page_is_the_markdown_commands_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # docs/serving-accuracy.md is `python -m service accuracy --serving --markdown` > the file:
    # it must never drift from what the model predicts.
    assert main(["accuracy", "--serving", "--markdown"]) == 0
    page = Path(__file__).resolve().parents[3] / "docs" / "serving-accuracy.md"
    assert capsys.readouterr().out == page.read_text(encoding="utf-8")


def test_the_newest_batch_of_held_out_runs_is_summed_up_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The held-out runs collected on the newest day come from pages no one had looked at when
    # the model was fitted: the last summary line counts them, and only them.
    runs = load_runs()
    newest = max(r["collected"] for r in runs)
    expected = sum(1 for r in runs if r["split"] == "held_out" and r["collected"] == newest)
    assert main(["accuracy", "--serving"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    prefix = f"held_out, collected {newest} (never seen before): "
    assert last.startswith(prefix)
    predicted, skipped = (int(n) for n in re.findall(r"(\d+) runs \((\d+) skipped\)", last)[0])
    assert predicted + skipped == expected > 0


def test_a_run_without_totals_takes_the_mean_of_the_clients_length_draw() -> None:
    # InferenceMAX records keep no totals. Its client draws each length uniformly from
    # int(L x 0.8) to L: for 8192 that is 6553..8192, mean (6553 + 8192) / 2 = 7372.5; for
    # 1024, 819..1024, mean 921.5. The prompts are the command's 10 x concurrency.
    run = {
        "total_input_tokens": None,
        "total_output_tokens": None,
        "successful_requests": None,
        "num_prompts": 640,
        "input_tokens": 8192,
        "output_tokens": 1024,
        "max_concurrency": 64,
        "dataset": "random",
    }
    w = workload_of(run)
    assert (w.input_tokens, w.output_tokens, w.num_prompts) == (7372.5, 921.5, 640)
    assert w.concurrency == 64
    assert (w.output_distribution, w.length_low_ratio) == ("uniform", 0.8)


def test_random_lengths_follow_the_client_that_drew_them() -> None:
    # vllm bench serve keeps random lengths fixed; sglang.bench_serving draws them uniformly
    # from ratio x L to L, ratio 0 unless --random-range-ratio says otherwise.
    base = {
        "total_input_tokens": 6100,
        "total_output_tokens": 4210,
        "successful_requests": 10,
        "num_prompts": 10,
        "max_concurrency": 1,
        "dataset": "random",
    }
    vllm = workload_of({**base, "bench_tool": "vllm bench serve", "bench_command": "vllm bench"})
    assert vllm.output_distribution == "fixed"
    sgl = {**base, "bench_tool": "sglang.bench_serving", "bench_command": "--num-prompts 10"}
    assert (workload_of(sgl).output_distribution, workload_of(sgl).length_low_ratio) == (
        "uniform",
        0.0,
    )
    set_ratio = {**sgl, "bench_command": "--random-range-ratio 0.5 --num-prompts 10"}
    assert workload_of(set_ratio).length_low_ratio == 0.5
    assert (workload_of(sgl).input_tokens, workload_of(sgl).output_tokens) == (610, 421)


def test_a_runs_expert_parallelism_is_read_from_its_serve_command() -> None:
    # TensorRT-LLM's GPUStack burst says --tp_size 8 --ep_size 8: 256 / 8 = 32 whole experts
    # a GPU. InferenceMAX's scripts pass --ep_size=$EP_SIZE / --ep-size $EP_SIZE with EP_SIZE=1
    # (their records: decode_ep 1), which is not a number in the command: no expert
    # parallelism, each engine's default.
    runs = {r["id"]: r for r in load_runs()}
    ep = prepare(runs["gpustack-deepseek-r1-h200-tensorrt-llm-deepseek-r1-0528-tp8-burst1000"])
    assert not isinstance(ep, str) and ep.costs.expert_parallel == 8
    for run_id in (
        "inferencemax-b200-tensorrt-llm-dsr1-fp8-tp8-8k1k-c64",
        "inferencemax-b200-sglang-dsr1-fp8-tp8-1k1k-c64",
    ):
        ready = prepare(runs[run_id])
        assert not isinstance(ready, str) and ready.costs.expert_parallel == 1


def test_sglang_runs_take_sglangs_own_kv_pool() -> None:
    # gpt-oss-120b on one H100 in SGLang 0.5.3rc0, no --mem-fraction-static: PR #7054's
    # default, (81,559 - 10,240) / 81,559 -> 0.874, of the harness's total (nvidia-smi's
    # 85,520,809,984 B) less vLLM 0.11's 139,586,437 B outside torch, less the method's
    # 69,061,110,400 B of MXFP4 weights: 0.874 x 85,381,223,547 - 69,061,110,400 =
    # 5,562,078,980 B, over 73,728 B a token = 75,440 tokens. vLLM itself has no pool there.
    runs = {r["id"]: r for r in load_runs()}
    sglang = prepare(runs["gpustack-gpt-oss-120b-h100-sglang-gpt-oss-120b-tp1-burst1000"])
    assert not isinstance(sglang, str) and sglang.limits.kv_pool_tokens == 75_440
    vllm = prepare(runs["gpustack-gpt-oss-120b-h100-vllm-gpt-oss-120b-tp1-burst1000"])
    assert isinstance(vllm, str) and vllm.startswith("no KV pool: No available memory")


def test_a_serve_commands_words_are_read_as_the_engine_reads_them() -> None:
    command = "python3 -m sglang.launch_server --attention-backend aiter --tp $TP"
    assert option(command, "--attention-backend") == "aiter"
    assert option(command, "--tp") is None  # a shell variable: unset
    assert option("--attention-backend=fa3", "--attention-backend") == "fa3"
