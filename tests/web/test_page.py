"""The page at / and a saved plan's page, in a real headless Chromium (see tests/web/browser.py).

The oracle is always the API's own JSON for the very body the page sent (the page writes it in
``#answer[data-request]``), fetched here with httpx: the code under test is the page. One
browser and one server for the module keep its wall time small."""

import asyncio
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.web.browser import require_browser

require_browser()

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from service.db import migrate  # noqa: E402
from service.settings import Settings  # noqa: E402
from tests.conftest import new_key  # noqa: E402
from tests.loopback import served  # noqa: E402
from tests.web.browser import chromium, viewport  # noqa: E402

Driver = Any
RED, AMBER = "rgba(179, 38, 30, 1)", "rgba(199, 119, 0, 1)"  # page.css: --does_not_fit, --amber


@pytest.fixture(scope="module")
def database() -> str:
    # SQLite only: the page's behaviour does not depend on the backend (tests/db covers that).
    url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'planner.db'}"
    migrate(url)
    return url


@pytest.fixture(scope="module")
def base(database: str) -> Iterator[str]:
    with served(Settings(database_url=database)) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Driver]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(autouse=True)
def fresh_tab(browser: Driver) -> Iterator[None]:
    """Each test starts with an empty console log and no key, whatever the last one left."""
    browser.get("about:blank")
    browser.get_log("browser")
    yield
    if browser.current_url.startswith("http"):
        browser.execute_script("sessionStorage.clear()")


def severe(driver: Driver) -> list[str]:
    """The console's errors since the last call (reading the log empties it)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def settle(driver: Driver, want: Callable[[dict[str, Any]], bool], state: str = "ready") -> Any:
    """Wait until the page has answered a request body for which ``want`` holds."""

    def done(d: Driver) -> Any:
        answer = d.find_element(By.ID, "answer")
        sent = answer.get_attribute("data-request")
        if answer.get_attribute("data-state") != state or not sent:
            return False
        body = json.loads(sent)
        return body if want(body) else False

    return WebDriverWait(driver, 15, poll_frequency=0.05).until(done)


def bands(driver: Driver) -> dict[str, int]:
    rects = driver.find_elements(By.CSS_SELECTOR, "#picture rect[data-band]")
    return {r.get_attribute("data-band"): int(r.get_attribute("data-bytes")) for r in rects}


def lines(driver: Driver) -> dict[str, int]:
    found = driver.find_elements(By.CSS_SELECTOR, "#picture line[data-line]")
    return {x.get_attribute("data-line"): int(x.get_attribute("data-bytes")) for x in found}


def status_of(driver: Driver) -> str:
    return str(driver.find_element(By.ID, "status").get_attribute("data-status"))


def choose(driver: Driver, name: str, value: str) -> None:
    Select(driver.find_element(By.NAME, name)).select_by_value(value)


def plan(base: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{base}/plan", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def seventy_b_on_h100(driver: Driver, base: str) -> dict[str, Any]:
    driver.get(f"{base}/")
    settle(driver, lambda b: b.get("model") == "llama-3.1-70b")
    choose(driver, "gpu", "h100-sxm")
    choose(driver, "weight_format", "bf16")
    choose(driver, "capacity_basis", "marketed")
    return settle(  # type: ignore[no-any-return]
        driver,
        lambda b: (
            (b.get("gpu"), b.get("weight_format"), b.get("capacity_basis"))
            == ("h100-sxm", "bf16", "marketed")
        ),
    )


def test_concurrency_slider_past_the_fit_shows_plans_status_and_bytes(
    browser: Driver, base: str
) -> None:
    seventy_b_on_h100(browser, base)
    slider = browser.find_element(By.ID, "concurrency_range")
    seen: list[tuple[dict[str, Any], dict[str, int]]] = []
    for _ in range(30):  # Page Up moves a range a tenth of its span: 1..1024 in ten steps
        slider.send_keys(Keys.PAGE_UP)
        value = int(slider.get_attribute("value"))
        body = settle(browser, lambda b, v=value: b["concurrency"] == v)  # type: ignore[misc]
        seen.append((body, bands(browser)))
        if status_of(browser) == "does_not_fit":
            break
    assert status_of(browser) == "does_not_fit", "the slider's top never stopped fitting"
    assert len(seen) >= 2, "the first step already did not fit: nothing was moved past"

    # The last state that still fitted: its bar is /plan's busiest GPU, spare included.
    fitted_body, fitted_bands = seen[-2]
    fitted = plan(base, fitted_body)
    assert fitted["status"] != "does_not_fit"
    g = fitted["per_gpu"]
    assert fitted_bands == {
        "overhead": g["overhead_bytes"],
        "weights": g["weights_bytes"],
        "kv_cache": g["kv_cache_bytes"],
        "spare": g["spare_bytes"],
    }

    body, shown = seen[-1]
    answer = plan(base, body)
    g = answer["per_gpu"]
    assert answer["status"] == "does_not_fit"
    # By hand (marketed H100: 80 GB): capacity 80e9 B, utilisation line 80e9 x 0.9 = 72e9 B,
    # 4e9 B overhead. The closest split is 32 GPUs (TP 8 x 4 stages): 8 KV heads / 8 = one per
    # GPU and 80 / 4 = 20 layers, so 327,680 B/token / 32 = 10,240 B a token per GPU.
    assert (g["capacity_bytes"], g["usable_bytes"], g["overhead_bytes"]) == (80e9, 72e9, 4e9)
    assert answer["gpu_count"] == 32
    assert g["kv_cache_bytes"] == body["concurrency"] * 8192 * 10_240
    assert shown == {
        "overhead": g["overhead_bytes"],
        "weights": g["weights_bytes"],
        "kv_cache": g["kv_cache_bytes"],
        "shortfall": -g["spare_bytes"],
    }
    assert lines(browser) == {"utilisation": g["usable_bytes"], "capacity": g["capacity_bytes"]}
    status = browser.find_element(By.ID, "status")
    assert status.text == "does not fit"
    assert status.value_of_css_property("background-color") == RED
    warned = [
        li.get_attribute("data-code")
        for li in browser.find_elements(By.CSS_SELECTOR, "#warnings li")
    ]
    assert warned == [w["code"] for w in answer["warnings"]]
    assert severe(browser) == []


def test_bad_config_json_shows_the_apis_problem_beside_its_control(
    browser: Driver, base: str
) -> None:
    seventy_b_on_h100(browser, base)
    assert severe(browser) == []
    pasted = {"model_type": "not-a-model"}
    browser.find_element(By.NAME, "config_json").send_keys(json.dumps(pasted))
    body = settle(browser, lambda b: b.get("config_json") == pasted, state="problem")
    problem = httpx.post(f"{base}/plan", json=body).json()
    (error,) = problem["errors"]
    assert error["field"].split(".")[0] == "config_json"
    slot = browser.find_element(By.CSS_SELECTOR, "[data-problem-for=config_json]")
    assert error["message"] in slot.text and slot.is_displayed()
    assert browser.find_element(By.NAME, "config_json").get_attribute("aria-invalid") == "true"
    # The page keeps its last answer on screen: never blank, never a stack trace.
    assert browser.find_elements(By.CSS_SELECTOR, "#picture rect[data-band]")
    assert "Traceback" not in browser.page_source
    assert all("status of 422" in m for m in severe(browser))  # the refused request, only


def test_with_no_gpu_the_ranked_options_and_the_matrix_show_the_apis_statuses(
    browser: Driver, base: str
) -> None:
    body = seventy_b_on_h100(browser, base)
    choose(browser, "gpu", "")
    body = settle(browser, lambda b: "gpu" not in b)
    answer = plan(base, body)
    drawn = [
        (r.get_attribute("data-gpu"), r.get_attribute("data-status"))
        for r in browser.find_elements(By.CSS_SELECTOR, "#options rect[data-gpu]")
    ]
    assert drawn == [(o["gpu"], o["status"]) for o in answer["options"]]
    assert len(drawn) > 1

    browser.find_element(By.CSS_SELECTOR, "#matrix-box summary").click()
    cells = WebDriverWait(browser, 15).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#matrix td.cell")
    )
    query = {k: body[k] for k in ("concurrency", "context_tokens", "gpu_memory_utilization")}
    matrix = httpx.get(f"{base}/matrix?{urlencode({'models': body['model'], **query})}").json()
    expected = [c for row in matrix["rows"] for c in row["cells"]]
    assert [c.get_attribute("data-status") for c in cells] == [c["status"] for c in expected]
    ambers = [c for c, e in zip(cells, expected, strict=True) if e["amber"]]
    assert ambers, "no amber cell at these settings: choose others"
    assert all(c.value_of_css_property("background-color") == AMBER for c in ambers)
    assert severe(browser) == []


async def _reviewed_plan(base: str, database: str) -> tuple[int, str]:
    planner = {"Authorization": f"Bearer {await new_key(database, 'planner', 'alice')}"}
    reviewer = {"Authorization": f"Bearer {await new_key(database, 'reviewer', 'bob')}"}
    viewer = await new_key(database, "viewer", "carol")
    request = {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "concurrency": 40,
        "context_tokens": 8192,
        "capacity_basis": "marketed",
        "weight_format": "bf16",
    }
    async with httpx.AsyncClient(base_url=base) as http:
        made = await http.post(
            "/plans", json={"name": "70B chat", "request": request}, headers=planner
        )
        assert made.status_code == 201, made.text
        plan_id = made.json()["id"]
        submit = await http.post(f"/plans/{plan_id}/submit", headers={**planner, "If-Match": '"1"'})
        assert submit.status_code == 200, submit.text
        review = await http.post(
            f"/plans/{plan_id}/reviews",
            json={"decision": "approve", "comment": "room for 48"},
            headers={**reviewer, "If-Match": '"2"'},
        )
        assert review.status_code == 200, review.text
    return plan_id, viewer


def test_saved_plan_page_asks_for_a_key_then_shows_status_reviews_and_history(
    browser: Driver, base: str, database: str
) -> None:
    plan_id, viewer = asyncio.run(_reviewed_plan(base, database))
    browser.get(f"{base}/plans/{plan_id}/view")
    key_form = browser.find_element(By.ID, "key-form")
    WebDriverWait(browser, 15).until(lambda d: key_form.is_displayed())  # GET /plans/{id}: 401
    browser.find_element(By.ID, "api-key").send_keys(viewer, Keys.ENTER)
    WebDriverWait(browser, 15).until(
        lambda d: d.find_element(By.ID, "answer").get_attribute("data-state") == "ready"
    )
    stored = httpx.get(f"{base}/plans/{plan_id}", headers={"Authorization": f"Bearer {viewer}"})
    answer = stored.json()["answer"]
    # Seed 1 by hand: 4 H100s, 23,518,404,608 B spare of 272e9 = 8.6%: under 10%, "tight".
    assert (answer["status"], answer["gpu_count"]) == ("tight", 4)
    assert status_of(browser) == "tight"
    g = answer["per_gpu"]
    assert bands(browser) == {
        "overhead": g["overhead_bytes"],
        "weights": g["weights_bytes"],
        "kv_cache": g["kv_cache_bytes"],
        "spare": g["spare_bytes"],
    }
    assert browser.find_element(By.ID, "review-status").text == "approved"
    kinds = [
        r.get_attribute("data-kind")
        for r in browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    ]
    assert kinds == ["created", "submitted", "reviewed"]
    (review,) = browser.find_elements(By.CSS_SELECTOR, "#reviews li[data-decision]")
    assert review.get_attribute("data-decision") == "approve" and "room for 48" in review.text
    # The key lives in this tab's sessionStorage only.
    assert browser.execute_script("return sessionStorage.getItem('planner.api_key')") == viewer
    assert browser.execute_script("return localStorage.length") == 0
    assert all("status of 401" in m for m in severe(browser))  # the first, keyless, reads


def test_controls_are_labelled_keyboard_reachable_and_fit_a_phone(
    browser: Driver, base: str
) -> None:
    viewport(browser, 390, 844, mobile=True)
    try:
        browser.get(f"{base}/")
        settle(browser, lambda b: b.get("model") == "llama-3.1-70b")
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{overflow} px of horizontal scroll at 390 px"
    finally:
        viewport(browser, 1280, 800)
    unlabelled = browser.execute_script(
        "return [...document.querySelectorAll('#inputs input, #inputs select, #inputs textarea')]"
        ".filter(c => !c.labels.length && !c.getAttribute('aria-label')).map(c => c.id)"
    )
    assert unlabelled == []
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(40):  # Tab reaches the concurrency slider, and the arrow keys move it
        body.send_keys(Keys.TAB) if _ == 0 else browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.switch_to.active_element.get_attribute("id") == "concurrency_range":
            break
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "concurrency_range"
    before = int(focused.get_attribute("value"))
    focused.send_keys(Keys.ARROW_RIGHT)
    settle(browser, lambda b: b["concurrency"] == before + 1)
    assert severe(browser) == []


def test_vllm_method_draws_the_engines_bands_against_its_utilisation_line(
    browser: Driver, base: str
) -> None:
    seventy_b_on_h100(browser, base)
    choose(browser, "method", "vllm")
    body = settle(browser, lambda b: b.get("method") == "vllm")
    answer = plan(base, body)
    p = answer["prediction"]["per_gpu"]
    used = sum(
        p[k]
        for k in (
            "weights_bytes",
            "activation_bytes",
            "non_torch_bytes",
            "cuda_graph_bytes",
            "kv_cache_bytes",
        )
    )
    # vLLM's budget: usable = total x utilisation, filled by weights, the activation peak,
    # non-torch memory, CUDA graphs and the KV cache; what is left under the line is spare.
    expected = {
        "weights": p["weights_bytes"],
        "activation": p["activation_bytes"],
        "non_torch": p["non_torch_bytes"],
        "cuda_graph": p["cuda_graph_bytes"],
        "kv_cache": p["kv_cache_bytes"],
        "spare": p["usable_bytes"] - used,
    }
    assert bands(browser) == {k: v for k, v in expected.items() if v > 0}
    assert lines(browser) == {"utilisation": p["usable_bytes"], "capacity": p["total_bytes"]}
    assert status_of(browser) == ("fits" if answer["fits"] else "does_not_fit")
    assert severe(browser) == []


def test_with_require_auth_the_planner_asks_for_a_key_and_keeps_it_for_the_tab(
    browser: Driver, database: str
) -> None:
    viewer = asyncio.run(new_key(database, "viewer", "dave"))
    with served(Settings(database_url=database, require_auth=True)) as guarded:
        browser.get(f"{guarded}/")
        key_form = browser.find_element(By.ID, "key-form")
        WebDriverWait(browser, 15).until(lambda d: key_form.is_displayed())  # /models: 401
        browser.find_element(By.ID, "api-key").send_keys(viewer, Keys.ENTER)
        settle(browser, lambda b: b.get("model") == "llama-3.1-70b")
        assert not key_form.is_displayed()
        # The answer came with the key: the status names one of /plan's four.
        assert status_of(browser) in ("fits", "tight", "amber", "does_not_fit")
        assert browser.execute_script("return sessionStorage.getItem('planner.api_key')") == viewer
        assert browser.execute_script("return localStorage.length") == 0
        assert all("status of 401" in m for m in severe(browser))  # the keyless first load
