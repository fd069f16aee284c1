"""Helpers of the viewer tests: a real headless Chromium driven by selenium, and reports."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
#: Screenshots saved in this session (the terminal summary names the folder).
SAVED: list[Path] = []

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
]


def chromium_paths() -> tuple[str, str] | None:
    """The Chromium binary and its driver, or ``None`` when either is missing."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


def start_browser(dark: bool = False) -> Any:
    """A fresh headless Chromium (its own profile) with console and network logging."""
    paths = chromium_paths()
    if paths is None:
        pytest.skip(
            "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    profile = tempfile.mkdtemp(prefix="toolproof-chromium-")
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    if dark:
        options.add_argument("--force-dark-mode")
        options.add_argument("--blink-settings=preferredColorScheme=0")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=paths[1]), options=options)
    driver._toolproof_profile = profile  # removed in stop_browser
    return driver


def stop_browser(driver: Any) -> None:
    profile = getattr(driver, "_toolproof_profile", None)
    driver.quit()
    if profile:
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[dict[str, Any]]:
    """Console messages at SEVERE level since the last call (the log is drained)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def requested_urls(driver: Any) -> list[str]:
    """Every URL the page asked for since the last call (from the DevTools network log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def screenshot(driver: Any, name: str) -> Path:
    """Save a full-page screenshot under tests/artifacts/ and print where."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    height = driver.execute_script("return Math.min(document.body.scrollHeight, 6000)")
    driver.set_window_size(1280, max(int(height) + 40, 600))
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 1000)
    print(f"screenshot: {path}")
    SAVED.append(path)
    return path


def env_with_src() -> dict[str, str]:
    """The environment for a ``python -m toolproof`` subprocess using this checkout."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env
