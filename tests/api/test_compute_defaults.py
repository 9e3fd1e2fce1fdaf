"""/plan and /matrix share one default split ladder and one capacity basis (issue 16): 1, 2, 4,
8 GPUs inside a node, then 2 and 4 nodes as pipeline stages; a plan that does not fit names the
smallest split that would; options rank plans that fit with 10% spare before tight and amber
ones, on the driver-visible bytes unless capacity_basis is marketed.

DeepSeek-V3 in FP8: its checkpoint's 673,150,552,416 B (block scales included); the MLA latent
is 61 layers x 576 B per token, whole on every tensor-parallel GPU. Llama 3.1 70B BF16 with
8 x 8,192 tokens: 141,107,412,992 B of weights + 21,474,836,480 B of KV = 162,582,249,472 B.
"""

from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]
GB = 10**9
DEEPSEEK_FP8 = {"model": "deepseek-v3", "gpu": "h100", "weight_format": "fp8"}


async def post(client: Client, path: str, body: dict[str, Any]) -> Any:
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def test_plan_and_matrix_agree_on_two_h100_servers_for_deepseek_v3_fp8(
    client: Client,
) -> None:
    # 8 H100s: 673,150,552,416 / 8 = 84,143,819,052 B each > 68 GB (marketed), so 16 = 2 nodes
    # of TP 8, 2 pipeline stages (31 and 30 layers). Per GPU 673,150,552,416 / 16 =
    # 42,071,909,526 B of weights and 8 x 8,192 x 31 x 576 = 1,170,210,816 B of KV. In all:
    # 16 x 68 GB = 1,088 GB - 673,150,552,416 - 8 x 8 x 8,192 x 61 x 576 (18,421,383,168)
    # = 396,428,064,416 B spare.
    marketed = {**DEEPSEEK_FP8, "capacity_basis": "marketed"}
    plan = await post(client, "/plan", marketed)
    assert (plan["gpu_count"], plan["tensor_parallel"], plan["pipeline_parallel"]) == (16, 8, 2)
    assert plan["nodes"] == 2 and plan["status"] == "fits"
    assert plan["per_gpu"]["weights_bytes"] == 42_071_909_526
    assert plan["per_gpu"]["kv_cache_bytes"] == 1_170_210_816
    assert plan["spare_bytes"] == 396_428_064_416
    assert plan["smallest_fitting_split"] is None
    matrix = await post(
        client,
        "/matrix",
        {
            "models": ["deepseek-v3"],
            "formats": ["fp8"],
            "gpus": ["h100"],
            "capacity_basis": "marketed",
        },
    )
    cell = matrix["rows"][0]["cells"][0]
    assert (cell["gpu_count"], cell["tensor_parallel"], cell["pipeline_parallel"]) == (16, 8, 2)
    assert cell["spare_bytes"] == 396_428_064_416
    # The issue's own body, on the default (driver) basis: 85,520,809,984 x 0.9 - 4 GB =
    # 72,968,728,985 B per GPU, still short at 8; at 16, 72,968,728,985 - 42,071,909,526 -
    # 1,170,210,816 = 29,726,608,643 B spare on the busiest GPU.
    default = await post(client, "/plan", DEEPSEEK_FP8)
    assert default["capacity_basis"] == "driver"
    assert (default["gpu_count"], default["pipeline_parallel"]) == (16, 2)
    assert default["per_gpu"]["spare_bytes"] == 29_726_608_643


async def test_does_not_fit_names_the_smallest_split_that_would(client: Client) -> None:
    # The seed's 1, 2, 4 or 8 only: 8 H100s are short; 16 (two servers) would hold it.
    plan = await post(
        client, "/plan", {**DEEPSEEK_FP8, "splits": [1, 2, 4, 8], "capacity_basis": "marketed"}
    )
    assert plan["status"] == "does_not_fit" and plan["gpu_count"] == 8
    assert plan["smallest_fitting_split"] == {
        "gpu_count": 16,
        "tensor_parallel": 8,
        "pipeline_parallel": 2,
        "nodes": 2,
    }
    message = next(w["message"] for w in plan["warnings"] if w["code"] == "does_not_fit")
    assert "16 GPUs (tensor parallel 8 x 2 pipeline stages, 2 nodes)" in message
    # RTX 4090, default ladder (to 32): 24 GB x 0.9 - 4 GB = 17.6 GB < 673,150,552,416 / 32 =
    # 21,035,954,763 B. 64 = 8 nodes: 10,517,977,381 B + 8 x 8,192 x 8 x 576 = 301,989,888 B.
    small = await post(
        client, "/plan", {**DEEPSEEK_FP8, "gpu": "rtx-4090", "capacity_basis": "marketed"}
    )
    assert small["status"] == "does_not_fit" and small["gpu_count"] == 32
    assert small["smallest_fitting_split"] == {
        "gpu_count": 64,
        "tensor_parallel": 8,
        "pipeline_parallel": 8,
        "nodes": 8,
    }


async def test_options_rank_two_comfortable_h200s_above_an_amber_b200(client: Client) -> None:
    # Needed: 141,107,412,992 B of BF16 weights + 8 x 8,192 x 327,680 B of KV = 162,582,249,472.
    # Marketed: one B200, 192 GB x 0.9 - 4 GB = 168.8 GB: 6,217,750,528 B spare, 3.68% (amber);
    # two H200s, 2 x 122.9 GB = 245.8 GB: 83,217,750,528 B, 33.86% (fits); one MI355X (0014),
    # 288 GB x 0.9 - 4 GB = 255.2 GB: 92,617,750,528 B, 36.3%: one GPU that fits, first.
    body = {"model": "llama-3.1-70b", "weight_format": "bf16"}
    plan = await post(client, "/plan", {**body, "capacity_basis": "marketed"})
    options = {o["gpu"]: (i, o) for i, o in enumerate(plan["options"])}
    h200_rank, h200 = options["h200"]
    b200_rank, b200 = options["b200"]
    assert (h200["gpu_count"], h200["status"], h200["spare_bytes"]) == (2, "fits", 83_217_750_528)
    assert (b200["gpu_count"], b200["status"], b200["spare_bytes"]) == (1, "amber", 6_217_750_528)
    assert h200_rank < b200_rank and plan["gpu"] == "mi355x"
    assert (plan["gpu_count"], plan["spare_bytes"]) == (1, 92_617_750_528)
    assert plan["ranking_rule"].startswith("status first: plans that fit with at least 10% spare")
    # Driver (the default): MI300X 205,822,885,888 B x 0.9 -> 185,240,597,299 - 4 GB =
    # 181,240,597,299: 18,658,347,827 B spare, 10.3%; MI355X 309,216,170,475 x 0.9 ->
    # 278,294,553,427 - 4 GB: 111,712,303,955 B, 40.7%. One GPU that fits comfortably each;
    # within a status and a count, the most spare first.
    default = await post(client, "/plan", body)
    assert default["capacity_basis"] == "driver"
    assert (default["gpu"], default["gpu_count"], default["status"]) == ("mi355x", 1, "fits")
    assert default["spare_bytes"] == 111_712_303_955
    second = default["options"][1]
    assert (second["gpu"], second["gpu_count"], second["status"]) == ("mi300x", 1, "fits")
    assert second["spare_bytes"] == 18_658_347_827
    # A named GPU has no options to rank.
    assert (await post(client, "/plan", {**body, "gpu": "h200"}))["ranking_rule"] == ""


async def test_the_matrix_markdown_names_the_capacity_basis_its_numbers_use(client: Client) -> None:
    # The spares differ by basis (an H100 holds 80 GB marketed, 85,520,809,984 B visible), so
    # the readable matrix says which one it used: the default driver, or marketed when asked.
    query = "models=llama-3.1-70b&gpus=h100"
    markdown = {"Accept": "text/markdown"}
    default = await client.get(f"/matrix?{query}", headers=markdown)
    assert "90% fill, driver capacity;" in default.text
    marketed = await client.post(
        "/matrix",
        json={"models": ["llama-3.1-70b"], "gpus": ["h100"], "capacity_basis": "marketed"},
        headers=markdown,
    )
    assert "90% fill, marketed capacity;" in marketed.text
