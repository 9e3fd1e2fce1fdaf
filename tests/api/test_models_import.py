"""POST /models/import: a config.json becomes a catalogue model, planned with exact numbers."""

import json
from pathlib import Path
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.conftest import new_key

Client = AsyncTestClient[Litestar]
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
LOG_CONFIGS = Path(__file__).resolve().parents[2] / "service/accuracy/cases/vllm_logs/configs"
GB = 10**9


TINY_MODEL: dict[str, Any] = {
    "total_params": 1_000_000,
    "layers": 4,
    "hidden_size": 64,
    "attention_heads": 4,
    "kv_heads": 4,
    "max_context_tokens": 4096,
}
"""A small model row; a test adds the one field it gets wrong."""


async def assert_refused(
    client: Client, headers: dict[str, str], slug: str, field: str, **wrong: Any
) -> None:
    """POST /models with ``wrong`` is a 422 naming ``field`` and writes nothing."""
    body = {"slug": slug, **TINY_MODEL, **wrong}
    response = await client.post("/models", json=body, headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == field
    assert (await client.get(f"/models/{slug}")).status_code == 404  # nothing written


def config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return loaded


async def test_import_then_plan_an_mxfp4_model(
    client: Client, admin_headers: dict[str, str]
) -> None:
    body = {
        "slug": "my-gpt-oss",
        "config_json": config("gpt-oss-120b"),
        "sources": ["tests/data/hf_configs/gpt-oss-120b.json"],
    }
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 201, response.text
    answer = response.json()
    # models.md: 116,829,156,672 parameters, 5,132,849,472 active without the input embedding.
    assert answer["model"]["total_params"] == 116_829_156_672
    assert answer["model"]["active_params"] == 5_132_849_472
    assert answer["model"]["active_params_incl_embedding"] == 5_711_982_912
    assert answer["model"]["checkpoint_format"] == "mxfp4"
    assert answer["model"]["checkpoint_bytes"] == 65_248_815_744
    assert answer["checkpoint"]["quantized_bytes"] == 60_914_073_600
    assert answer["model"]["architecture"] == "GptOssForCausalLM"  # its architectures[0]
    stored = await client.get("/models/my-gpt-oss")
    assert stored.json()["layer_types"][:2] == ["sliding", "full"]
    assert stored.json()["architecture"] == "GptOssForCausalLM"
    plan = await client.post(
        "/plan", json={"model": "my-gpt-oss", "gpu": "h100", "weight_format": "mxfp4"}
    )
    assert plan.json()["weights_bytes"] == 65_248_815_744


async def test_import_with_index_reports_the_difference(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # 32,762,123,264 x 2 B = 65,524,246,528 B, equal to the index's total_size.
    body = {
        "slug": "my-qwen3-32b",
        "config_json": config("qwen3-32b"),
        "index_json": {"metadata": {"total_size": 65_524_246_528}},
    }
    answer = (await client.post("/models/import", json=body, headers=admin_headers)).json()
    assert answer["checkpoint"]["total_bytes"] == 65_524_246_528
    assert answer["checkpoint_difference_bytes"] == 0
    assert answer["model"]["checkpoint_bytes"] == 0  # unquantised


async def test_import_needs_an_admin(client: Client, database_url: str) -> None:
    body = {"slug": "nope", "config_json": config("qwen3-8b")}
    anonymous = await client.post("/models/import", json=body)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    planner = {"Authorization": f"Bearer {await new_key(database_url, 'planner')}"}
    assert (await client.post("/models/import", json=body, headers=planner)).status_code == 403
    assert (await client.get("/models/nope")).status_code == 404  # nothing written


async def test_unsupported_or_malformed_configs_are_422_and_write_nothing(
    client: Client, admin_headers: dict[str, str]
) -> None:
    for raw, field in (
        ({"model_type": "falcon"}, "config_json.model_type"),
        ({**config("llama-3.1-8b"), "num_attention_heads": 0}, "config_json.num_attention_heads"),
    ):
        body = {"slug": "broken-import", "config_json": raw}
        response = await client.post("/models/import", json=body, headers=admin_headers)
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == field
    assert (await client.get("/models/broken-import")).status_code == 404


async def test_importing_an_existing_slug_is_409(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # Import Qwen3-8B's config under the shipped Llama slug: refused, the row untouched.
    body = {"slug": "llama-3.1-8b", "config_json": config("qwen3-8b")}
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "slug"
    kept = (await client.get("/models/llama-3.1-8b")).json()
    assert kept["total_params"] == 8_030_261_248 and kept["layers"] == 32


async def test_an_imported_gemma_3_keeps_both_rotary_caches(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # Gemma 3 27B (multimodal): max_position 131,072; its global rope is linear x 8, so vLLM
    # builds caches of 131,072 and 1,048,576 rows of 128 values: 1,179,648 x 128 x 2 B =
    # 301,989,888 B on top of 27,432,406,640 x 2 B = 54,864,813,280 B of parameters.
    body = {"slug": "my-gemma-3", "config_json": config("gemma-3-27b-multimodal")}
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 201, response.text
    stored = (await client.get("/models/my-gemma-3")).json()
    assert stored["rope_cache_rows"] == [131_072, 1_048_576]
    request = {"model": "my-gemma-3", "gpu": "h100", "method": "vllm", "concurrency": 1}
    plan = (await client.post("/plan", json=request)).json()
    assert plan["prediction"]["per_gpu"]["weights_bytes"] == 54_864_813_280 + 301_989_888


async def test_an_import_without_architectures_stores_an_unknown_class(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # The text-only Gemma 3 config has no architectures list: '' (unknown), not a guess.
    body = {"slug": "my-gemma-3-text", "config_json": config("gemma-3-27b-text")}
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 201, response.text
    assert (await client.get("/models/my-gemma-3-text")).json()["architecture"] == ""


async def test_a_models_architecture_round_trips_through_create_replace_and_get(
    client: Client, admin_headers: dict[str, str]
) -> None:
    body = {"slug": "tiny-llama", **TINY_MODEL, "architecture": "LlamaForCausalLM"}
    created = await client.post("/models", json=body, headers=admin_headers)
    assert created.status_code == 201, created.text
    assert created.json()["architecture"] == "LlamaForCausalLM"
    assert (await client.get("/models/tiny-llama")).json()["architecture"] == "LlamaForCausalLM"
    # Omitted on a replace: the default '' (a replace is the whole row).
    replaced = await client.put(
        "/models/tiny-llama", json={"slug": "tiny-llama", **TINY_MODEL}, headers=admin_headers
    )
    assert replaced.status_code == 200, replaced.text
    assert (await client.get("/models/tiny-llama")).json()["architecture"] == ""


async def test_an_architecture_over_128_characters_is_a_400_naming_it(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # The column is String(128): 129 characters never reach the database.
    body = {"slug": "long-class", **TINY_MODEL, "architecture": "A" * 129}
    response = await client.post("/models", json=body, headers=admin_headers)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["field"] == "architecture"
    assert (await client.get("/models/long-class")).status_code == 404


async def test_rope_rows_out_of_range_are_a_422_naming_the_field(
    client: Client, admin_headers: dict[str, str]
) -> None:
    await assert_refused(client, admin_headers, "bad-rope", "rope_cache_rows", rope_cache_rows=[0])


async def test_an_imported_qwen3_next_plans_with_its_linear_layers(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # Qwen3-Next-80B-A3B: the import stores its Gated DeltaNet sizes and rope width; planned
    # on H200s with vLLM 0.10.2 it needs two GPUs (159 GB of 16-bit weights). A rank loads
    # 79,674,391,296 x 2 B / 2 + the 262,144 x 64 x 2 B rope cache + the other half of its
    # replicated routers, 48 x 2,048 x 512 x 2 B / 2 = 79,758,277,376 B; the
    # attention block grows to 544 tokens (a 548,864 B state against 1,024 B a token, in
    # multiples of 16), a page of 557,056 B, in 4 groups of 12 layers (1 full, 3 linear).
    path = LOG_CONFIGS / "qwen3-next-80b-a3b-instruct.json"
    body = {"slug": "my-qwen3-next", "config_json": json.loads(path.read_text())}
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 201, response.text
    stored = (await client.get("/models/my-qwen3-next")).json()
    assert stored["layer_types"] == ["linear", "linear", "linear", "full"] * 12
    assert [stored[k] for k in ("linear_key_heads", "linear_value_heads", "rotary_dim")] == [
        16,
        32,
        64,
    ]
    # 15 users of the whole 262,144-token context: on the catalogue H200 a TP 2 rank keeps
    # 48,716,201,691 B of KV (tests/api/test_verify.py) = 7,287 blocks; a request takes 482
    # attention blocks and one in each of 3 linear groups, 7,287 // 485 = 15 at once (the
    # tokens line, 990,624, would say 3 by tokens / context).
    request = {
        "model": "my-qwen3-next",
        "gpu": "h200",
        "method": "vllm",
        "concurrency": 15,
        "context_tokens": 262_144,
        "vllm": {"vllm_version": "0.10.2"},
    }
    r = await client.post("/plan", json=request)
    assert r.status_code == 200, r.text
    plan = r.json()
    assert plan["gpu_count"] == 2 and plan["fits"] is True
    two = next(c for c in plan["considered"] if c["tensor_parallel"] == 2)
    assert two["reason"] == "990,624 tokens hold 15 conversations of 262,144 tokens"
    prediction = plan["prediction"]
    assert prediction["per_gpu"]["weights_bytes"] == 79_758_277_376
    assert (prediction["block_size"], prediction["per_gpu"]["page_bytes"]) == (544, 557_056)
    assert prediction["kv_groups"] == 4


async def test_linear_layers_without_their_sizes_are_a_422(
    client: Client, admin_headers: dict[str, str]
) -> None:
    linear = ["linear", "linear", "linear", "full"]
    await assert_refused(
        client, admin_headers, "half-hybrid", "linear_key_heads", layer_types=linear
    )


async def test_dense_layers_need_an_moe_model(
    client: Client, admin_headers: dict[str, str]
) -> None:
    dense = {"dense_layers": 1, "dense_intermediate_size": 256}
    await assert_refused(client, admin_headers, "dense-with-dense-layers", "dense_layers", **dense)


async def test_an_imported_vision_models_replicated_params_survive_the_catalogue(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # Qwen2.5-VL-7B: the vision tower's Conv3d, norms and row-parallel biases stay whole on every
    # tensor-parallel rank (tests/catalogue/test_hf_config.py works the 1,673,984); stored in
    # the column migration 0009 adds and read back, so a plan on the stored row splits as the
    # import did.
    raw = json.loads((LOG_CONFIGS / "qwen2.5-vl-7b-instruct.json").read_text())
    body = {"slug": "my-qwen2.5-vl", "config_json": {k: v for k, v in raw.items() if k[0] != "_"}}
    response = await client.post("/models/import", json=body, headers=admin_headers)
    assert response.status_code == 201, response.text
    assert response.json()["model"]["replicated_params"] == 1_673_984
    assert (await client.get("/models/my-qwen2.5-vl")).json()["replicated_params"] == 1_673_984
