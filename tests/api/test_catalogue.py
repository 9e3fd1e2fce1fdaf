"""Catalogue endpoints in-process: shipped numbers, lookups, CRUD, conflicts, auth, errors."""

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.offline import local_catalogue
from service.sizing.models import ModelSpec
from tests.conftest import new_key

Client = AsyncTestClient[Litestar]
MiB = 2**20
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def new_gpu(slug: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "slug": slug,
        "name": "Test GPU",
        "memory_bytes": 96 * 10**9,
        "driver_visible_bytes": 97_871 * MiB,
        "hbm_bytes_per_s": 4_000 * 10**9,
        "nvlink": "nvlink-4",
        "host_link": "pcie-5-x16",
        "fp8": True,
        "sources": ["a test"],
    }
    return body | changes


def assert_problem(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status
    if field is not None:
        assert field in [error["field"] for error in problem["errors"]], problem
    return problem


async def test_h100_sxm_is_shipped_in_bytes(client: Client) -> None:
    gpu = (await client.get("/gpus/h100-sxm")).json()
    assert gpu["memory_bytes"] == 80_000_000_000
    assert gpu["driver_visible_bytes"] == 81_559 * 2**20 == 85_520_809_984
    assert gpu["hbm_bytes_per_s"] == 3_350_000_000_000
    assert (gpu["nvlink"], gpu["host_link"], gpu["fp8"], gpu["fp4"]) == (
        "nvlink-4",
        "pcie-5-x16",
        True,
        False,
    )
    assert gpu["sources"], "every shipped row keeps its sources"


async def test_links_are_per_direction(client: Client) -> None:
    nvlink4 = (await client.get("/interconnects/nvlink-4")).json()
    pcie5 = (await client.get("/interconnects/pcie-5-x16")).json()
    assert nvlink4["bytes_per_s_per_direction"] == 900 * 10**9 // 2
    assert pcie5["bytes_per_s_per_direction"] == 128 * 10**9 // 2
    assert pcie5["kind"] == "pcie"


async def test_models_keep_exact_parameter_counts(client: Client) -> None:
    llama = (await client.get("/models/llama-3.1-70b")).json()
    assert (llama["total_params"], llama["active_params"]) == (70_553_706_496, 70_553_706_496)
    deepseek = (await client.get("/models/deepseek-v3")).json()
    assert deepseek["total_params"] == 671_026_404_352
    assert deepseek["active_params"] == 36_625_603_584  # excl. the input embedding
    assert deepseek["active_params_incl_embedding"] == 37_552_282_624
    assert (deepseek["kv_lora_rank"], deepseek["qk_rope_head_dim"]) == (512, 64)
    # Migration 0007 (service/catalogue/data/model_updates.json): its config's q_lora_rank and
    # first_k_dense_replace dense layers of intermediate_size.
    assert (deepseek["q_lora_rank"], deepseek["dense_layers"]) == (1536, 3)
    assert deepseek["dense_intermediate_size"] == 18_432
    gemma3 = (await client.get("/models/gemma-3-27b")).json()
    assert gemma3["total_params"] == 27_009_346_304
    assert gemma3["layer_types"].count("sliding") == 52
    assert gemma3["layer_types"].count("full") == 10


async def test_shipped_models_name_their_config_class(client: Client) -> None:
    # Migration 0008 (service/catalogue/data/model_updates.json): config.json's architectures[0]
    # from docs/reference/models.json. The text-only Gemma 3 row (its reference config has
    # no architectures) and Qwen3-Next (not in the reference) stay '' (unknown).
    expected = {
        "llama-3.1-70b": "LlamaForCausalLM",
        "deepseek-v3": "DeepseekV3ForCausalLM",
        "qwen2.5-7b": "Qwen2ForCausalLM",
        "qwen3-235b-a22b": "Qwen3MoeForCausalLM",
        "gpt-oss-20b": "GptOssForCausalLM",
        "gemma-3-27b": "",
        "qwen3-next-80b-a3b": "",
    }
    for slug, architecture in expected.items():
        assert (await client.get(f"/models/{slug}")).json()["architecture"] == architecture, slug
    # Every shipped row the config fixtures cover (written from the same reference) names the
    # fixture's class.
    for path in sorted(CONFIGS.glob("*.json")):
        response = await client.get(f"/models/{path.stem}")
        if response.status_code == 200:
            names = json.loads(path.read_text()).get("architectures", [""])
            assert response.json()["architecture"] == names[0], path.stem


async def test_alias_resolves_when_unambiguous(client: Client) -> None:
    assert (await client.get("/gpus/h100")).json()["slug"] == "h100-sxm"
    assert (await client.get("/gpus/H100 SXM")).json()["slug"] == "h100-sxm"


async def test_ambiguous_alias_lists_every_candidate(client: Client) -> None:
    problem = assert_problem(await client.get("/gpus/a100"), 404, "slug")
    assert problem["suggestions"] == ["a100-40gb", "a100-80gb"]


async def test_unknown_slug_suggests_the_closest(client: Client) -> None:
    problem = assert_problem(await client.get("/gpus/h1000"), 404, "slug")
    assert "h100-sxm" in problem["suggestions"]


async def test_list_filters_and_pages(client: Client) -> None:
    page = (await client.get("/gpus", params={"limit": 2, "offset": 1})).json()
    assert (page["limit"], page["offset"], page["total"]) == (2, 1, 13)  # MI355X: 0014
    assert [g["slug"] for g in page["items"]] == ["a100-80gb", "b200"]  # ordered by slug
    fp4 = (await client.get("/gpus", params={"fp4": "true"})).json()
    assert sorted(g["slug"] for g in fp4["items"]) == ["b200", "gb200", "mi355x"]
    big = (await client.get("/gpus", params={"min_memory_bytes": 150 * 10**9})).json()
    assert sorted(g["slug"] for g in big["items"]) == ["b200", "gb200", "mi300x", "mi355x"]
    moe = (await client.get("/models", params={"moe": "true"})).json()
    assert moe["total"] == 9  # 6 shipped by 0002, Qwen3-Next by 0007, two GLMs by 0013


async def test_vendor_filter_is_literal_text_ignoring_case(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # The shipped catalogue: 11 NVIDIA GPUs (GH200: 0013) and 2 AMD (MI355X: 0014); no vendor
    # holds %, _ or \.
    nvidia = (await client.get("/gpus", params={"vendor": "nvidia"})).json()
    assert nvidia["total"] == 11
    amd = (await client.get("/gpus", params={"vendor": "AMD"})).json()
    assert sorted(g["slug"] for g in amd["items"]) == ["mi300x", "mi355x"]
    for wildcard in ("%", "_", "nvidi_", "NV%", "\\", "nvidia\\"):
        page = await client.get("/gpus", params={"vendor": wildcard})
        assert page.status_code == 200, (wildcard, page.text)
        assert page.json()["total"] == 0, wildcard  # no vendor is spelt that way
    odd = await client.post(
        "/gpus", json=new_gpu("t-vendor", vendor="50%_Co\\"), headers=admin_headers
    )
    assert odd.status_code == 201, odd.text
    found = (await client.get("/gpus", params={"vendor": "50%_co\\"})).json()
    assert [g["slug"] for g in found["items"]] == ["t-vendor"]
    assert (await client.get("/gpus", params={"vendor": "50%"})).json()["total"] == 0
    assert (await client.delete("/gpus/t-vendor", headers=admin_headers)).status_code == 204


async def test_bad_query_is_400_naming_the_parameter(client: Client) -> None:
    assert_problem(await client.get("/gpus", params={"limit": 0}), 400, "limit")


async def test_writes_need_a_key_then_the_admin_role(client: Client, database_url: str) -> None:
    problem = assert_problem(await client.post("/gpus", json=new_gpu("t-auth")), 401)
    assert problem["detail"] == "an API key is required"
    response = await client.post(
        "/gpus", json=new_gpu("t-auth"), headers={"Authorization": "Bearer nope"}
    )
    assert_problem(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")
    planner = {"Authorization": f"Bearer {await new_key(database_url, 'planner')}"}
    assert_problem(await client.post("/gpus", json=new_gpu("t-auth"), headers=planner), 403)
    assert_problem(await client.get("/gpus/t-auth"), 404)


async def test_gpu_crud(client: Client, admin_headers: dict[str, str]) -> None:
    created = await client.post(
        "/gpus", json=new_gpu("t-crud", nvlink="nvlink4"), headers=admin_headers
    )
    assert created.status_code == 201, created.text
    assert created.json()["nvlink"] == "nvlink-4"  # the alias is stored as the slug
    assert (await client.get("/gpus/t-crud")).json()["driver_visible_bytes"] == 97_871 * MiB

    replaced = await client.put(
        "/gpus/t-crud", json=new_gpu("t-crud", memory_bytes=141 * 10**9), headers=admin_headers
    )
    assert replaced.status_code == 200, replaced.text
    assert (await client.get("/gpus/t-crud")).json()["memory_bytes"] == 141_000_000_000

    assert (await client.delete("/gpus/t-crud", headers=admin_headers)).status_code == 204
    assert_problem(await client.get("/gpus/t-crud"), 404)


async def test_duplicate_slug_is_409(client: Client, admin_headers: dict[str, str]) -> None:
    assert_problem(
        await client.post("/gpus", json=new_gpu("h100-sxm"), headers=admin_headers), 409, "slug"
    )


async def test_failed_write_leaves_nothing_behind(
    client: Client, admin_headers: dict[str, str]
) -> None:
    bad_link = await client.post(
        "/gpus", json=new_gpu("t-half", host_link="pcie-9"), headers=admin_headers
    )
    assert_problem(bad_link, 422, "host_link")
    assert_problem(await client.get("/gpus/t-half"), 404)

    inconsistent = (await client.get("/models/llama-3.1-8b")).json() | {"kv_heads": 7}
    response = await client.put("/models/llama-3.1-8b", json=inconsistent, headers=admin_headers)
    assert_problem(response, 422, "kv_heads")
    assert (await client.get("/models/llama-3.1-8b")).json()["kv_heads"] == 8


async def test_body_validation_names_the_field(
    client: Client, admin_headers: dict[str, str]
) -> None:
    response = await client.post(
        "/gpus", json=new_gpu("t-bad", memory_bytes=0), headers=admin_headers
    )
    assert_problem(response, 400, "memory_bytes")
    model = {
        "slug": "t-model",
        "total_params": 10,
        "layers": 2,
        "hidden_size": 10,
        "attention_heads": 3,
        "kv_heads": 3,
        "max_context_tokens": 8,
    }
    response = await client.post("/models", json=model, headers=admin_headers)
    assert_problem(response, 422, "attention_heads")


async def test_replace_cannot_rename(client: Client, admin_headers: dict[str, str]) -> None:
    response = await client.put("/gpus/h200", json=new_gpu("h201"), headers=admin_headers)
    assert_problem(response, 422, "slug")


async def test_interconnect_in_use_cannot_be_deleted(
    client: Client, admin_headers: dict[str, str]
) -> None:
    problem = assert_problem(
        await client.delete("/interconnects/nvlink-5", headers=admin_headers), 409, "slug"
    )
    assert "b200" in problem["detail"]
    assert (await client.get("/interconnects/nvlink-5")).status_code == 200


async def test_body_over_one_mib_is_413(client: Client, admin_headers: dict[str, str]) -> None:
    response = await client.post(
        "/gpus",
        content=b"{" + b" " * 2**20 + b"}",
        headers=admin_headers | {"content-type": "application/json"},
    )
    assert_problem(response, 413)


async def test_unknown_route_and_method_are_problems(client: Client) -> None:
    assert_problem(await client.get("/nowhere"), 404)
    assert_problem(await client.patch("/gpus/h200"), 405)


async def test_the_cli_catalogue_is_the_migrated_one(client: Client) -> None:
    # The CLI and the accuracy report plan on the shipped rows without a database; they apply
    # the same later corrections as the migrations, so every shipped model is the same spec.
    local = local_catalogue()
    page = (await client.get("/models", params={"limit": 100})).json()
    assert len(page["items"]) == 20  # 16 from 0002, Qwen3-Next 0007, Qwen3 14B 0012, GLM 0013
    for item in page["items"]:
        served = {k: v for k, v in item.items() if k in ModelSpec.__struct_fields__}
        spec = msgspec.json.decode(msgspec.json.encode(local.model(item["slug"])))
        assert {k: spec[k] for k in served} == served, item["slug"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"aliases": ["ok", "Not A Slug"]}, "aliases[1]"),
        ({"aliases": ["x" * 65]}, "aliases[0]"),  # a slug is at most 64 characters
        ({"sources": ["a", ""]}, "sources[1]"),  # 1 to 1,000 characters
        ({"sources": ["y" * 1001]}, "sources[0]"),
    ],
)
async def test_list_items_outside_their_schema_bounds_are_400_naming_the_item(
    client: Client, admin_headers: dict[str, str], changes: dict[str, Any], field: str
) -> None:
    # The items' bounds are the schema's (GpuBody.aliases.items, GpuBody.sources.items), so
    # decoding refuses them as it refuses any bound the spec states.
    response = await client.post("/gpus", json=new_gpu("bounded", **changes), headers=admin_headers)
    assert_problem(response, 400, field)
