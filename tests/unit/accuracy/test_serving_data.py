"""The public serving-benchmark runs in service/accuracy/cases/serving (issue 17, point 5:
accuracy data).

Each file is one run copied from a public source: the commands, the setup and the result block's
exact lines. These tests check the records against their own lines (every recorded number is the
number printed), the calibration/held-out rule of service/accuracy/cases/serving/README.md, and
the coverage the issue asks for. No service code reads the files yet.
"""

import hashlib
import json
import math
import re
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = ROOT / "service" / "accuracy" / "cases" / "serving"
GPUS_JSON = ROOT / "service" / "catalogue" / "data" / "gpus.json"

FIELDS = {
    "id", "split", "collected", "source", "engine", "engine_version", "bench_tool", "gpu",
    "gpu_count", "tensor_parallel", "pipeline_parallel", "model", "architecture", "weight_format",
    "kv_format", "serve_command", "bench_command", "bench_command_template", "dataset",
    "input_tokens", "output_tokens", "total_input_tokens", "total_output_tokens",
    "successful_requests", "num_prompts", "max_concurrency", "request_rate", "measured", "lines",
    "notes",
}  # fmt: skip
# Fields a source may leave out: null there, and a note says what the source does say.
MAY_BE_MISSING = {"engine_version", "weight_format", "kv_format", "bench_command"}
ENGINES = {"vllm", "sglang", "tensorrt-llm"}
# vLLM's client before it became `vllm bench serve` was benchmarks/benchmark_serving.py.
# InferenceMAX keeps no result block: each run is one JSON record of its results API
# (README.md, "InferenceMAX"), its numbers checked against the record's fields instead.
JSON_RECORD = "InferenceMAX benchmark_serving (JSON record)"
BENCH_TOOLS = {"vllm bench serve", "benchmark_serving.py", "sglang.bench_serving", JSON_RECORD}
# The record's framework key -> the engine (InferenceMAX's "trt" is TensorRT-LLM).
RECORD_ENGINES = {"sglang": "sglang", "vllm": "vllm", "trt": "tensorrt-llm"}
HEADER = "============ Serving Benchmark Result ============"

# The result block's label (as vllm bench serve / sglang.bench_serving print it, compared
# without case and with runs of spaces folded) -> the record's field.
MEASURED_LABELS = {
    "benchmark duration (s):": "duration_s",
    "request throughput (req/s):": "request_throughput_per_s",
    "output token throughput (tok/s):": "output_tokens_per_s",
    "total token throughput (tok/s):": "total_tokens_per_s",
    "mean ttft (ms):": "mean_ttft_ms",
    "median ttft (ms):": "median_ttft_ms",
    "p99 ttft (ms):": "p99_ttft_ms",
    "mean tpot (ms):": "mean_tpot_ms",
    "median tpot (ms):": "median_tpot_ms",
    "p99 tpot (ms):": "p99_tpot_ms",
    "mean itl (ms):": "mean_itl_ms",
    "median itl (ms):": "median_itl_ms",
    "p99 itl (ms):": "p99_itl_ms",
    "mean e2el (ms):": "mean_e2el_ms",
    "median e2el (ms):": "median_e2el_ms",
    "p99 e2el (ms):": "p99_e2el_ms",
    # sglang.bench_serving names end-to-end latency in words.
    "mean e2e latency (ms):": "mean_e2el_ms",
    "median e2e latency (ms):": "median_e2el_ms",
    "p99 e2e latency (ms):": "p99_e2el_ms",
}
# The record's field -> the labels either client prints it under (vllm bench serve first).
COUNT_LABELS = {
    "successful_requests": ("successful requests:",),
    "total_input_tokens": ("total input tokens:",),
    "total_output_tokens": ("total generated tokens:",),
    "max_concurrency": ("maximum request concurrency:", "max request concurrency:"),
}
_LINE = re.compile(r"^\s*(?P<label>[^:]+:)\s+(?P<value>\S+)\s*$")


def _runs() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA_DIR.glob("*.json"))]


RUNS = _runs()


def _printed(lines: list[str]) -> dict[str, str]:
    """Label -> the value string as printed, for the block's 'label:   value' lines."""
    out: dict[str, str] = {}
    for line in lines:
        m = _LINE.match(line)
        if m:
            label = re.sub(r"\s+", " ", m["label"].strip().lower())
            assert label not in out, f"label printed twice: {label}"
            out[label] = m["value"]
    return out


def _ids(run: dict) -> str:
    return str(run["id"])


def test_the_folder_holds_runs_with_unique_ids_named_after_their_files() -> None:
    assert RUNS
    names = sorted(p.stem for p in DATA_DIR.glob("*.json"))
    assert names == sorted(r["id"] for r in RUNS)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_every_run_has_the_required_fields_with_positive_numbers(run: dict) -> None:
    assert set(run) == FIELDS
    # A JSON record keeps no totals and no count of successful requests.
    totals = {"total_input_tokens", "total_output_tokens", "successful_requests"}
    for field in FIELDS - MAY_BE_MISSING - {
        "input_tokens", "output_tokens", "max_concurrency", "bench_command_template",
    } - (totals if run["bench_tool"] == JSON_RECORD else set()):  # fmt: skip
        assert run[field] is not None, field
    assert run["engine"] in ENGINES
    assert run["bench_tool"] in BENCH_TOOLS
    # The day the run was copied in: ISO 8601, so the newest batch can be told apart.
    assert date.fromisoformat(run["collected"]).isoformat() == run["collected"]
    assert run["split"] in {"calibration", "held_out"}
    assert run["architecture"] in {"dense", "moe"}
    src = run["source"]
    assert src["url"].startswith("https://") and src["group"] and src["kind"]
    if src["repository"] is not None:
        # A file in a public repository: pinned to the commit read, and to the block's line.
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]) and src["path"]
        assert isinstance(src["line"], int) and src["line"] > 0
    else:
        # A page read through the search index: its id, so the same text can be read again.
        assert re.fullmatch(r"[0-9]+", src["index_id"])
    assert run["gpu"]["name"]
    for field in ("gpu_count", "tensor_parallel", "pipeline_parallel", "successful_requests",
                  "num_prompts", "total_input_tokens", "total_output_tokens"):  # fmt: skip
        if run[field] is None and run["bench_tool"] == JSON_RECORD and field in totals:
            assert any(field in note for note in run["notes"]), f"{field} missing without a note"
            continue
        assert isinstance(run[field], int) and run[field] > 0, field
    # The model runs on tensor x pipeline GPUs, never more than the machine has.
    assert run["tensor_parallel"] * run["pipeline_parallel"] <= run["gpu_count"]
    if run["successful_requests"] is not None:
        assert run["successful_requests"] <= run["num_prompts"]
    for field in ("input_tokens", "output_tokens", "max_concurrency"):
        assert run[field] is None or (isinstance(run[field], int) and run[field] > 0), field
    assert run["request_rate"] == "inf" or run["request_rate"] > 0
    assert run["measured"], "no measured numbers"
    for name, value in run["measured"].items():
        assert isinstance(value, float | int) and math.isfinite(value) and value > 0, name
    for field in MAY_BE_MISSING:
        # A field left out says why in the notes, or (kv_format) the source simply sets none.
        if run[field] is None and field != "kv_format":
            assert any(field in note for note in run["notes"]), f"{field} missing without a note"
    # One of the commands is there to say what was measured: the serving side always, the
    # client side as stated or as the source's template with the case named in a note.
    assert run["bench_command"] or run["bench_command_template"] or run["notes"]


def _check_json_record(run: dict) -> None:
    """An InferenceMAX run: `lines` is its JSON record; every measured number is the record's
    value, seconds x 1000 for the times and the per-GPU throughput x the GPUs for tokens/s."""
    record = json.loads("\n".join(run["lines"]))
    m = record["metrics"]
    gpus = record["decode_tp"]
    expected = {
        f"{stat}_{metric}_ms": m[f"{stat}_{metric}"] * 1000
        for stat in ("mean", "median", "p99")
        for metric in ("ttft", "tpot", "itl", "e2el")
        if f"{stat}_{metric}" in m
    }
    expected["output_tokens_per_s"] = m["output_tput_per_gpu"] * gpus
    expected["total_tokens_per_s"] = m["tput_per_gpu"] * gpus
    assert run["measured"] == expected
    # The setup the record states: one node, no speculative decoding, no disaggregation, no
    # expert parallelism (the scripts' EP_SIZE is 1) or DP attention (not modelled), prefill TP
    # = decode TP.
    assert record["spec_method"] == "none" and not record["disagg"]
    assert not record["is_multinode"]
    assert record["prefill_ep"] == record["decode_ep"] == 1
    assert not record["prefill_dp_attention"] and not record["decode_dp_attention"]
    assert record["prefill_tp"] == gpus == run["tensor_parallel"] == run["gpu_count"]
    assert RECORD_ENGINES[record["framework"]] == run["engine"]
    assert record["precision"] == run["weight_format"]
    assert (record["isl"], record["osl"]) == (run["input_tokens"], run["output_tokens"])
    # The scripts send ten prompts per unit of concurrency (--num-prompts $((CONC * 10))).
    assert record["conc"] == run["max_concurrency"] and run["num_prompts"] == 10 * record["conc"]
    assert run["engine_version"] in record["image"]
    assert run["source"]["group"].endswith(
        f"#{record['hardware']}-{record['framework']}-{record['model']}-{record['precision']}"
        f"-tp{gpus}"
    )


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_every_recorded_number_is_the_number_printed_in_the_runs_lines(run: dict) -> None:
    if run["bench_tool"] == JSON_RECORD:
        _check_json_record(run)
        return
    lines = run["lines"]
    assert lines[0].strip() == HEADER
    assert set(lines[-1].strip()) == {"="}
    printed = _printed(lines)
    for field in set(MEASURED_LABELS.values()):
        values = [v for label, v in printed.items() if MEASURED_LABELS.get(label) == field]
        assert len(values) <= 1, f"{field} printed twice"
        if values:
            # The block prints it, so the record holds it, as the same number.
            assert field in run["measured"], f"{field} printed but not recorded"
            assert run["measured"][field] == float(values[0]), field
        else:
            assert field not in run["measured"], f"{field} recorded but not printed"
    assert set(run["measured"]) <= set(MEASURED_LABELS.values())
    for field, labels in COUNT_LABELS.items():
        values = [printed[label] for label in labels if label in printed]
        if values and values[0].isdigit():
            assert run[field] == int(values[0]), field
        elif field == "max_concurrency":
            # No cap in the block: sglang.bench_serving prints "not set", and older vLLM
            # clients print the cap above the header. Either way it is the command's
            # --max-concurrency, and without one every prompt was sent at once.
            cap = re.search(r"--max-concurrency[ =]+(\d+)", run["bench_command"] or "")
            assert run[field] == (int(cap[1]) if cap else None)
        else:
            pytest.fail(f"the block prints no {labels[0]}")
    if "traffic request rate:" in printed:
        # sglang.bench_serving prints the rate it sent at: "inf" or requests/s.
        rate = printed["traffic request rate:"]
        assert run["request_rate"] == (rate if rate == "inf" else float(rate))


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_the_gpu_slug_is_a_catalogue_gpu_or_left_out(run: dict) -> None:
    slugs = {
        g["slug"]
        # migrations 0002, 0013, 0014
        for path in (GPUS_JSON, *(GPUS_JSON.with_name(f"gpus_{r}.json") for r in ("0013", "0014")))
        for g in json.loads(path.read_text(encoding="utf-8"))
    }
    assert run["gpu"]["slug"] is None or run["gpu"]["slug"] in slugs


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_the_split_is_the_parity_of_the_sha256_of_the_source_group(run: dict) -> None:
    # The rule of README.md: calibration when the first byte of sha256(source.group) is even.
    first_byte = hashlib.sha256(run["source"]["group"].encode("utf-8")).digest()[0]
    assert run["split"] == ("calibration" if first_byte % 2 == 0 else "held_out")


def test_no_source_group_straddles_the_two_halves() -> None:
    halves: dict[str, set[str]] = {}
    for run in RUNS:
        halves.setdefault(run["source"]["group"], set()).add(run["split"])
    assert {g: h for g, h in halves.items() if len(h) > 1} == {}


def test_each_source_group_was_collected_on_one_day() -> None:
    # A batch collected later is read as never seen before (the summary's last line): that
    # holds only if none of its pages had runs in an earlier batch.
    days: dict[str, set[str]] = {}
    for run in RUNS:
        days.setdefault(run["source"]["group"], set()).add(run["collected"])
    assert {g: d for g, d in days.items() if len(d) > 1} == {}


def test_both_halves_hold_runs() -> None:
    counts = Counter(r["split"] for r in RUNS)
    assert counts["calibration"] > 0 and counts["held_out"] > 0


def test_the_run_quoted_in_the_issue_is_recorded_as_the_issue_states_it() -> None:
    # Issue 17: Qwen3-8B BF16 on one H100 SXM, vLLM 0.11.0, vllm bench serve ShareGPT,
    # max concurrency 4: mean TPOT 7.38 ms, 497 output tokens/s.
    [run] = [
        r
        for r in RUNS
        if r["model"] == "Qwen/Qwen3-8B"
        and r["gpu"]["slug"] == "h100-sxm"
        and r["engine"] == "vllm"
        and r["max_concurrency"] == 4
        and r["bench_command"] is not None
    ]
    assert run["engine_version"] == "v0.11.0"
    assert run["weight_format"] == "bf16" and run["dataset"] == "sharegpt"
    assert run["tensor_parallel"] == 1 and run["gpu_count"] == 1
    assert run["measured"]["mean_tpot_ms"] == 7.38
    assert round(run["measured"]["output_tokens_per_s"]) == 497


def test_the_runs_cover_what_the_issue_asks_for() -> None:
    # Issue 17 point 5: >= 40 runs, >= 4 GPU types, >= 6 models (dense and MoE among them),
    # TP 1 to 8, concurrency 1 to at least 256, BF16 and FP8.
    assert len(RUNS) >= 40
    assert len({r["gpu"]["slug"] or r["gpu"]["name"] for r in RUNS}) >= 4
    assert len({r["model"] for r in RUNS}) >= 6
    assert {r["architecture"] for r in RUNS} == {"dense", "moe"}
    assert {1, 2, 4, 8} <= {r["tensor_parallel"] for r in RUNS}
    # Only a stated cap counts as a concurrency: a run that sends every prompt at once is not
    # counted at >= 256, however many prompts it sends.
    capped = [r["max_concurrency"] for r in RUNS if r["max_concurrency"] is not None]
    assert min(capped) == 1 and max(capped) >= 256
    assert {"bf16", "fp8"} <= {r["weight_format"] for r in RUNS}
    assert {"vllm", "sglang", "tensorrt-llm"} == {r["engine"] for r in RUNS}
