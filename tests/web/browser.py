"""One headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by its own
/usr/bin/chromedriver through Selenium, with nothing downloaded (SE_OFFLINE=1 keeps Selenium
Manager from fetching a driver or a browser; the paths are given explicitly).

Missing locally: the tests skip and say why. In CI (.ci/run sets REQUIRE_BROWSER=1, after
installing chromium and chromium-driver) a missing browser is a failure instead."""

import os
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,800",
)


def require_browser() -> None:
    """Skip (or, with REQUIRE_BROWSER=1, fail) when Debian's chromium or its driver is absent."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        reason = (
            f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver "
            "(.ci/run does)"
        )
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def chromium():  # type: ignore[no-untyped-def]
    """A fresh headless Chromium with its own profile, browser console logs kept."""
    os.environ["SE_OFFLINE"] = "1"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def viewport(driver, width: int, height: int, mobile: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Exactly width x height CSS pixels of page (a window size would include the frame)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )
