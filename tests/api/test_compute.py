"""POST /plan, GET|POST /matrix, POST /offload against the migrated catalogue.

The catalogue holds Llama 3.1 70B's exact 70,553,706,496 parameters (the seeds round to 70.6B),
so the numbers below are the seeds' method applied to that count; the inline model_spec test
reproduces the seeds' own rounded figures to the byte.
"""

import csv
import io
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]
GB = 10**9
LLAMA_70B_PARAMS = 70_553_706_496
# The seeds size on the marketed decimal GB ("80 GB x 0.9"); the service's default is driver.
SIX_STEP = {
    "model": "llama-3.1-70b",
    "gpu": "h100",
    "concurrency": 40,
    "context_tokens": 8192,
    "capacity_basis": "marketed",
}


async def post(client: Client, path: str, body: dict[str, Any], **headers: str) -> Any:
    response = await client.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_six_step_bf16_is_4_h100s_with_23_5_gb_spare(client: Client) -> None:
    # Weights 70,553,706,496 x 2 = 141,107,412,992 B; KV 40 x 8,192 x 327,680 = 107,374,182,400 B;
    # 248,481,595,392 B against 4 x 68 GB = 272 GB: 23,518,404,608 B spare (8.6%, tight).
    plan = await post(client, "/plan", SIX_STEP)
    assert (plan["gpu"], plan["gpu_count"], plan["tensor_parallel"]) == ("h100-sxm", 4, 4)
    assert plan["weights_bytes"] == 141_107_412_992
    assert plan["kv_bytes_per_token"] == 327_680
    assert plan["kv_cache_bytes"] == 107_374_182_400
    assert plan["budget_bytes"] == 272 * GB
    assert plan["spare_bytes"] == 23_518_404_608
    assert plan["status"] == "tight" and plan["fits"] is True
    assert plan["per_gpu"]["budget_bytes"] == 68 * GB
    assert "spare_under_10_percent" in {w["code"] for w in plan["warnings"]}


async def test_six_step_fp8_is_2_h100s_with_11_8_gb_spare(client: Client) -> None:
    # 70,553,706,496 + 53,687,091,200 = 124,240,797,696 B against 136 GB.
    plan = await post(client, "/plan", {**SIX_STEP, "weight_format": "fp8"})
    assert plan["kv_format"] == "fp8"  # the seeds' rule: FP8 KV beside FP8 weights
    assert plan["gpu_count"] == 2
    assert plan["spare_bytes"] == 136 * GB - 124_240_797_696 == 11_759_202_304


async def test_llama_70b_fp8_fits_one_mi355x(client: Client) -> None:
    # The default workload (8 x 8,192 tokens, 90% fill, 4 GB overhead, driver basis) on the
    # MI355X of migration 0014, asked for by its alias. Weights 70,553,706,496 x 1 B; FP8 KV
    # 2 x 80 layers x 8 KV heads x 128 x 1 B = 163,840 B a token x 65,536 = 10,737,418,240 B;
    # budget 309,216,170,475 B (torch's 287.98 GiB) x 0.9, floored, = 278,294,553,427 - 4 GB =
    # 274,294,553,427 B: 274,294,553,427 - 81,291,124,736 = 193,003,428,691 B spare (70%).
    plan = await post(
        client, "/plan", {"model": "llama-3.1-70b", "gpu": "mi355", "weight_format": "fp8"}
    )
    assert (plan["gpu"], plan["gpu_count"], plan["tensor_parallel"]) == ("mi355x", 1, 1)
    assert (plan["kv_format"], plan["kv_bytes_per_token"]) == ("fp8", 163_840)
    assert plan["weights_bytes"] == LLAMA_70B_PARAMS
    assert plan["kv_cache_bytes"] == 10_737_418_240
    assert plan["budget_bytes"] == 274_294_553_427
    assert plan["spare_bytes"] == 274_294_553_427 - LLAMA_70B_PARAMS - 10_737_418_240
    assert plan["spare_bytes"] == 193_003_428_691
    assert plan["status"] == "fits" and plan["fits"] is True


async def test_inline_architecture_reproduces_the_seeds_rounded_numbers(client: Client) -> None:
    spec = {
        "slug": "llama-70b-seed",
        "total_params": 70_600_000_000,
        "layers": 80,
        "hidden_size": 8192,
        "attention_heads": 64,
        "kv_heads": 8,
        "max_context_tokens": 131072,
    }
    body = {k: v for k, v in SIX_STEP.items() if k != "model"}
    plan = await post(client, "/plan", {**body, "model_spec": spec})
    assert plan["gpu_count"] == 4 and plan["spare_bytes"] == 23_425_817_600  # "23 GB spare"
    fp8 = await post(client, "/plan", {**body, "model_spec": spec, "weight_format": "fp8"})
    assert fp8["gpu_count"] == 2 and fp8["spare_bytes"] == 11_712_908_800  # "11.7 GB"


async def test_one_h200_is_just_short_in_fp8(client: Client) -> None:
    # 141 GB x 0.9 - 4 GB = 122.9 GB against 124,240,797,696 B.
    plan = await post(
        client, "/plan", {**SIX_STEP, "gpu": "h200", "weight_format": "fp8", "splits": [1]}
    )
    assert plan["fits"] is False and plan["status"] == "does_not_fit"
    assert plan["spare_bytes"] == 122_900_000_000 - 124_240_797_696


async def test_plan_without_gpu_ranks_every_catalogue_gpu(client: Client) -> None:
    plan = await post(client, "/plan", {k: v for k, v in SIX_STEP.items() if k != "gpu"})
    options = plan["options"]
    gpus = await client.get("/gpus", params={"limit": 500})
    assert len(options) == gpus.json()["total"]
    status = {"fits": 0, "tight": 1, "amber": 2, "does_not_fit": 3}
    order = [(status[o["status"]], o["gpu_count"], -o["spare_fraction"]) for o in options]
    assert order == sorted(order)
    assert plan["gpu"] == options[0]["gpu"]
    # B200 (192 GB): 2 x 168.8 GB holds 248.5 GB, one does not.
    assert options[0]["gpu_count"] == 2


async def test_driver_visible_capacity_is_said(client: Client) -> None:
    # 81,559 MiB = 85,520,809,984 B; x 0.9 = 76,968,728,985 B (rounded down) - 4 GB.
    plan = await post(client, "/plan", {**SIX_STEP, "capacity_basis": "driver"})
    assert plan["capacity_basis"] == "driver"
    assert plan["per_gpu"]["capacity_bytes"] == 85_520_809_984
    assert plan["per_gpu"]["budget_bytes"] == 72_968_728_985


async def test_training_workload_answers_the_fewest_gpus(client: Client) -> None:
    # 70,553,706,496 x 16 B x 1.2 / 68 GB = 19.9: 24 H100s with FSDP (ZeRO-3).
    plan = await post(
        client, "/plan", {"model": "llama-3.1-70b", "gpu": "h100", "workload": "training"}
    )
    assert plan["workload"] == "training" and plan["gpu_count"] == 24
    assert plan["model_state_bytes"] == LLAMA_70B_PARAMS * 16
    lora = await post(
        client, "/plan", {"model": "llama-3.1-70b", "gpu": "h100", "workload": "qlora"}
    )
    assert lora["gpu_count"] == 1 and lora["trainable_params"] == 819_200 * 80


async def test_markdown_plan_labels_gb_and_gib(client: Client) -> None:
    response = await client.post("/plan", json=SIX_STEP, headers={"Accept": "text/markdown"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert "**4 x h100-sxm** (tight), 23.5 GB spare (8.6%)" in text
    assert "141.1 GB (131.4 GiB)" in text  # 141,107,412,992 B
    assert "| per GPU | GB | GiB |" in text


async def test_matrix_default_is_the_seeds_workload(client: Client) -> None:
    response = await client.get("/matrix")
    assert response.status_code == 200
    m = response.json()
    w = m["workload"]
    assert (w["concurrency"], w["context_tokens"], w["gpu_memory_utilization"]) == (8, 8192, 0.9)
    assert w["overhead_bytes_per_gpu"] == 4 * GB
    rows = {(r["model"], r["weight_format"]): r for r in m["rows"]}
    assert {f for _, f in rows} == {"bf16", "fp8", "int4"}
    assert rows[("llama-3.1-70b", "bf16")]["kv_format"] == "bf16"
    assert rows[("llama-3.1-70b", "int4")]["kv_format"] == "fp8"
    deepseek = {c["gpu"]: c for c in rows[("deepseek-v3", "fp8")]["cells"]}
    # "more than the 640 GB of a full 8 x H100 server, so it needs eight H200s, eight B200s
    # or two servers".
    assert deepseek["h100-sxm"]["gpu_count"] == 16
    assert deepseek["h100-sxm"]["pipeline_parallel"] == 2
    assert deepseek["h200"]["gpu_count"] == 8 and deepseek["b200"]["gpu_count"] == 8


async def test_matrix_csv_has_units_in_its_headers(client: Client) -> None:
    response = await client.post(
        "/matrix",
        json={
            "models": ["llama-3.1-70b"],
            "formats": ["bf16"],
            "gpus": ["b200"],
            "capacity_basis": "marketed",
        },
        headers={"Accept": "text/csv"},
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    # 192 GB x 0.9 - 4 GB = 168.8 GB; 141,107,412,992 + 21,474,836,480 = 162,582,249,472 B:
    # 6,217,750,528 B spare, 3.68%: amber.
    assert rows == [
        {
            "model": "llama-3.1-70b",
            "weight_format": "bf16",
            "kv_format": "bf16",
            "weights_GB": "141.107",
            "gpu": "b200",
            "gpu_count": "1",
            "tensor_parallel": "1",
            "pipeline_parallel": "1",
            "spare_GB": "6.218",
            "spare_GiB": "5.791",
            "spare_fraction": "0.0368",
            "status": "amber",
            "amber": "yes",
        }
    ]


async def test_offload_reproduces_the_seeds_example(client: Client) -> None:
    # 60 GB resident at 3,350 GB/s = 17.9 ms; 141,107,412,992 - 60e9 = 81,107,412,992 B over
    # PCIe 5.0 x16 (64 GB/s per direction) = 1.2673 s; under 1 token/s, about 98% idle.
    # The seed counts the weights alone: a short conversation (128 tokens, 41,943,040 B of KV
    # a step, 0.0125 ms) keeps the KV read negligible.
    body = {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "resident_bytes": 60 * GB,
        "capacity_basis": "marketed",
    }
    o = await post(client, "/offload", {**body, "context_tokens": 128})
    assert o["link"] == "pcie-5-x16" and o["link_bytes_per_s"] == 64 * GB
    assert o["offloaded_bytes"] == 81_107_412_992
    assert o["hbm_s_per_step"] == pytest.approx(60e9 / 3350e9)
    assert o["link_s_per_step"] == pytest.approx(81_107_412_992 / 64e9)
    assert o["tokens_per_s"] < 1
    assert int(o["gpu_idle_fraction"] * 100) == 98
    # Four H100s: (35,276,853,248 + 10,485,760) B per GPU / 3,350 GB/s = 10.5 ms: about 95
    # tokens/s.
    alt = o["fully_resident"]
    assert alt["gpu_count"] == 4 and alt["weights_bytes_per_gpu"] == 35_276_853_248
    assert round(alt["tokens_per_s"]) == 95


async def test_plan_and_offload_agree_on_a_mixtral_decode_step_on_4_l40s(client: Client) -> None:
    # Mixtral 8x7B's catalogue row: 46,702,792,704 parameters, 12,748,853,248 active (top-2 of
    # 8). BF16 on 4 x L40S holds 23,351,396,352 B of weights a GPU; one token reads its active
    # share, 2 x 12,748,853,248 / 4 = 6,374,426,624 B, plus one 8,192-token KV slice
    # (8,192 x 131,072 / 4 = 268,435,456 B): 6,642,862,080 B at 864 GB/s = 7.689 ms, 130.1
    # tokens/s (reading all 23.35 GB was /offload's 37.0). A batch of 16 touches
    # 8 x (1 - 0.75^16) = 7.92 experts a layer: 2 x 46,119,730,134 / 4 = 23,059,865,067 B plus
    # 16 KV slices (4,294,967,296 B) = 27,354,832,363 B (tests/unit/sizing/test_decode.py).
    common = {
        "model": "mixtral-8x7b",
        "gpu": "l40s",
        "weight_format": "bf16",
        "kv_format": "bf16",
        "capacity_basis": "marketed",
        "context_tokens": 8192,
    }
    for batch, step_bytes in ((1, 6_642_862_080), (16, 27_354_832_363)):
        plan = await post(client, "/plan", {**common, "concurrency": batch, "splits": [4]})
        assert plan["gpu_count"] == 4
        assert plan["decode"]["bytes_per_step_per_gpu"] == step_bytes
        o = await post(client, "/offload", {**common, "gpu_count": 4, "batch_size": batch})
        assert o["s_per_step"] == pytest.approx(step_bytes / 864e9)
        assert o["s_per_step"] == pytest.approx(plan["decode"]["s_per_step"])
        assert o["offloaded_bytes"] == 0 and o["link_bytes_per_step"] == 0
        assert o["step"]["bytes_per_gpu"] == step_bytes
        assert o["fully_resident"]["s_per_step"] == pytest.approx(step_bytes / 864e9)
        assert "moe_offload_experts" in {w["code"] for w in o["warnings"]}
        if batch == 1:
            assert (
                round(o["tokens_per_s"], 1)
                == round(plan["decode"]["tokens_per_s_per_sequence"], 1)
                == 130.1
            )


async def test_offload_copy_mechanism_moves_every_offloaded_byte(client: Client) -> None:
    # Half of Mixtral's BF16 weights (46,702,792,704 B) offloaded from 2 x L40S: UVA moves the
    # active share, 12,748,853,248 B a step; copying the layers moves all 46,702,792,704.
    body = {"model": "mixtral-8x7b", "gpu": "l40s", "gpu_count": 2, "weight_format": "bf16"}
    body["resident_bytes"] = 46_702_792_704
    uva = await post(client, "/offload", body)
    assert uva["mechanism"] == "uva" and uva["link_bytes_per_step"] == 12_748_853_248
    copy = await post(client, "/offload", {**body, "mechanism": "copy"})
    assert copy["mechanism"] == "copy" and copy["link_bytes_per_step"] == 46_702_792_704
    response = await client.post("/offload", json={**body, "mechanism": "dma"})
    assert response.status_code == 400 and "mechanism" in response.text


async def test_markdown_offload_names_the_mechanism_and_the_bytes_that_cross(
    client: Client,
) -> None:
    # The UVA case above: 12,748,853,248 B (12.7 GB, 11.9 GiB) of 46.7 GB offloaded cross.
    body = {"model": "mixtral-8x7b", "gpu": "l40s", "gpu_count": 2, "weight_format": "bf16"}
    response = await client.post(
        "/offload",
        json={**body, "resident_bytes": 46_702_792_704},
        headers={"Accept": "text/markdown"},
    )
    assert response.status_code == 200
    text = response.text
    assert "Mechanism `uva`" in text and "pinned CPU memory" in text
    assert "12.7 GB (11.9 GiB) of offloaded weights cross the link" in text
    assert "`moe_offload_experts`" in text and "2.00 of 8 experts" in text


async def test_offload_over_a_named_link(client: Client) -> None:
    o = await post(
        client,
        "/offload",
        {
            "model": "llama-3.1-70b",
            "gpu": "h100-sxm",
            "resident_bytes": 60 * GB,
            "link": "nvlink-c2c",
        },
    )
    assert o["link_s_per_step"] == pytest.approx(81_107_412_992 / 450e9)


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        ("/plan", {**SIX_STEP, "gpu_memory_utilization": 0}, 400, "gpu_memory_utilization"),
        ("/plan", {**SIX_STEP, "gpu_memory_utilization": 1.5}, 400, "gpu_memory_utilization"),
        ("/plan", {**SIX_STEP, "concurrency": 0}, 400, "concurrency"),
        ("/plan", {**SIX_STEP, "gpu": "h1000"}, 404, "gpu"),
        ("/plan", {**SIX_STEP, "model": "llama-3.1-7b"}, 404, "model"),
        ("/plan", {**SIX_STEP, "weight_format": "fp7"}, 404, "weight_format"),
        ("/plan", {**SIX_STEP, "kv_format": "mxfp4"}, 422, "kv_format"),
        ("/plan", {"gpu": "h100"}, 422, "model"),
        ("/plan", {**SIX_STEP, "splits": [3]}, 422, "splits"),
        # The GPU counts' bounds are the schema's (1 to 64 counts, each 1 to 65,536): decoding
        # refuses them with a 400 naming the entry, for either method (a 0 divided the heads by
        # nothing under the vllm method: a 500 once).
        ("/plan", {"model": "llama-3.1-70b", "splits": [0]}, 400, "splits[0]"),
        ("/plan", {**SIX_STEP, "splits": []}, 400, "splits"),
        ("/plan", {**SIX_STEP, "method": "vllm", "splits": [0]}, 400, "splits[0]"),
        ("/plan", {**SIX_STEP, "method": "vllm", "splits": [-1]}, 400, "splits[0]"),
        ("/plan", {**SIX_STEP, "method": "vllm", "splits": [1] * 65}, 400, "splits"),
        (
            "/plan",
            {
                "model_spec": {
                    "slug": "x",
                    "total_params": 10,
                    "layers": 2,
                    "hidden_size": 64,
                    "attention_heads": 8,
                    "kv_heads": 3,
                    "max_context_tokens": 8,
                }
            },
            422,
            "model_spec.kv_heads",
        ),
        # An inline architecture is bounded as a catalogue row is (the schema says so, and
        # decoding enforces it): 10^8 layers kept the vllm method busy for four minutes before.
        (
            "/plan",
            {
                "method": "vllm",
                "gpu": "h100",
                "model_spec": {
                    "slug": "x",
                    "total_params": 10**9,
                    "layers": 10**8,
                    "hidden_size": 64,
                    "attention_heads": 8,
                    "kv_heads": 8,
                    "max_context_tokens": 8,
                },
            },
            400,
            "model_spec.layers",
        ),
        ("/matrix", {"gpus": ["nope"]}, 404, "gpus"),
        ("/matrix", {"formats": ["bf16"], "splits": []}, 400, "splits"),
        (
            "/offload",
            {"model": "llama-3.1-70b", "gpu": "h100", "resident_bytes": 10**14},
            422,
            "resident_bytes",
        ),
        # resident_bytes is 0 to 2^53 in the schema (decoding refuses -1); the core keeps it
        # within the weights' size.
        (
            "/offload",
            {"model": "llama-3.1-70b", "gpu": "h100", "resident_bytes": -1},
            400,
            "resident_bytes",
        ),
        ("/offload", {"model": "llama-3.1-70b", "gpu": "h100", "link": "pcie-9"}, 404, "link"),
        ("/offload", {"model": "llama-3.1-70b"}, 400, "gpu"),
    ],
)
async def test_bad_input_is_a_problem_naming_the_field(
    client: Client, path: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await client.post(path, json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == status
    assert field in [e["field"] for e in problem["errors"]]


async def test_a_bad_gpu_count_is_named_even_when_ranking_every_gpu(client: Client) -> None:
    response = await client.post("/plan", json={"model": "llama-3.1-70b", "splits": [1, 65537]})
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "splits[1]", "message": "Expected `int` <= 65536"}
    ]


async def test_unknown_gpu_suggests_the_closest(client: Client) -> None:
    response = await client.post("/plan", json={**SIX_STEP, "gpu": "h100-sx"})
    assert response.status_code == 404
    assert "h100-sxm" in response.json()["suggestions"]


async def test_plan_from_a_config_json_uses_the_checkpoints_stored_size(client: Client) -> None:
    # gpt-oss-120b in MXFP4 as published: 65,248,815,744 B of weights (experts 4.25 bits, the
    # rest BF16). FP8 KV beside 4-bit weights: 18 full layers x 2 x 8 x 64 x 1 B = 18,432 B per
    # token, plus the 18 sliding layers' 128-token window: 18,432 x 128 = 2,359,296 B per
    # conversation. 8 x (18,432 x 8,192 + 2,359,296) = 1,226,833,920 B. Total 66,475,649,664 B
    # on one H100's 68 GB: fits, 1,524,350,336 B spare (2.2%: amber).
    import json
    from pathlib import Path

    config = json.loads(
        (Path(__file__).resolve().parents[1] / "data/hf_configs/gpt-oss-120b.json").read_text()
    )
    plan = await post(
        client,
        "/plan",
        {
            "config_json": config,
            "gpu": "h100",
            "weight_format": "mxfp4",
            "capacity_basis": "marketed",
        },
    )
    assert plan["weights_bytes"] == 65_248_815_744
    assert plan["kv_format"] == "fp8" and plan["kv_bytes_per_token"] == 18_432
    assert plan["kv_cache_bytes"] == 1_226_833_920
    assert plan["gpu_count"] == 1 and plan["status"] == "amber"
    assert plan["spare_bytes"] == 68 * GB - 65_248_815_744 - 1_226_833_920


async def test_an_unsupported_config_json_is_a_422_listing_the_families(client: Client) -> None:
    response = await client.post("/plan", json={"config_json": {"model_type": "falcon"}})
    assert response.status_code == 422
    problem = response.json()
    assert problem["errors"][0]["field"] == "config_json.model_type"
    assert "llama" in problem["detail"] and "qwen3_moe" in problem["detail"]


async def test_a_matrix_counts_each_model_format_gpu_and_split_once(client: Client) -> None:
    # Repeats dropped in first-seen order; h100 is h100-sxm's alias, so one column.
    m = await post(
        client,
        "/matrix",
        {
            "models": ["llama-3.1-70b", "llama-3.1-70b"],
            "formats": ["fp8", "bf16", "fp8"],
            "gpus": ["h200", "h100", "h100-sxm", "h200"],
            "splits": [8, 1, 8, 2],
            "capacity_basis": "marketed",
        },
    )
    assert m["gpus"] == ["h200", "h100-sxm"]
    assert [(r["model"], r["weight_format"]) for r in m["rows"]] == [
        ("llama-3.1-70b", "fp8"),
        ("llama-3.1-70b", "bf16"),
    ]
    assert [len(r["cells"]) for r in m["rows"]] == [2, 2]
    assert m["workload"]["splits"] == [8, 1, 2]


async def test_a_matrix_over_the_cell_limit_is_a_422_naming_the_longest_list(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import service.sizing.matrix

    monkeypatch.setattr(service.sizing.matrix, "MAX_MATRIX_CELLS", 20)
    models = ["llama-3.1-70b", "llama-3.1-8b", "deepseek-v3"]
    # 3 models x 2 formats x 4 GPUs = 24 cells > 20: the GPUs are the longest list.
    over = {"models": models, "formats": ["bf16", "fp8"], "gpus": ["h100", "h200", "b200", "l40s"]}
    response = await client.post("/matrix", json=over)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    detail = (
        "3 models x 2 formats x 4 GPUs is 24 cells; a matrix holds at most 20 (name fewer gpus)"
    )
    assert response.json()["errors"] == [{"field": "gpus", "message": detail}]
    # Repeats are dropped before the count: h100 and h100-sxm are one GPU, 3 x 2 x 3 = 18 cells.
    within = {
        **over,
        "formats": ["bf16", "fp8", "bf16"],
        "gpus": ["h100", "h100-sxm", "h200", "b200"],
    }
    assert (await client.post("/matrix", json=within)).status_code == 200
