"""Regenerate the README's screenshots of the page: fits, amber, does not fit, a saved plan.

    .venv/bin/python docs/screenshots/make.py

Starts the service on loopback with a fresh SQLite database, drives Debian's headless Chromium
(the same setup as tests/web) at 1280 x 800 and writes the PNGs beside this file. The amber
concurrency is found by asking /plan, so the picture stays right when the catalogue changes.
"""

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import httpx  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from service.db import migrate  # noqa: E402
from service.settings import Settings  # noqa: E402
from tests.conftest import new_key  # noqa: E402
from tests.loopback import served  # noqa: E402
from tests.web.browser import chromium, viewport  # noqa: E402

SETUP = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "weight_format": "bf16"}
REQUEST = {**SETUP, "capacity_basis": "marketed", "context_tokens": 8192}


def wait_for(driver: Any, concurrency: int) -> None:
    def done(d: Any) -> bool:
        answer = d.find_element(By.ID, "answer")
        sent = answer.get_attribute("data-request") or "{}"
        ready = answer.get_attribute("data-state") == "ready"
        return ready and json.loads(sent).get("concurrency") == concurrency

    WebDriverWait(driver, 20).until(done)


def amber_concurrency(base: str) -> int:
    """The first concurrency at which the plan turns amber (under 5% spare)."""
    for users in range(1, 1025):
        answer = httpx.post(f"{base}/plan", json={**REQUEST, "concurrency": users}).json()
        if answer["status"] == "amber":
            return users
    raise SystemExit("no amber concurrency up to 1,024 for this setup")


def set_number(driver: Any, name: str, value: int) -> None:
    field = driver.find_element(By.NAME, name)
    field.clear()
    field.send_keys(str(value))


async def saved_plan(base: str, database: str) -> tuple[int, str]:
    planner = {"Authorization": f"Bearer {await new_key(database, 'planner', 'alice')}"}
    reviewer = {"Authorization": f"Bearer {await new_key(database, 'reviewer', 'bob')}"}
    async with httpx.AsyncClient(base_url=base) as http:
        made = await http.post(
            "/plans",
            json={
                "name": "70B chat for 40 users",
                "notes": "Seed 1",
                "request": {**REQUEST, "concurrency": 40},
            },
            headers=planner,
        )
        plan_id = made.json()["id"]
        await http.post(f"/plans/{plan_id}/submit", headers={**planner, "If-Match": '"1"'})
        await http.post(
            f"/plans/{plan_id}/reviews",
            json={"decision": "approve", "comment": "Tight, but 48 users fit."},
            headers={**reviewer, "If-Match": '"2"'},
        )
    return plan_id, await new_key(database, "viewer", "carol")


def main() -> None:
    database = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'planner.db'}"
    migrate(database)
    with served(Settings(database_url=database)) as base:
        driver = chromium()
        try:
            viewport(driver, 1280, 800)
            driver.get(f"{base}/")
            wait_for(driver, 8)
            for name, value in SETUP.items():
                Select(driver.find_element(By.NAME, name)).select_by_value(value)
            Select(driver.find_element(By.NAME, "capacity_basis")).select_by_value("marketed")
            states = {"fits": 8, "amber": amber_concurrency(base), "does-not-fit": 1024}
            for name, users in states.items():
                set_number(driver, "concurrency", users)
                wait_for(driver, users)
                driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
                driver.save_screenshot(str(HERE / f"{name}.png"))
            plan_id, key = asyncio.run(saved_plan(base, database))
            driver.get(f"{base}/")
            driver.execute_script("sessionStorage.setItem('planner.api_key', arguments[0])", key)
            driver.get(f"{base}/plans/{plan_id}/view")
            WebDriverWait(driver, 20).until(
                lambda d: d.find_element(By.ID, "answer").get_attribute("data-state") == "ready"
            )
            driver.save_screenshot(str(HERE / "saved-plan.png"))
        finally:
            driver.quit()
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.png"))))


if __name__ == "__main__":
    main()
