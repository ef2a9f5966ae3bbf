"""Open a report page in headless Chromium (selenium + chromium-driver) and measure what a reader sees."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def chromium_page(page: Path, tmp_path: Path, *, width: int = 1280) -> Iterator[Any]:
    """A headless Chromium driver showing ``page``; skips (or fails under CI) without Chromium."""
    from tests.support.needs import missing

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("selenium is not installed")
    if not chromium or not driver_path:
        missing("chromium and chromedriver are needed for the screenshot test")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
                 f"--window-size={width},1400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.get(page.resolve().as_uri())
        yield driver
    finally:
        driver.quit()


def image_widths(driver: Any) -> list[int]:
    """Each image's decoded width (0: not loaded)."""
    return driver.execute_script("return Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0)")


def tables_past_text_column(driver: Any) -> int:
    """How many tables run past the right edge of the page's text column (cut off for a reader)."""
    return driver.execute_script(
        "const m = document.querySelector('main').getBoundingClientRect().right;"
        "return Array.from(document.querySelectorAll('table')).filter(t => t.getBoundingClientRect().right > m + 1)"
        ".length")


def full_page_screenshot(driver: Any, path: Path, *, name: str) -> Path:
    """Save the whole page; also copy it to ``$CONNOTE_SCREENSHOTS/name`` when that is set."""
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(driver.get_window_size()["width"], min(int(height) + 100, 8000))
    driver.save_screenshot(str(path))
    if os.environ.get("CONNOTE_SCREENSHOTS"):
        target = Path(os.environ["CONNOTE_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / name)
    return path
