"""``traffic`` on /plan and /matrix: the contract and its relations (replicas x the load per
replica = the requested rate, the chosen option the cheapest that serves it, every cheaper one
failing with a reason), never the serving model's calibrated figures.

Prices (integer cents, USD): H100 SXM 2.99/h, H200 5.49/h; every other GPU unpriced."""

import csv
import io
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.render.speed import TRAFFIC_HEADERS
from tests.api.test_costs import set_prices

Client = AsyncTestClient[Litestar]
TRAFFIC = {"requests_per_s": 40, "input_tokens": 2000, "output_tokens": 300}
BODY = {"model": "qwen3-8b", "traffic": TRAFFIC}


@pytest.fixture
async def priced(client: Client, admin_headers: dict[str, str]) -> None:
    for slug, cents in (("h100-sxm", 299), ("h200", 549)):
        response = await set_prices(
            client,
            admin_headers,
            slug,
            currency="USD",
            hourly_price_cents=cents,
            price_observed_on="2025-06-30",
            price_source="test quote",
        )
        assert response.status_code == 200, response.text


async def plan(client: Client, body: dict[str, Any]) -> Any:
    response = await client.post("/plan", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def hourly(option: dict[str, Any]) -> int | None:
    return option["cost"]["hourly_cost_cents"] if option["cost"] else None


async def test_the_chosen_replicas_serve_the_rate_within_the_limits(client: Client) -> None:
    body = {**BODY, "traffic": {**TRAFFIC, "ttft_s": 1.0, "tpot_s": 0.05}}
    t = (await plan(client, body))["traffic"]
    assert t["feasible"]
    c = t["chosen"]
    assert c["gpu_count"] == c["replicas"] * c["tensor_parallel"] * c["pipeline_parallel"]
    assert c["replicas"] * c["requests_per_s_per_replica"] == pytest.approx(40)
    assert c["replicas"] * c["max_requests_per_s_per_replica"] >= 40 * (1 - 1e-9)
    assert c["ttft_s"] <= 1.0 and c["tpot_s"] <= 0.05 * (1 + 1e-6)
    assert 0 <= c["headroom"] < 1 and 0 < c["utilisation"] <= 0.9 + 1e-9
    assert c["max_requests_per_s_per_replica"] <= 0.9 * c["capacity_requests_per_s_per_replica"] * (
        1 + 1e-6
    )
    # Every GPU at every tensor-parallel size of a node is an option, or skipped because one
    # replica of it already ranks after the chosen: eleven GPUs of 8 per node (1, 2, 4, 8; MI355X
    # from 0014), the GH200's 4 (1, 2, 4) and the GB200's 72 (1, 2, 4, 8, 16, 32, 64, 72):
    # 11 x 4 + 3 + 8 = 55.
    assert len(t["options"]) + len(t["skipped"]) == 55
    assert all(o["gpus_per_replica"] <= c["gpu_count"] for o in t["options"] if o["feasible"])


async def test_the_cheapest_feasible_option_wins_and_cheaper_ones_say_why(
    client: Client, priced: None
) -> None:
    body = {**BODY, "traffic": {**TRAFFIC, "tpot_s": 0.05}}
    t = (await plan(client, body))["traffic"]
    options, chosen = t["options"], t["chosen"]
    at = options.index(chosen)
    assert chosen["cost"] is not None  # a priced GPU serves it: it ranks before the unpriced
    for o in options[:at]:
        assert not o["feasible"] and o["failures"] and o["summary"]
        assert all(f["code"] and f["field"] and f["message"] for f in o["failures"])
    assert t["why_not_cheaper"] == [o["summary"] for o in options[:at]]
    priced_feasible = [o for o in options if o["feasible"] and o["cost"]]
    assert hourly(chosen) == min(hourly(o) for o in priced_feasible)
    c = chosen["cost"]
    assert (
        c["currency"] == "USD"
        and c["hourly_cost_cents"] == chosen["gpu_count"] * c["hourly_price_cents"]
    )
    assert c["monthly_cost_cents"] == c["hourly_cost_cents"] * 730
    # Per million output tokens at the requested 40 x 300 tokens/s: 43.2 M an hour.
    assert c["cost_per_million_output_tokens_cents"] == round(c["hourly_cost_cents"] / 43.2)
    # An unpriced GPU ranks after every priced one that serves it: not evaluated.
    assert "TP1 on L40S" in t["skipped"]


async def test_limits_no_option_meets_are_a_200_saying_why_each_fails(client: Client) -> None:
    body = {**BODY, "traffic": {**TRAFFIC, "tpot_s": 0.0001}}
    t = (await plan(client, body))["traffic"]
    assert not t["feasible"] and t["chosen"] is None
    assert len(t["why_not_cheaper"]) == len(t["options"])
    codes = {f["code"] for o in t["options"] for f in o["failures"]}
    assert "tpot" in codes
    tpot = [f for o in t["options"] for f in o["failures"] if f["code"] == "tpot"]
    assert all(f["field"] == "traffic.tpot_s" and f["predicted_s"] > f["limit_s"] for f in tpot)
    assert all("TPOT" in f["message"] and "> 0.1 ms" in f["message"] for f in tpot)


async def test_the_memory_plan_is_unchanged_by_traffic(client: Client) -> None:
    without = await plan(client, {"model": "qwen3-8b", "gpu": "h100"})
    with_traffic = await plan(client, {**BODY, "gpu": "h100"})
    assert with_traffic["gpu_count"] == without["gpu_count"]
    assert without["traffic"] is None
    assert {o["gpu"] for o in with_traffic["traffic"]["options"]} == {"h100-sxm"}


async def test_the_vllm_method_answer_carries_the_traffic_too(client: Client) -> None:
    answer = await plan(client, {**BODY, "gpu": "h100", "method": "vllm"})
    assert answer["kind"] == "vllm" and answer["traffic"]["feasible"]


async def test_the_markdown_plan_has_a_traffic_section(client: Client, priced: None) -> None:
    response = await client.post("/plan", json=BODY, headers={"Accept": "text/markdown"})
    assert response.status_code == 200
    assert "## Traffic" in response.text and "USD/h" in response.text
    # The markdown states the same chosen option as the JSON answer, in the same words.
    summary = (await plan(client, BODY))["traffic"]["summary"]
    assert summary and summary in response.text


@pytest.mark.parametrize(
    ("traffic", "status", "field"),
    [
        ({"requests_per_s": 0}, 400, "traffic.requests_per_s"),
        ({"requests_per_s": -1}, 400, "traffic.requests_per_s"),
        ({"output_tokens": 0}, 400, "traffic.output_tokens"),
        ({"tpot_s": 0}, 400, "traffic.tpot_s"),
        ({"ttft_s": -1}, 400, "traffic.ttft_s"),
        ({"max_utilisation": 1.5}, 400, "traffic.max_utilisation"),
        ({"colour": "blue"}, 400, "traffic.colour"),
        # 2,000 + 300 tokens beyond the 2,048-token context the request sets:
        ({"context_tokens": 2048}, 422, "traffic.output_tokens"),
        # A 50,000-token context beyond Qwen3-8B's 40,960 (max_position_embeddings):
        ({"context_tokens": 50_000}, 422, "context_tokens"),
    ],
)
async def test_bad_traffic_is_a_problem_naming_the_field(
    client: Client, traffic: dict[str, Any], status: int, field: str
) -> None:
    changes = dict(traffic)  # the parameter is shared by every backend's run: left as it is
    extra = {"context_tokens": changes.pop("context_tokens")} if "context_tokens" in changes else {}
    body = {**BODY, **extra, "traffic": {**TRAFFIC, **changes}}
    response = await client.post("/plan", json=body)
    assert response.status_code == status, response.text
    assert field in [e["field"] for e in response.json()["errors"]]


async def test_training_plans_refuse_traffic(client: Client) -> None:
    response = await client.post("/plan", json={**BODY, "workload": "lora"})
    assert response.status_code == 422
    assert "traffic" in [e["field"] for e in response.json()["errors"]]


MATRIX = {
    "models": ["qwen3-8b"],
    "formats": ["bf16", "int4"],
    "gpus": ["h100", "l40s"],
    "traffic": TRAFFIC,
}


async def test_each_matrix_cell_gives_its_gpus_replicas_and_cost(
    client: Client, priced: None
) -> None:
    response = await client.post("/matrix", json=MATRIX)
    assert response.status_code == 200, response.text
    m = response.json()
    assert m["traffic"]["requests_per_s"] == 40
    bf16, int4 = m["rows"]
    for cell in bf16["cells"]:
        t = cell["traffic"]
        assert t["feasible"]
        assert t["gpu_count"] == t["replicas"] * t["tensor_parallel"]
        assert t["replicas"] * t["requests_per_s_per_replica"] == pytest.approx(40)
    h100, l40s = bf16["cells"]
    assert h100["traffic"]["cost"]["currency"] == "USD" and l40s["traffic"]["cost"] is None
    # The vLLM method loads no plain int4 checkpoint: each cell says so, the matrix answers.
    assert all(not c["traffic"]["feasible"] for c in int4["cells"])
    assert all("weight_format" in c["traffic"]["summary"] for c in int4["cells"])


async def test_the_matrix_csv_and_markdown_carry_the_traffic(client: Client) -> None:
    sheet = await client.post("/matrix", json=MATRIX, headers={"Accept": "text/csv"})
    rows = list(csv.reader(io.StringIO(sheet.text)))
    assert rows[0][-len(TRAFFIC_HEADERS) :] == TRAFFIC_HEADERS
    assert len(rows) == 1 + 4 and all(len(r) == len(rows[0]) for r in rows)
    md = await client.post("/matrix", json=MATRIX, headers={"Accept": "text/markdown"})
    assert "## GPUs for the traffic" in md.text


async def test_a_matrix_too_large_for_traffic_names_the_longest_list(client: Client) -> None:
    # The catalogue's 17 models x 13 formats x 11 GPUs = 2,431 cells > 1,024.
    formats = [f["slug"] for f in (await client.get("/formats?limit=100")).json()["items"]]
    body = {"formats": formats, "traffic": TRAFFIC}
    response = await client.post("/matrix", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "models"
