"""GPU prices (admin-edited), costs on plans and matrix cells, rank_by, CSV with units.

Prices set here (integer cents, USD): H100 SXM 2.99/h and 25,000.00 to buy; H200 5.49/h and
60,000.00 to buy; every other GPU unpriced. The workload is the seeds' default (8 conversations
of 8,192 tokens, BF16): 141,107,412,992 B of weights + 8 x 8,192 x 327,680 B = 21,474,836,480 B
of KV = 162,582,249,472 B. An H100 holds 80 GB x 0.9 - 4 GB = 68 GB: 3 would do but splits are
1/2/4/8, so 4. An H200 holds 141 GB x 0.9 - 4 GB = 122.9 GB: 2. A B200 or MI300X (168.8 GB): 1.
"""

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]
PRICES = {
    "h100-sxm": {"hourly_price_cents": 299, "purchase_price_cents": 2_500_000},
    "h200": {"hourly_price_cents": 549, "purchase_price_cents": 6_000_000},
}
OBSERVED = "2025-06-30"
# The seeds' marketed basis ("80 GB x 0.9"); the service's default is driver.
BODY = {"model": "llama-3.1-70b", "capacity_basis": "marketed"}


async def set_prices(client: Client, headers: dict[str, str], slug: str, **prices: Any) -> Any:
    row = (await client.get(f"/gpus/{slug}")).json()
    response = await client.put(f"/gpus/{slug}", json={**row, **prices}, headers=headers)
    return response


@pytest.fixture
async def priced(client: Client, admin_headers: dict[str, str]) -> None:
    for slug, prices in PRICES.items():
        response = await set_prices(
            client,
            admin_headers,
            slug,
            currency="USD",
            price_observed_on=OBSERVED,
            price_source="test quote",
            **prices,
        )
        assert response.status_code == 200, response.text


async def plan(client: Client, body: dict[str, Any]) -> Any:
    response = await client.post("/plan", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def test_prices_round_trip_through_the_catalogue(client: Client, priced: None) -> None:
    row = (await client.get("/gpus/h100")).json()
    assert row["currency"] == "USD" and row["price_observed_on"] == OBSERVED
    assert (row["hourly_price_cents"], row["purchase_price_cents"]) == (299, 2_500_000)
    assert row["price_source"] == "test quote"
    assert (await client.get("/gpus/b200")).json()["hourly_price_cents"] is None


async def test_a_plan_costs_gpu_count_times_the_prices(client: Client, priced: None) -> None:
    answer = await plan(client, {**BODY, "gpu": "h100"})
    # 4 x 299 = 1,196 cents an hour (11.96 USD); 4 x 2,500,000 = 10,000,000 cents (100,000 USD).
    assert answer["gpu_count"] == 4
    assert answer["cost"] == {
        "currency": "USD",
        "gpu_count": 4,
        "hourly_price_cents": 299,
        "purchase_price_cents": 2_500_000,
        "hourly_cost_cents": 1_196,
        "purchase_cost_cents": 10_000_000,
        "price_observed_on": OBSERVED,
        "price_source": "test quote",
    }
    h200 = await plan(client, {**BODY, "gpu": "h200"})
    # 2 x 549 = 1,098 cents an hour; 2 x 6,000,000 = 12,000,000 cents.
    assert h200["gpu_count"] == 2
    assert (h200["cost"]["hourly_cost_cents"], h200["cost"]["purchase_cost_cents"]) == (
        1_098,
        12_000_000,
    )
    unpriced = await plan(client, {**BODY, "gpu": "b200"})
    assert unpriced["cost"] is None


async def test_a_plan_that_does_not_fit_has_no_cost(client: Client, priced: None) -> None:
    answer = await plan(client, {**BODY, "gpu": "h100", "splits": [1]})
    assert answer["fits"] is False and answer["cost"] is None


async def test_rank_by_gpus_is_the_default(client: Client, priced: None) -> None:
    answer = await plan(client, BODY)
    assert answer["rank_by"] == "gpus" and answer["unpriced_gpus"] == []
    assert answer["ranking_rule"].startswith("status first")
    # Status first, then the fewest GPUs: one MI355X (288 GB x 0.9 - 4 GB = 255.2 GB against
    # 162,582,249,472 B: 36.3% spare), then 2 H200s (33.9%), before the amber single B200,
    # MI300X (3.7%) and GB200 (186 GB x 0.9 - 4 GB = 163.4 GB: 0.5%).
    status = {"fits": 0, "tight": 1, "amber": 2, "does_not_fit": 3}
    order = [(status[o["status"]], o["gpu_count"]) for o in answer["options"]]
    assert order == sorted(order)
    assert [o["gpu"] for o in answer["options"][:2]] == ["mi355x", "h200"]
    assert "no_price" not in {w["code"] for w in answer["warnings"]}


async def test_rank_by_hourly_cost(client: Client, priced: None) -> None:
    answer = await plan(client, {**BODY, "rank_by": "hourly_cost"})
    gpus = [o["gpu"] for o in answer["options"]]
    # H200 1,098 < H100 1,196 cents an hour; then the unpriced, by fewest GPUs.
    assert gpus[:2] == ["h200", "h100-sxm"]
    assert answer["gpu"] == "h200" and answer["cost"]["hourly_cost_cents"] == 1_098
    fitting_unpriced = [o["gpu"] for o in answer["options"][2:] if o["fits"]]
    assert answer["unpriced_gpus"] == fitting_unpriced and "b200" in fitting_unpriced
    assert all(o["cost"] is None for o in answer["options"][2:])
    warning = next(w for w in answer["warnings"] if w["code"] == "no_price")
    assert "b200" in warning["message"]


async def test_rank_by_purchase_cost(client: Client, priced: None) -> None:
    answer = await plan(client, {**BODY, "rank_by": "purchase_cost"})
    # H100 10,000,000 < H200 12,000,000 cents.
    assert [o["gpu"] for o in answer["options"][:2]] == ["h100-sxm", "h200"]
    assert answer["cost"]["purchase_cost_cents"] == 10_000_000


async def test_a_gpu_with_only_an_hourly_price_is_unpriced_for_purchase(
    client: Client, admin_headers: dict[str, str], priced: None
) -> None:
    # B200: 1 GPU at 899 cents an hour, no purchase price. Hourly: 899 < 1,098 < 1,196, but its
    # plan is amber (3.7%): after the H200s' and H100s' that fit with 10% spare or more, first
    # of the amber ones (priced before unpriced).
    response = await set_prices(
        client, admin_headers, "b200", currency="USD", hourly_price_cents=899
    )
    assert response.status_code == 200, response.text
    try:
        hourly = await plan(client, {**BODY, "rank_by": "hourly_cost"})
        assert [o["gpu"] for o in hourly["options"][:2]] == ["h200", "h100-sxm"]
        amber = [o["gpu"] for o in hourly["options"] if o["status"] == "amber"]
        assert amber[0] == "b200" and hourly["options"][0]["status"] == "fits"
        purchase = await plan(client, {**BODY, "rank_by": "purchase_cost"})
        assert [o["gpu"] for o in purchase["options"][:2]] == ["h100-sxm", "h200"]
        assert "b200" in purchase["unpriced_gpus"]
    finally:
        await set_prices(client, admin_headers, "b200", currency=None, hourly_price_cents=None)


async def test_prices_in_two_currencies_do_not_rank(
    client: Client, admin_headers: dict[str, str], priced: None
) -> None:
    response = await set_prices(client, admin_headers, "h200", currency="EUR")
    assert response.status_code == 200
    try:
        response = await client.post("/plan", json={**BODY, "rank_by": "hourly_cost"})
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == "rank_by"
        assert (await client.post("/plan", json=BODY)).status_code == 200  # gpus still ranks
    finally:
        await set_prices(client, admin_headers, "h200", currency="USD")


async def test_matrix_cells_carry_costs(client: Client, priced: None) -> None:
    response = await client.post(
        "/matrix", json={"models": ["llama-3.1-70b"], "formats": ["bf16"], "gpus": ["h100", "b200"]}
    )
    assert response.status_code == 200, response.text
    h100, b200 = response.json()["rows"][0]["cells"]
    assert h100["gpu_count"] == 4 and h100["cost"]["hourly_cost_cents"] == 1_196
    assert h100["cost"]["purchase_cost_cents"] == 10_000_000
    assert b200["gpu_count"] == 1 and b200["cost"] is None


async def test_matrix_and_plan_list_csv_name_their_units(client: Client, priced: None) -> None:
    csv_text = (
        await client.post(
            "/matrix",
            json={
                "models": ["llama-3.1-70b"],
                "formats": ["bf16"],
                "gpus": ["h200"],
                "capacity_basis": "marketed",
            },
            headers={"Accept": "text/csv"},
        )
    ).text
    header, row = csv_text.splitlines()
    fields = dict(zip(header.split(","), row.split(","), strict=True))
    assert fields["currency"] == "USD"
    assert fields["hourly_cost_cents"] == "1098" and fields["purchase_cost_cents"] == "12000000"
    assert fields["hourly_price_per_gpu_cents"] == "549"
    response = await client.post(
        "/plan", json={**BODY, "rank_by": "hourly_cost"}, headers={"Accept": "text/csv"}
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    lines = response.text.splitlines()
    columns = lines[0].split(",")
    for unit_column in ("spare_bytes", "spare_GB", "spare_GiB", "hourly_cost_cents"):
        assert unit_column in columns
    first = dict(zip(columns, lines[1].split(","), strict=True))
    assert (first["rank"], first["gpu"], first["gpu_count"]) == ("1", "h200", "2")
    # 2 x 122.9 GB - 162,582,249,472 B = 83,217,750,528 B = 83.218 GB; in GiB: 77.5 GiB is
    # 83,214,991,360 B, the remaining 2,759,168 B are 0.0026 GiB: 77.503 GiB.
    assert (first["spare_bytes"], first["spare_GB"], first["spare_GiB"]) == (
        "83217750528",
        "83.218",
        "77.503",
    )
    assert first["hourly_cost_cents"] == "1098"
    # One row per catalogue GPU (13: GH200 from migration 0013, MI355X from 0014).
    assert len(lines) == 1 + 13


@pytest.mark.parametrize(
    ("prices", "field"),
    [
        ({"hourly_price_cents": 100}, "currency"),
        ({"currency": "USD", "price_observed_on": "2025-02-30"}, "price_observed_on"),
    ],
)
async def test_bad_prices_are_422_naming_the_field(
    client: Client, admin_headers: dict[str, str], prices: dict[str, Any], field: str
) -> None:
    response = await set_prices(client, admin_headers, "l40s", **prices)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == field


async def test_a_negative_price_is_400_naming_it_as_the_schema_says(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # Money is >= 0 in the schema (GpuBody.hourly_price_cents: minimum 0), so decoding refuses it.
    response = await set_prices(
        client, admin_headers, "l40s", currency="USD", hourly_price_cents=-1
    )
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["field"] == "hourly_price_cents"


async def test_a_malformed_currency_is_400_naming_it(
    client: Client, admin_headers: dict[str, str]
) -> None:
    response = await set_prices(client, admin_headers, "l40s", currency="dollars")
    assert response.status_code == 400
    assert "currency" in response.text


async def test_prices_need_an_admin(client: Client) -> None:
    response = await set_prices(client, {}, "l40s", currency="USD", hourly_price_cents=1)
    assert response.status_code == 401


async def test_the_default_matrix_is_costed_again_after_a_price_changes(
    client: Client, admin_headers: dict[str, str]
) -> None:
    # GET /matrix without parameters is computed once per catalogue snapshot; a price
    # written through the API makes a new snapshot, so the next default matrix has it.
    def h100_cell(matrix: Any) -> Any:
        row = next(
            r
            for r in matrix["rows"]
            if r["model"] == "llama-3.1-70b" and r["weight_format"] == "bf16"
        )
        return next(c for c in row["cells"] if c["gpu"] == "h100-sxm")

    original = (await client.get("/gpus/h100-sxm")).json()
    before = h100_cell((await client.get("/matrix")).json())
    try:
        response = await set_prices(
            client, admin_headers, "h100-sxm", currency="USD", hourly_price_cents=301
        )
        assert response.status_code == 200, response.text
        after = h100_cell((await client.get("/matrix")).json())
        # 4 H100s (the module docstring's workload) x 3.01/h = 12.04/h.
        assert after["gpu_count"] == 4 and after["cost"]["hourly_cost_cents"] == 1_204
        assert before["cost"] is None or before["cost"]["hourly_cost_cents"] != 1_204
    finally:
        await client.put("/gpus/h100-sxm", json=original, headers=admin_headers)
