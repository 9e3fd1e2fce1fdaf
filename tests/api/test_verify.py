"""POST /verify and POST /plan with method vllm, in process against the migrated catalogue."""

import json
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]
CASES = Path(__file__).resolve().parents[2] / "service" / "accuracy" / "cases" / "vllm_logs"


def _log(case: str) -> str:
    return "\n".join(json.loads((CASES / f"{case}.json").read_text())["log_lines"])


async def test_verify_a_real_log(client: Client) -> None:
    # dennislee22 A100 80GB, Qwen2 7B at utilisation 0.5 (vLLM 0.10.1.1): the log says
    # 14.2488 GiB of weights and 464,848 KV tokens for 16,384-token requests (28 conversations).
    body = {
        "log": _log("dennislee-a100-qwen2-7b-util0.5"),
        "model": "qwen2.5-7b",
        "gpu": "a100-80gb",
        "concurrency": 8,
        "engine_version": "v1-0.10",  # the pasted lines do not print the version
    }
    r = await client.post("/verify", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    assert answer["parsed"]["kv_cache_tokens"] == 464_848
    assert answer["parsed"]["max_model_len"] == 16_384
    assert answer["config_used"]["gpu_memory_utilization"] == 0.5
    assert answer["config_used"]["version"] == "v1-0.10"
    tokens = next(d for d in answer["differences"] if d["quantity"] == "kv_cache_tokens")
    # Predicted: (85,899,345,920 - 805,000,000 A100 reserve) x 0.5 = 42,547,172,960 B, less
    # weights 7,615,616,512 x 2 = 15,231,233,024 and the rotary cache 32,768 x 128 x 2 =
    # 8,388,608, activation 2.87 x 256 seqs x 152,064 x 4 B = 446,897,848 and non-torch
    # 139,586,437 -> 26,721,067,043 B of KV; a block is 28 layers x 16 x 2 x 4 heads x 128 x
    # 2 B = 917,504 B -> 29,123 blocks = 465,968 tokens, +0.24%.
    assert (tokens["logged"], tokens["predicted"]) == (464_848, 465_968)
    assert round(tokens["relative_error"], 4) == 0.0024
    # 464,848 // 16,384 = 28 conversations >= 8 users: the plan holds.
    assert answer["plan_short"] is False


async def test_verify_says_the_plan_is_short_and_weights_doubled(client: Client) -> None:
    # A 16-bit 8B (14.96 GiB expected) logging 29.92 GiB: twice the weights; 31,232 tokens of
    # 20,000-token requests hold 1 conversation, fewer than 4 users.
    log = "\n".join(
        [
            "Model loading took 29.92 GiB",
            "Available KV cache memory: 3.81 GiB",
            "GPU KV cache size: 31,232 tokens",
            "Maximum concurrency for 20,000 tokens per request: 1.56x",
        ]
    )
    body = {"log": log, "model": "llama-3.1-8b", "gpu": "h100", "concurrency": 4}
    r = await client.post("/verify", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    weights = next(d for d in answer["differences"] if d["quantity"] == "weights_gib_per_gpu")
    assert weights["severity"] == "problem" and "wrong precision" in weights["likely_cause"]
    # 8,030,261,248 params x 2 B = 16,060,522,496 B and the rotary cache 131,072 x 128 x 2 B =
    # 33,554,432: 16,094,076,928 B = 14.9888 GiB predicted; 29.92 GiB logged is 32,126,355,374
    # B: (16,094,076,928 - 32,126,355,374) / 32,126,355,374 = -49.9%.
    assert (weights["logged"], weights["predicted"]) == (29.92, 14.9888)
    assert round(weights["relative_error"], 4) == -0.499
    # The concurrency line's 20,000 tokens are the context: 31,232 // 20,000 = 1 conversation.
    assert answer["config_used"]["max_model_len"] == 20_000
    users = next(d for d in answer["differences"] if d["quantity"] == "users_at_once")
    assert (users["logged"], users["predicted"], users["severity"]) == (1.0, 4.0, "problem")
    assert answer["plan_short"] is True


async def test_unparseable_log_is_a_422_naming_the_lines(client: Client) -> None:
    r = await client.post(
        "/verify", json={"log": "hello\nworld", "model": "llama-3.1-8b", "gpu": "h100"}
    )
    assert r.status_code == 422
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    assert problem["errors"][0]["field"] == "log"
    assert "GPU KV cache size: N tokens" in problem["errors"][0]["message"]


async def test_plan_method_vllm(client: Client) -> None:
    # Llama 3.1 8B on an H100, 8 users of 8,192 tokens, no version given: the current releases'
    # accounting (0.29+: every model on Model Runner V2) and their default utilisation, 0.92.
    # The catalogue H100: 85,520,809,984 B (nvidia-smi) - 494,000,000 driver reserve =
    # 85,026,809,984 B; x 0.92 = 78,224,665,185; less weights 16,060,522,496 and the rotary
    # cache 131,072 x 128 x 2 = 33,554,432, the first-start peak 4,096 x 343,409 = 1,406,603,264
    # and non-torch 257,698,038 (no graph term on V2) leaves 60,466,286,955 B of KV = 28,832
    # blocks of 2,097,152 B = 461,312 tokens: 56 conversations of 8,192 tokens (28,832 / 512 =
    # 56.31x).
    body = {"model": "llama-3.1-8b", "gpu": "h100", "method": "vllm", "concurrency": 8}
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    plan = r.json()
    assert plan["kind"] == "vllm" and plan["fits"] is True and plan["gpu_count"] == 1
    assert plan["prediction"]["defaults"]["max_num_seqs"] == 1024
    assert plan["prediction"]["version"] == "v2-all"
    assert plan["prediction"]["defaults"]["gpu_memory_utilization"] == 0.92
    assert plan["kv_cache_tokens"] == 461_312
    assert plan["max_concurrency"] == 56.31
    assert "GPU KV cache size: 461,312 tokens" in plan["log_lines"]


async def test_plan_method_vllm_for_a_named_release(client: Client) -> None:
    # vllm_version 0.11.0 selects the 0.8-0.16 accounting: activation 9.71 x 1,024 x 128,256
    # x 4 = 5,101,018,152, non-torch 139,586,437, no graphs: 76,524,128,985 - 16,060,522,496
    # - 33,554,432 - 5,101,018,152 - 139,586,437 = 55,189,447,468 B = 26,316 blocks = 421,056
    # tokens.
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100",
        "method": "vllm",
        "concurrency": 8,
        "vllm": {"vllm_version": "0.11.0"},
    }
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    plan = r.json()
    assert plan["prediction"]["version"] == "v1-0.11"
    assert plan["kv_cache_tokens"] == 421_056
    # A release before the modelled ones is the field's fault.
    body["vllm"] = {"vllm_version": "0.2.7"}
    r = await client.post("/plan", json=body)
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "vllm.vllm_version"


async def test_plan_method_vllm_with_cpu_offload(client: Client) -> None:
    # --cpu-offload-gb large enough for every decoder layer of Llama 3.1 8B (V0 0.7.2): the GPU
    # keeps the embedding and LM head, 2 x 128,256 x 4,096 x 2 B = 2,101,346,304, and the
    # rotary cache 131,072 x 128 x 2 = 33,554,432: 2,134,900,736 B = 1.9883 GiB.
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100",
        "method": "vllm",
        "vllm": {"vllm_version": "0.7.2", "cpu_offload_bytes": 2**40},
    }
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    assert "Model loading took 1.9883 GiB" in r.json()["log_lines"]
    # A negative budget is refused by the schema, naming the field.
    body["vllm"] = {"cpu_offload_bytes": -1}
    r = await client.post("/plan", json=body)
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/problem+json")
    assert "cpu_offload_bytes" in r.text


async def test_plan_method_vllm_needs_a_gpu(client: Client) -> None:
    r = await client.post("/plan", json={"model": "llama-3.1-8b", "method": "vllm"})
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "gpu"


async def test_verify_a_log_older_than_the_modelled_releases(client: Client) -> None:
    # vLLM 0.2.7 (January 2024) predates the releases the method models (0.5 on): the log is
    # what cannot be checked, so the problem names it.
    log = "INFO 01-06 12:00:00 api_server.py:1 vLLM API server version 0.2.7\n# GPU blocks: 6487"
    body = {"log": log, "model": "mixtral-8x7b", "gpu": "a100-80gb"}
    r = await client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["errors"][0]["field"] == "log"
    assert "0.2.7" in problem["errors"][0]["message"]


async def test_verify_a_linear_attention_hybrid_counts_requests_by_the_engine_line(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # The 2x H200 Qwen3-Next log of vLLM 0.10.2 against an imported Qwen3-Next. Predicted on
    # the catalogue H200 (150,119,844,413 B as torch sees it) x 0.9 = 135,107,859,971 B, less
    # weights 79,758,277,376 (tests/unit/sizing/vllm/test_predict.py), activation 6,042,822,901 and
    # non-torch 590,558,003 = 48,716,201,691 B = 7,287 blocks of 6,684,672 B -> 7,287 // 4 x
    # 544 = 990,624 tokens against 973,760 logged (+1.73%). Its 973,760 tokens hold
    # int(14.77) = 14 requests of
    # 262,144 tokens (each takes 482 attention blocks and one per linear group), not
    # 973,760 // 262,144 = 3: 4 users fit.
    path = CASES / "configs" / "qwen3-next-80b-a3b-instruct.json"
    body = {"slug": "qwen3-next", "config_json": json.loads(path.read_text())}
    r = await client.post("/models/import", json=body, headers=admin_headers)
    assert r.status_code == 201, r.text
    body = {
        "log": _log("unknownrepo-h200-qwen3-next-80b-a3b-tp2-v0.10.2"),
        "model": "qwen3-next",
        "gpu": "h200",
        "concurrency": 4,
    }
    r = await client.post("/verify", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["prediction"]["block_size"] == 544
    tokens = next(d for d in answer["differences"] if d["quantity"] == "kv_cache_tokens")
    assert (tokens["logged"], tokens["predicted"]) == (973_760, 990_624)
    assert answer["plan_short"] is False
    assert not [d for d in answer["differences"] if d["quantity"] == "users_at_once"]
    # 15 users is more than the 14 requests the log holds: short, counted by the engine line.
    r = await client.post("/verify", json={**body, "concurrency": 15})
    users = next(d for d in r.json()["differences"] if d["quantity"] == "users_at_once")
    assert (users["logged"], users["predicted"]) == (14.0, 15.0)
    assert users["likely_cause"].startswith("the engine's concurrency line: 14 conversations")


async def test_verify_a_v0_pipeline_log_checks_the_first_stage(client: Client) -> None:
    # vLLM issue #13074: DeepSeek-R1 FP8 at TP 8 x PP 2 on V0 (its command line names both
    # sizes; the log prints no release, so engine_version v0 with its last MLA release's
    # layout, 0.7.3). V0's unprefixed line is the driver's, rank 0 of the first stage, which
    # 0.7.x gives 30 of the 61 layers: 42,390,314,201 B = 39.4791 GiB (as in
    # tests/unit/sizing/vllm/test_predict.py for 0.7.2, less 30 x 4,194,304 B for a bf16 kv_b
    # instead of fp32) against the 39.66 logged (-0.46%, within 1%).
    body = {
        "log": _log("vllm-13074-h20-3e-deepseek-r1-tp8-pp2-util1.0-fails"),
        "model": "deepseek-v3",
        "gpu": "h200",
        "concurrency": 1,
        "quantization": "fp8",
        "engine_version": "v0",
    }
    r = await client.post("/verify", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["parsed"]["pipeline_parallel_size"] == 2
    assert answer["config_used"]["pipeline_parallel_size"] == 2
    assert answer["prediction"]["stage_weights_bytes"][0] == 42_390_314_201
    weights = next(d for d in answer["differences"] if d["quantity"] == "weights_gib_per_gpu")
    assert (weights["logged"], weights["predicted"], weights["severity"]) == (
        39.66,
        39.4791,
        "info",
    )


async def test_a_log_in_an_unmodelled_four_bit_layout_is_a_422_on_the_log(client: Client) -> None:
    log = (
        "Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-14B-AWQ', "
        "tensor_parallel_size=1, quantization=gguf, kv_cache_dtype=auto\n"
        "Model loading took 9.37 GiB"
    )
    body = {"log": log, "model": "qwen3-8b", "gpu": "h100", "concurrency": 1}
    r = await client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"] == "log"


async def test_plan_method_vllm_with_gptq_weights(client: Client) -> None:
    # Qwen2.5-7B in GPTQ-Int4 (weight_format gptq-int4 -> quantization gptq): 6,525,621,760
    # 4-bit parameters x 66/128 B + the 16-bit embedding and head 2,179,989,504 B + the rope
    # cache 8,388,608 B = 5,553,151,832 B (tests/unit/sizing/vllm/test_predict.py).
    body = {
        "model": "qwen2.5-7b",
        "gpu": "h100",
        "method": "vllm",
        "concurrency": 1,
        "weight_format": "gptq-int4",
    }
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["prediction"]["per_gpu"]["weights_bytes"] == 5_553_151_832
    # NF4 with no release named is the current releases', which no longer load bitsandbytes
    # (vLLM 0.28 removed it): a 422 naming the quantization.
    r = await client.post("/plan", json={**body, "weight_format": "nf4"})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"] == "quantization"
    assert "0.28 removed" in r.json()["errors"][0]["message"]
    # NF4 on vLLM 0.27.1 (fp32 block scales, as 0.9.2 on holds them). A layer:
    # q and o (12,845,056 values) 6,422,528 packed + 200,704 x 4 = 802,816 + a 512 B code =
    # 7,225,856 each; k and v (1,835,008) 917,504 + 114,688 + 512 = 1,032,704 each; gate, up,
    # down (67,895,296) 33,947,648 + 4,243,456 + 512 = 38,191,616 each: 131,091,968; 28 layers
    # 3,670,575,104. The rest 16-bit: 7,615,616,512 - 28 x 233,046,016 = 1,090,328,064
    # parameters, 2,180,656,128 B; with the rope cache: 5,859,619,840 B.
    release = {"vllm_version": "0.27.1"}
    r = await client.post("/plan", json={**body, "weight_format": "nf4", "vllm": release})
    assert r.status_code == 200, r.text
    assert r.json()["prediction"]["per_gpu"]["weights_bytes"] == 5_859_619_840
    # LoRA slots at rank 16 add 28 x (3 x 16 x 3,584 + 16 x 4,608 + 16 x 3,584 + 3,584 x 16 +
    # 2 x 16 x 3,584 + 2 x 18,944 x 16 + 16 x 18,944 + 3,584 x 16 = 1,441,792 values) x 2 B =
    # 80,740,352 B, and the LoRA manager's index buffers for 8,192 tokens and 1,024 sequences
    # (an H100's defaults): 3 x 65,536 + 131,072 + 3 x 8,192 + (2 x 32,768 + 1,536) + (2 x
    # 4,096 + 1,536) = 429,056 B.
    options = {"vllm": {**release, "enable_lora": True, "max_lora_rank": 16}}
    r = await client.post("/plan", json={**body, "weight_format": "nf4", **options})
    assert r.status_code == 200, r.text
    weights = r.json()["prediction"]["per_gpu"]["weights_bytes"]
    assert weights == 5_859_619_840 + 80_740_352 + 429_056


async def test_plan_method_vllm_takes_the_runner(client: Client) -> None:
    # Gemma 3 27B under 0.24.0 keeps the original runner, which takes its CUDA-graph estimate
    # (the method's 1.33 GiB, 1,428,076,216 B: the median of the logged estimates) out of the KV
    # budget; forcing Model Runner V2 drops that term. A runner vLLM does not have is the
    # field's fault.
    body = {
        "model": "gemma-3-27b",
        "gpu": "h200",
        "method": "vllm",
        "concurrency": 1,
        "vllm": {"vllm_version": "0.24.0"},
    }
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["prediction"]["per_gpu"]["cuda_graph_bytes"] == 1_428_076_216
    body["vllm"] = {"vllm_version": "0.24.0", "model_runner": "v2"}
    r = await client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["prediction"]["per_gpu"]["cuda_graph_bytes"] == 0
    body["vllm"] = {"vllm_version": "0.24.0", "model_runner": "v3"}
    r = await client.post("/plan", json=body)
    assert r.status_code == 400  # schema validation, as for any unknown enum value
    assert r.json()["errors"][0]["field"] == "vllm.model_runner"


async def test_verify_takes_the_printed_releases_utilisation_when_none_is_echoed(
    client: Client,
) -> None:
    # Only the banner and the tokens line: no utilisation in the log or the request, so the
    # budget uses the printed release's default (CacheConfig: 0.9 in 0.19.0, 0.92 from 0.20.0).
    for version, utilisation in (("0.19.0", 0.9), ("0.24.0", 0.92)):
        log = "\n".join(
            [
                f"INFO [core.py:114] Initializing a V1 LLM engine (v{version}) with config: "
                "model='Qwen/Qwen3-8B'",
                "INFO [kv_cache_utils.py:2146] GPU KV cache size: 100,000 tokens",
            ]
        )
        body = {"log": log, "model": "qwen3-8b", "gpu": "h200"}
        r = await client.post("/verify", json=body)
        assert r.status_code == 200, r.text
        answer = r.json()
        assert answer["config_used"]["gpu_memory_utilization"] == utilisation
        assert answer["prediction"]["defaults"]["gpu_memory_utilization"] == utilisation


@pytest.mark.parametrize(
    ("edit", "flag"),
    [
        (
            ("'gpu_memory_utilization': 0.5", "'gpu_memory_utilization': 0.0"),
            "gpu_memory_utilization",
        ),
        (
            ("'gpu_memory_utilization': 0.5", "'gpu_memory_utilization': 7"),
            "gpu_memory_utilization",
        ),
        (("pipeline_parallel_size=1", "pipeline_parallel_size=0"), "pipeline_parallel_size"),
        (("max_num_batched_tokens=2048", "max_num_batched_tokens=0"), "max_num_batched_tokens"),
    ],
)
async def test_a_log_echoing_an_impossible_flag_is_a_422_on_the_log(
    client: Client, edit: tuple[str, str], flag: str
) -> None:
    # An edited or corrupted log (no vLLM release runs at utilisation 0 or with 0 pipeline
    # stages): the value is the log's, so the problem names the log and the flag, instead of
    # the prediction silently falling back to the request's value or the release's default.
    log = _log("dennislee-a100-80gb-x2-same-node-qwen2-7b-tp2-util0.5")
    assert edit[0] in log
    body = {"log": log.replace(*edit), "model": "qwen2.5-7b", "gpu": "a100-80gb"}
    r = await client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    error = r.json()["errors"][0]
    assert error["field"] == "log"
    assert flag in error["message"]


async def test_a_number_no_vllm_prints_is_a_422_on_the_log(client: Client) -> None:
    # 400 digits of GPU blocks: an infinite float, whose int() was a 500 before.
    body = {"log": "# GPU blocks: " + "9" * 400, "model": "llama-3.1-8b", "gpu": "h100"}
    r = await client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["errors"][0]["field"] == "log"


async def test_a_bitsandbytes_log_without_its_release_asks_for_one(client: Client) -> None:
    # A trimmed log: bitsandbytes weights but no version line. The current releases have no
    # bitsandbytes (vLLM 0.28 removed it), so the problem names the quantization and says how
    # to give the release; with engine_version v1-0.19 (0.17-0.20) the same log is checked:
    # Qwen2.5-7B in NF4 with fp32 block scales loads 5,859,619,840 B, worked out in
    # test_plan_method_vllm_with_gptq_weights.
    log = "quantization=bitsandbytes, enforce_eager=False\nGPU KV cache size: 100,000 tokens"
    body = {"log": log, "model": "qwen2.5-7b", "gpu": "h100"}
    r = await client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["field"] == "quantization" and "engine_version" in error["message"]
    r = await client.post("/verify", json={**body, "engine_version": "v1-0.19"})
    assert r.status_code == 200, r.text
    assert r.json()["config_used"]["quantization"] == "bnb-nf4"
    assert r.json()["prediction"]["per_gpu"]["weights_bytes"] == 5_859_619_840


async def test_a_block_size_vllm_does_not_take_is_400_as_the_schema_says(client: Client) -> None:
    # vLLM's --block-size is one of 1, 8, 16, 32, 64, 128, 256 (VerifyRequest.block_size's enum).
    body = {"log": "x", "model": "qwen2.5-7b", "gpu": "a100-80gb", "block_size": 7}
    r = await client.post("/verify", json=body)
    assert r.status_code == 400, r.text
    assert [e["field"] for e in r.json()["errors"]] == ["block_size"]
