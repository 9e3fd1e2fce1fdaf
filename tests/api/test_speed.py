"""POST /speed: the contract (fields, units, renderings) and the relations every answer keeps;
the figures themselves are the serving model's (tests/unit/sizing/serving), not asserted here."""

import csv
import io
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.render.speed import SPEED_HEADERS

Client = AsyncTestClient[Litestar]
BODY = {
    "model": "qwen3-8b",
    "gpu": "h100",
    "input_tokens": 1000,
    "output_tokens": 200,
    "concurrencies": [1, 8, 64],
}
ROW_FIELDS = {
    "concurrency",
    "request_rate_per_s",
    "ttft_s",
    "tpot_s",
    "itl_s",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
    "requests_per_s",
    "requests_per_s_per_gpu",
    "running_batch",
    "bottleneck",
    "stable",
    "utilisation",
}


async def speed(client: Client, **changes: Any) -> Any:
    response = await client.post("/speed", json={**BODY, **changes})
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_closed_loop_sweep_answers_one_row_per_concurrency(client: Client) -> None:
    a = await speed(client)
    assert (a["model"], a["gpu"], a["loop"], a["gpus_per_replica"]) == (
        "qwen3-8b",
        "h100-sxm",
        "closed",
        1,
    )
    assert [r["concurrency"] for r in a["rows"]] == [1, 8, 64]
    for r in a["rows"]:
        assert set(r) == ROW_FIELDS
        # Units: requests/s x output tokens = output tokens/s; x (input + output) = total.
        assert r["requests_per_s"] * 200 == pytest.approx(r["output_tokens_per_s"])
        assert r["requests_per_s"] * 1200 == pytest.approx(r["total_tokens_per_s"])
        assert r["running_batch"] <= r["concurrency"]
        assert r["itl_s"] == r["tpot_s"] and r["stable"]
        # Throughput is the batch over the step: output tokens/s = batch / TPOT.
        assert r["output_tokens_per_s"] == pytest.approx(r["running_batch"] / r["tpot_s"])
    out = [r["output_tokens_per_s"] for r in a["rows"]]
    assert out == sorted(out)  # more clients, more tokens per second
    assert a["kv_cache_tokens"] > 0 and a["max_model_len"] == 8192


async def test_per_gpu_figures_divide_by_the_replicas_gpus(client: Client) -> None:
    a = await speed(client, tensor_parallel=2)
    assert a["gpus_per_replica"] == 2
    for r in a["rows"]:
        assert r["output_tokens_per_s_per_gpu"] == pytest.approx(r["output_tokens_per_s"] / 2)
        assert r["requests_per_s_per_gpu"] == pytest.approx(r["requests_per_s"] / 2)


async def test_an_open_loop_past_capacity_is_unstable_with_no_ttft(client: Client) -> None:
    a = await speed(client, concurrencies=None, request_rates_per_s=[0.5, 100_000])
    assert a["loop"] == "open"
    light, flood = a["rows"]
    assert light["stable"] and light["ttft_s"] is not None
    assert light["requests_per_s"] == pytest.approx(0.5)
    assert light["utilisation"] < 1
    assert not flood["stable"] and flood["ttft_s"] is None and flood["utilisation"] > 1


async def test_markdown_and_csv_renderings(client: Client) -> None:
    md = await client.post("/speed", json=BODY, headers={"Accept": "text/markdown"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert "| concurrency | TTFT | TPOT |" in md.text
    table = [line for line in md.text.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3  # header, rule, one line per point
    sheet = await client.post("/speed", json=BODY, headers={"Accept": "text/csv"})
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/csv")
    assert "attachment" in sheet.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(sheet.text)))
    assert rows[0] == SPEED_HEADERS
    assert [r[0] for r in rows[1:]] == ["1", "8", "64"]
    json_rows = (await speed(client))["rows"]
    assert float(rows[2][SPEED_HEADERS.index("tpot_s")]) == pytest.approx(
        json_rows[1]["tpot_s"], rel=1e-5
    )


@pytest.mark.parametrize(
    ("changes", "status", "field"),
    [
        ({"concurrencies": [0]}, 400, "concurrencies[0]"),
        ({"concurrencies": None, "request_rates_per_s": [0]}, 400, "request_rates_per_s[0]"),
        ({"concurrencies": None, "request_rates_per_s": [-2.5]}, 400, "request_rates_per_s[0]"),
        ({"concurrencies": list(range(1, 66))}, 400, "concurrencies"),
        ({"input_tokens": 0}, 400, "input_tokens"),
        ({"request_rates_per_s": [1]}, 422, "concurrencies"),
        ({"concurrencies": None}, 422, "concurrencies"),
        ({"max_model_len": 1000}, 422, "output_tokens"),
        # Qwen3-8B's max_position_embeddings is 40,960: vLLM starts with nothing longer.
        ({"input_tokens": 30_000, "output_tokens": 20_000}, 422, "output_tokens"),
        ({"max_model_len": 50_000}, 422, "max_model_len"),
        ({"gpu": "no-such-gpu"}, 404, "gpu"),
        ({"model": "no-such-model"}, 404, "model"),
        ({"tensor_parallel": 3}, 422, "tensor_parallel"),
        # 70B in BF16 is 141 GB: one 48 GB L40S cannot start the engine.
        (
            {"model": "llama-3.1-70b", "gpu": "l40s", "weight_format": "bf16"},
            422,
            "tensor_parallel",
        ),
        ({"weight_format": "int4"}, 422, "weight_format"),
        ({"engine": "ollama"}, 400, "engine"),
    ],
)
async def test_bad_input_is_a_problem_naming_the_field(
    client: Client, changes: dict[str, Any], status: int, field: str
) -> None:
    response = await client.post("/speed", json={**BODY, **changes})
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert field in [e["field"] for e in response.json()["errors"]]


async def test_other_engines_run_their_own_batch_limits(client: Client) -> None:
    # SGLang's and TensorRT-LLM's defaults (service/sizing/serving/engines.py), vLLM's release's.
    assert (await speed(client, engine="sglang"))["max_num_seqs"] == 4096
    assert (await speed(client, engine="tensorrt-llm"))["max_num_seqs"] == 2048
    assert (await speed(client, max_num_seqs=16))["max_num_seqs"] == 16


async def test_a_request_beyond_the_models_context_names_both_lengths(client: Client) -> None:
    # Qwen3-8B's max_position_embeddings is 40,960; 30,000 + 20,000 = 50,000 tokens.
    response = await client.post(
        "/speed", json={**BODY, "input_tokens": 30_000, "output_tokens": 20_000}
    )
    assert response.status_code == 422
    (error,) = [e for e in response.json()["errors"] if e["field"] == "output_tokens"]
    assert "= 50,000 tokens" in error["message"]
    assert "maximum context of 40,960" in error["message"]


async def test_expert_parallelism_is_a_deployment_option_of_an_moe(client: Client) -> None:
    # DeepSeek-R1 on 8 H200 at one client: the split reads 1 / 8 of each of a token's 8 experts
    # (one expert's bytes a GPU), the busiest of 8 EP GPUs ~2.4 whole experts
    # (service/sizing/serving/experts.py), so its decode step is slower.
    body = {"model": "deepseek-r1", "gpu": "h200", "tensor_parallel": 8, "concurrencies": [1]}
    split = await speed(client, **body)
    ep = await speed(client, **body, expert_parallel=8)
    assert ep["rows"][0]["tpot_s"] > split["rows"][0]["tpot_s"]
    # A size that does not divide the group is the request's error, naming the field.
    response = await client.post("/speed", json={**BODY, **body, "expert_parallel": 3})
    assert response.status_code == 422, response.text
    assert "expert_parallel" in [e["field"] for e in response.json()["errors"]]


async def test_sglang_and_tensorrt_llm_size_their_own_kv_pool(client: Client) -> None:
    # gpt-oss-120b's MXFP4 weights (64.3 GiB) on one H100: vLLM 0.11's 0.9 x 79.2 GiB less them
    # and its 7.4 GiB sampler peak leaves nothing; SGLang's mem_fraction_static and TensorRT-
    # LLM's 0.9 of the free memory leave a pool (service/sizing/serving/kv_pools.py).
    body = {
        "model": "gpt-oss-120b",
        "weight_format": "mxfp4",
        "vllm_version": "0.11.0",
        "concurrencies": [1],
    }
    response = await client.post("/speed", json={**BODY, **body})
    assert response.status_code == 422, response.text
    for engine in ("sglang", "tensorrt-llm"):
        assert (await speed(client, **body, engine=engine))["rows"][0]["tpot_s"] > 0
