"""Reading vLLM start-up logs (service/verify/startup_log.py): the numbers each line carries.

Expected values are read off the log lines by hand (GiB x 2^30, rounded to the byte)."""

import json
from pathlib import Path

import pytest

from service.sizing.errors import SizingError
from service.verify.startup_log import parse_nvidia_smi, parse_startup_log

GIB = 2**30
MIB = 2**20
CASES = Path(__file__).resolve().parents[2] / "service" / "accuracy" / "cases" / "vllm_logs"


def _log(case: str) -> str:
    return "\n".join(json.loads((CASES / f"{case}.json").read_text())["log_lines"])


def test_v0_memory_profile_lines() -> None:
    # vLLM PR #10511 (V0, H100): one worker.py line per quantity.
    log = parse_startup_log(_log("vllm-pr10511-h100-llama-3-8b-tp1"))
    assert log.model == "meta-llama/Meta-Llama-3-8B"  # from "vllm serve <model>"
    assert log.total_gpu_memory_bytes == round(79.22 * GIB)
    assert log.gpu_memory_utilization == 0.90
    assert log.weights_bytes == round(14.96 * GIB)
    assert log.non_torch_bytes == round(1.79 * GIB)
    assert log.activation_bytes == round(1.26 * GIB)
    assert log.kv_cache_bytes == round(53.29 * GIB)
    assert log.kv_cache_tokens is None and not log.failed
    # total, utilisation, weights, non-torch, activation, available_kv_cache_memory: six lines
    # ("the current vLLM instance can use" and the command line carry no budget term).
    assert log.matched_lines == 6


def test_v0_failure_with_one_line_profile() -> None:
    # vLLM issue #10517 (V0, RTX 3090, 29,000-token context): weights in "GB", the one-line
    # profiling summary, the block count, the concurrency line and the max-seq-len failure.
    log = parse_startup_log(_log("vllm-10517-rtx3090-llama-3.1-8b-29k-fails"))
    assert log.weights_bytes == round(14.9888 * GIB)
    assert log.total_gpu_memory_bytes == round(23.58 * GIB)
    assert log.non_torch_bytes == round(0.35 * GIB)
    assert log.kv_cache_bytes == round(2.89 * GIB)
    assert log.gpu_memory_utilization == 0.90
    assert log.gpu_blocks == 1478
    assert (log.concurrency_tokens, log.max_concurrency) == (29_000, 0.82)
    assert log.failed and log.failure is not None
    assert log.failure.startswith("The model's max seq len (29000) is larger")
    assert log.matched_lines == 5


def test_v1_lines_and_echoed_flags() -> None:
    # dennislee22 A100 (V1 0.10.1.1): the non-default args dict and the V1 lines.
    log = parse_startup_log(_log("dennislee-a100-qwen2-7b-util0.5"))
    assert (log.max_model_len, log.gpu_memory_utilization) == (16_384, 0.5)
    assert log.max_num_batched_tokens == 2048
    assert log.weights_bytes == round(14.2488 * GIB)
    assert log.kv_cache_bytes == round(24.83 * GIB)
    assert log.kv_cache_tokens == 464_848
    assert (log.concurrency_tokens, log.max_concurrency) == (16_384, 28.37)
    assert log.cuda_graph_bytes == round(0.50 * GIB)
    assert not log.failed


def test_v1_too_small_failure() -> None:
    line = (
        "ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(4.50 GiB)."
    )
    log = parse_startup_log(line)
    assert log.failed and log.max_model_len == 131_072
    assert log.kv_cache_bytes == round(4.5 * GIB)
    assert (
        log.failure
        == "16.00 GiB of KV cache needed for one request of 131072 tokens, 4.50 GiB available"
    )


def test_nvidia_smi_csv_in_mib() -> None:
    csv = (
        "index, name, memory.used [MiB], memory.total [MiB]\n"
        "0, NVIDIA H100 80GB HBM3, 73042 MiB, 81559 MiB\n"
    )
    (gpu,) = parse_nvidia_smi(csv)
    assert (gpu.index, gpu.name) == (0, "NVIDIA H100 80GB HBM3")
    assert (gpu.memory_used_bytes, gpu.memory_total_bytes) == (73_042 * MIB, 81_559 * MIB)


def test_text_without_a_startup_line_names_the_expected_ones() -> None:
    with pytest.raises(SizingError) as e:
        parse_startup_log("hello\nworld")
    assert e.value.field == "log"
    assert "Available KV cache memory: X GiB" in str(e.value)


def test_the_version_in_each_log_generation() -> None:
    # V0 / early V1 print "vLLM API server version X"; the engine echo says "(vX)"; from 0.19 the
    # API server prints an ASCII banner ending in "version X" (tokenkaki's 0.19.1 log).
    lines = {
        "INFO 06-10 10:57:31 [api_server.py:1395] vLLM API server version 0.9.2": "0.9.2",
        "INFO [core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: m=": "0.19.0",
        "(APIServer pid=1) INFO [utils.py:299]  ▄▄ ▄█ █ ▀▄▀ █  version 0.19.1": "0.19.1",
    }
    for line, version in lines.items():
        parsed = parse_startup_log(line + "\nGPU KV cache size: 1,000 tokens")
        assert parsed.vllm_version == version


def test_command_line_flags_for_pipeline_and_quantization() -> None:
    # A pasted command line names the split and the quantization even when no config echo
    # follows (vLLM issue #13074 pastes only its command and the V0 memory lines).
    log = parse_startup_log(
        "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --pipeline-parallel-size 2 -q fp8\n"
        "INFO worker.py:267] model weights take 39.66GiB; non_torch_memory takes 2.53GiB"
    )
    assert (log.tensor_parallel_size, log.pipeline_parallel_size) == (8, 2)
    assert log.quantization == "fp8"
    # A flag inside a word is not a flag.
    other = parse_startup_log("run-pp 4 model-q awq\nModel loading took 1.00 GiB")
    assert (other.pipeline_parallel_size, other.quantization) == (None, None)


def test_cpu_offload_from_the_command_line_or_the_non_default_args() -> None:
    # --cpu-offload-gb is GiB per GPU (vLLM multiplies by 1024**3): 30 -> 32,212,254,720 B.
    # The line is vLLM issue #15196's.
    flag = parse_startup_log(
        "--max-model-len=100000 --enforce-eager --cpu-offload-gb=30\n"
        "INFO 03-13 01:31:55 model_runner.py:1115] Loading model weights took 0.8008 GB"
    )
    assert flag.cpu_offload_bytes == 32_212_254_720
    echoed = parse_startup_log(
        "non-default args: {'model': 'm', 'cpu_offload_gb': 2.5}\nModel loading took 1.00 GiB"
    )
    assert echoed.cpu_offload_bytes == 2_684_354_560
    assert parse_startup_log("Model loading took 1.00 GiB").cpu_offload_bytes is None


def test_a_w4a16_experts_checkpoint_is_not_taken_for_fp8() -> None:
    # compressed-tensors echoes only "quantization=compressed-tensors"; the MoE method line
    # says the experts are W4A16 (the 2x L40S Qwen3-Next log of vLLM 0.13.0).
    log = parse_startup_log(
        "Initializing a V1 LLM engine (v0.13.0) with config: quantization=compressed-tensors, "
        "enforce_eager=False\n"
        "INFO [compressed_tensors_moe.py:193] Using CompressedTensorsWNA16MarlinMoEMethod\n"
        "INFO [gpu_model_runner.py:3659] Model loading took 22.5313 GiB memory"
    )
    assert log.quantization == "w4a16-experts"
    fp8 = parse_startup_log(
        "with config: quantization=compressed-tensors\nModel loading took 8 GiB"
    )
    assert fp8.quantization == "compressed-tensors"


def test_the_compile_cache_state_a_v2_log_shows() -> None:
    # vLLM 0.26.0 on a 16 GB card: torch.compile loaded from its cache -> warm; the RunPod
    # Qwen3-8B first start compiled -> cold; a log silent on it leaves it to the request.
    warm = parse_startup_log(
        "[backends.py:292] Directly load the compiled graph(s) for compile range (1, 32768) "
        "from the cache, took 0.648 s\n[gpu_worker.py:560] Available KV cache memory: 11.94 GiB"
    )
    assert warm.compile_cache == "warm"
    cold = parse_startup_log(
        "[backends.py:393] Compiling a graph for compile range (1, 8192) takes 26.64 s\n"
        "[gpu_worker.py:563] Available KV cache memory: 4.92 GiB"
    )
    assert cold.compile_cache == "cold"
    assert parse_startup_log("Available KV cache memory: 1.00 GiB").compile_cache is None


def test_bitsandbytes_and_lora_from_the_log() -> None:
    # The Unsloth T4 run (0.7.2 V0): quantization=bitsandbytes in the engine's config echo,
    # and the LoRA manager's "Using PunicaWrapperGPU" line.
    log = parse_startup_log(
        _log("unknownrepo-t4-llama-3.1-8b-instruct-bnb4-unsloth-512-util0.6-lora32-v0.7.2")
    )
    assert (log.quantization, log.enable_lora, log.vllm_version) == ("bitsandbytes", True, "0.7.2")
    # Command-line flags and the non-default args dict.
    flags = parse_startup_log(
        "vllm serve m --enable-lora --max-lora-rank 64 --max-loras 4\nModel loading took 1 GiB"
    )
    assert (flags.enable_lora, flags.max_lora_rank, flags.max_loras) == (True, 64, 4)
    args = parse_startup_log(
        "non-default args: {'enable_lora': True, 'max_lora_rank': 32}\nModel loading took 1 GiB"
    )
    assert (args.enable_lora, args.max_lora_rank, args.max_loras) == (True, 32, None)
    assert parse_startup_log("Model loading took 1 GiB").enable_lora is None


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("GPU KV cache size: 1,192,160 tokens", "kv_cache_tokens", 1_192_160),
        ("Maximum concurrency for 16,384 tokens per request: 72.76x", "max_concurrency", 72.76),
        ("Available KV cache memory: .5 GiB", "kv_cache_bytes", GIB // 2),
        ("Available KV cache memory: 0.95 GiB", "kv_cache_bytes", round(0.95 * GIB)),
        # A separator straight after the number belongs to the sentence, not the number.
        ("# GPU blocks: 6487, # CPU blocks: 4096", "gpu_blocks", 6487),
    ],
)
def test_printed_numbers_read_with_their_separators(line: str, field: str, value: object) -> None:
    assert getattr(parse_startup_log(line), field) == value


@pytest.mark.parametrize(
    "line",
    [
        # 400 digits: an infinite float (int() of it raised OverflowError: a 500 on /verify).
        "# GPU blocks: " + "9" * 400,
        # 5,000 digits: past Python's 4,300-digit int limit (ValueError).
        "tensor_parallel_size=" + "9" * 5000,
        "Available KV cache memory: " + "1" * 400 + " GiB",
    ],
)
def test_a_number_too_long_to_be_printed_by_vllm_is_a_problem_on_the_log(line: str) -> None:
    with pytest.raises(SizingError) as info:
        parse_startup_log(line)
    assert info.value.field == "log"
    assert "is not one vLLM prints" in info.value.message


def test_an_overlong_nvidia_smi_number_is_a_problem_on_its_csv() -> None:
    csv = (
        "index, name, memory.used [MiB], memory.total [MiB]\n0, H100, " + "9" * 400 + " MiB, 1 MiB"
    )
    with pytest.raises(SizingError) as info:
        parse_nvidia_smi(csv)
    assert info.value.field == "nvidia_smi"


def test_blank_and_very_short_lines_are_skipped_but_a_short_flag_is_read() -> None:
    # Lines under four characters carry nothing the parser reads; "-q x" (four) still counts.
    log = parse_startup_log("\n\n ab\n-q fp8\n\nGPU KV cache size: 1,000 tokens\n")
    assert (log.quantization, log.kv_cache_tokens, log.matched_lines) == ("fp8", 1000, 1)


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\u2028", "\x0c", "\n"])
def test_a_line_ends_at_any_line_break(newline: str) -> None:
    # The failure is the line itself, stripped: it ends at the break, whichever str.splitlines
    # takes (Windows' "\r\n", a form feed, U+2028), and the next line is read on its own.
    failure = "The model's max seq len (4096) is larger than the maximum number of tokens"
    text = newline.join([failure, "GPU KV cache size: 2,000 tokens", ""])
    log = parse_startup_log(text)
    assert (log.failure, log.kv_cache_tokens, log.matched_lines) == (failure, 2000, 2)
