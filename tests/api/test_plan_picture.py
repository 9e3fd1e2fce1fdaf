"""The memory picture as SVG: POST /plan with Accept: image/svg+xml, a saved plan's
picture.svg, and GET /plan.svg (the link chat answers carry).

Numbers are the seeds' six-step plan, worked by hand in tests/plans/support.py, per GPU:
4 x H100 on the marketed basis hold 80,000,000,000 B each; x 0.9 = 72 GB usable; - 4 GB
overhead = 68 GB budget; weights 141,107,412,992 / 4 = 35,276,853,248 B; KV 107,374,182,400 / 4
= 26,843,545,600 B; spare 68,000,000,000 - 35,276,853,248 - 26,843,545,600 = 5,879,601,152 B.
"""

import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.plans.support import GB, SIX_STEP, Cast, Client, body, cast, create

SVG = "image/svg+xml"
NS = "{http://www.w3.org/2000/svg}"
REQUEST = {**SIX_STEP, "weight_format": "bf16"}


@pytest.fixture
async def people(database_url: str) -> Cast:
    return await cast(database_url, "-picture")


def parse(text: str) -> ET.Element:
    return ET.fromstring(text)  # fails on anything not well-formed, unescaped text included


def bands(svg: ET.Element, gpu: str = "0") -> dict[str, int]:
    return {
        r.attrib["data-band"]: int(r.attrib["data-bytes"])
        for r in svg.iter(f"{NS}rect")
        if "data-band" in r.attrib and r.attrib.get("data-gpu") == gpu
    }


def lines(svg: ET.Element) -> dict[str, int]:
    return {
        line.attrib["data-line"]: int(line.attrib["data-bytes"])
        for line in svg.iter(f"{NS}line")
        if "data-line" in line.attrib
    }


async def picture(client: Client, request: dict[str, Any]) -> ET.Element:
    response = await client.post("/plan", json=request, headers={"Accept": SVG})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(SVG)
    return parse(response.text)


async def test_six_step_picture_draws_each_gpu_at_the_hand_worked_bytes(client: Client) -> None:
    svg = await picture(client, REQUEST)
    assert svg.attrib["role"] == "img" and svg.attrib["data-status"] == "tight"
    for gpu in ("0", "1", "2", "3"):  # one bar per GPU of the 4-way split
        drawn = bands(svg, gpu)
        assert drawn["weights"] == 35_276_853_248
        assert drawn["kv_cache"] == 26_843_545_600
        assert drawn["overhead"] == 4 * GB
        assert drawn["spare"] == 5_879_601_152
        assert drawn["headroom"] == 80 * GB - 72 * GB  # what utilisation 0.9 keeps back
    assert bands(svg, "4") == {}
    assert lines(svg) == {"utilisation": 72 * GB, "oom": 80 * GB}  # 80 GB x 0.9; capacity
    assert "Llama" not in (svg.findtext(f"{NS}title") or "")  # the slug, as the answer names it
    assert svg.findtext(f"{NS}title") == "llama-3.1-70b on 4 x h100-sxm: tight"
    assert svg.find(f"{NS}desc") is not None
    text = " ".join(t.text or "" for t in svg.iter(f"{NS}text"))
    # 35,276,853,248 B = 35.28 GB = 32.85 GiB (/ 2^30); 72 GB = 67.06 GiB.
    assert "weights: 35.28 GB / 32.85 GiB" in text
    assert "utilisation: 72.00 GB / 67.06 GiB" in text
    assert "OOM (capacity): 80.00 GB / 74.51 GiB" in text
    status = [t for t in svg.iter(f"{NS}text") if "data-status-word" in t.attrib]
    assert [t.text for t in status] == ["tight"]
    pill = [r for r in svg.iter(f"{NS}rect") if r.attrib.get("fill") == "#f9a825"]
    assert len(pill) == 1  # the status in yellow
    assert "script" not in ET.tostring(svg, encoding="unicode").lower()


async def test_a_plan_that_does_not_fit_draws_its_overflow_in_red(client: Client) -> None:
    # One H200: 141 GB x 0.9 = 126.9 GB usable; 141,107,412,992 + 107,374,182,400 + 4 GB =
    # 252,481,595,392 B needed: 125,581,595,392 B over the utilisation line.
    svg = await picture(client, {**REQUEST, "gpu": "h200", "splits": [1]})
    assert svg.attrib["data-status"] == "does_not_fit"
    drawn = bands(svg)
    assert drawn["overflow"] == 252_481_595_392 - 126_900_000_000 == 125_581_595_392
    assert drawn["spare"] == 0
    overflow = next(r for r in svg.iter(f"{NS}rect") if r.attrib.get("data-band") == "overflow")
    assert overflow.attrib["fill"] == "#c62828"
    # It starts at the utilisation line and reaches past the OOM line (141 GB).
    line_y = {
        line.attrib["data-line"]: float(line.attrib["y1"])
        for line in svg.iter(f"{NS}line")
        if "data-line" in line.attrib
    }
    bottom = float(overflow.attrib["y"]) + float(overflow.attrib["height"])
    assert bottom == pytest.approx(line_y["utilisation"], abs=0.02)
    assert float(overflow.attrib["y"]) < line_y["oom"]
    assert [t.text for t in svg.iter(f"{NS}text") if "data-status-word" in t.attrib] == [
        "does not fit"
    ]


async def test_ranked_options_draw_the_best_one(client: Client) -> None:
    ranked = {k: v for k, v in REQUEST.items() if k != "gpu"}
    best = (await client.post("/plan", json=ranked)).json()
    svg = await picture(client, ranked)
    title = svg.findtext(f"{NS}title", "")
    assert title.startswith(f"llama-3.1-70b on {best['gpu_count']} x {best['gpu']}: ")
    assert bands(svg)["weights"] == best["per_gpu"]["weights_bytes"]
    assert lines(svg)["oom"] == best["per_gpu"]["capacity_bytes"]


async def test_a_hostile_model_name_is_escaped(client: Client) -> None:
    name = '<script>alert("x")</script> & <rect data-band="weights"/>'
    spec = {
        "slug": name,
        "total_params": 8_000_000_000,
        "layers": 32,
        "hidden_size": 4096,
        "attention_heads": 32,
        "kv_heads": 8,
        "max_context_tokens": 8192,
    }
    request = {k: v for k, v in REQUEST.items() if k != "model"}
    response = await client.post(
        "/plan", json={**request, "model_spec": spec}, headers={"Accept": SVG}
    )
    assert response.status_code == 200, response.text
    assert "<script" not in response.text and "&lt;script&gt;" in response.text
    svg = parse(response.text)
    assert svg.findtext(f"{NS}title", "").startswith(name + " on 1 x h100-sxm")
    assert not list(svg.iter(f"{NS}script"))
    assert sum(1 for r in svg.iter(f"{NS}rect") if r.attrib.get("data-band") == "weights") == 1


async def test_a_config_json_name_is_escaped_too(client: Client) -> None:
    config = {
        "_name_or_path": "evil/<b>&amp;",
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    request = {k: v for k, v in REQUEST.items() if k != "model"}
    response = await client.post(
        "/plan", json={**request, "config_json": config}, headers={"Accept": SVG}
    )
    assert response.status_code == 200, response.text
    assert "&lt;b&gt;&amp;amp;" in response.text
    assert parse(response.text).findtext(f"{NS}title", "").startswith("<b>&amp; on ")


async def test_a_vllm_plan_draws_the_engine_profile(client: Client) -> None:
    request = {"model": "llama-3.1-8b", "gpu": "h100", "method": "vllm", "concurrency": 8}
    answer = (await client.post("/plan", json=request)).json()
    g = answer["prediction"]["per_gpu"]
    drawn = bands(await picture(client, request))
    assert drawn["weights"] == g["weights_bytes"]
    assert drawn["activation_peak"] == g["activation_bytes"]
    assert drawn["non_torch"] == g["non_torch_bytes"]
    assert drawn["cuda_graphs"] == g["cuda_graph_bytes"]
    assert drawn["kv_pool"] == g["kv_cache_bytes"]
    # vLLM's rule: the KV pool is what the budget (total x utilisation) leaves, so the bands
    # fill it exactly and nothing is spare.
    stacked = sum(drawn[k] for k in drawn if k != "headroom")
    assert stacked == g["usable_bytes"] and drawn["spare"] == 0
    assert drawn["headroom"] == g["total_bytes"] - g["usable_bytes"]


async def test_a_training_plan_has_no_picture(client: Client) -> None:
    request = {"model": "llama-3.1-70b", "gpu": "h100", "workload": "training"}
    response = await client.post("/plan", json=request, headers={"Accept": SVG})
    assert response.status_code == 406
    assert "application/json" in response.json()["detail"]


async def test_a_saved_plan_picture_is_the_picture_of_its_stored_answer(
    client: Client, people: Cast
) -> None:
    plan = await create(client, people.alice, body(**REQUEST))
    fresh = await client.post("/plan", json=REQUEST, headers={"Accept": SVG})
    for path, accept in (
        (f"/plans/{plan['id']}/picture.svg", None),
        (f"/plans/{plan['id']}/picture.svg", SVG),
        (f"/plans/{plan['id']}", SVG),
    ):
        headers = {**people.vic, **({"Accept": accept} if accept else {})}
        response = await client.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"].startswith(SVG)
        assert response.headers["etag"] == '"1"'
        assert response.text == fresh.text
    assert (await client.get(f"/plans/{plan['id']}/picture.svg")).status_code == 401
    missing = await client.get("/plans/999999/picture.svg", headers=people.vic)
    assert missing.status_code == 404
    markdown = await client.get(
        f"/plans/{plan['id']}/picture.svg", headers={**people.vic, "Accept": "text/markdown"}
    )
    assert markdown.status_code == 406


async def test_a_saved_training_plan_has_no_picture(client: Client, people: Cast) -> None:
    plan = await create(client, people.alice, body(workload="training"))
    response = await client.get(f"/plans/{plan['id']}/picture.svg", headers=people.vic)
    assert response.status_code == 406


async def test_get_plan_svg_draws_the_plan_its_query_names(client: Client) -> None:
    fresh = await client.post("/plan", json=REQUEST, headers={"Accept": SVG})
    response = await client.get(f"/plan.svg?{urlencode(REQUEST)}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(SVG)
    assert response.text == fresh.text
    bad = await client.get("/plan.svg?model=llama-3.1-70b&concurrency=0")
    assert bad.status_code == 400 and "concurrency" in bad.text
