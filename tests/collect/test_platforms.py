"""`collect make --platform prolific|mturk` through the real Potato server on 127.0.0.1: headless Chromium arrives
with the platform's URL parameters, answers through the page, finishes with the completion code and the
platform's way back, cannot take the study again, and import names the annotators by their platform ids.

Chromium resolves no name but 127.0.0.1 and sends anything else to a closed local port, so the redirect to
Prolific is seen in the browser's address and never leaves the machine; MTurk's ``turkSubmitTo`` is a
recorder on 127.0.0.1 that keeps what the done page submits.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from pathlib import Path

import pytest

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from tests.support.potato_driver import (
    Server,
    chrome,
    click,
    need_browser_tools,
    page_instance,
    shoot,
    wait_for_next_page,
)
from tests.support.simulated import first_probes

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROLIFIC_CODE, MTURK_CODE = "C1PROLIFIC", "MTURK-DONE-7"
#: Anything that is not 127.0.0.1 fails in the browser itself: no name lookup, no connection outside.
OFFLINE_FLAGS = ("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--proxy-server=127.0.0.1:9")


class Recorder(http.server.BaseHTTPRequestHandler):
    """MTurk's externalSubmit endpoint, on loopback: keeps each POST's form fields."""

    posts: list[tuple[str, dict[str, list[str]]]] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        Recorder.posts.append((self.path, urllib.parse.parse_qs(body)))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body>HIT submitted</body></html>")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def platform_studies(tmp_path_factory):
    need_browser_tools()
    root = tmp_path_factory.mktemp("platforms")
    probes, ids = first_probes(root / "sample", 5)
    gold = root / "gold.csv"
    gold.write_text(f"item_id,question,answer\n{ids[1]},match,no match\n")
    folders = {"prolific": root / "prolific", "mturk": root / "mturk"}
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(folders["prolific"]),
                 "--platform", "prolific", "--completion-code", PROLIFIC_CODE, "--gold-items", str(gold),
                 "--gold-every", "2", "--per-item", "2"]) == 0
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(folders["mturk"]),
                 "--platform", "mturk", "--completion-code", MTURK_CODE, "--per-item", "2"]) == 0
    servers = {name: Server(folder) for name, folder in folders.items()}
    recorder = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    try:
        for server in servers.values():
            server.ready()
        yield {"servers": servers, "root": root, "recorder": recorder, "gold": ids[1]}
    finally:
        recorder.shutdown()
        for server in servers.values():
            server.stop()


def _browser(tmp: Path):
    return chrome(tmp, OFFLINE_FLAGS)


def _answer_every_page(driver, manifest: dict, gold: dict[str, dict[str, str]], limit: int = 20) -> list[str]:
    """Answer each page as a careful participant: attention checks as told, gold items right, items 'match'."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    seen = []
    for _ in range(limit):
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[type=radio]")
                                        or "/done" in d.current_url or "completion" in d.page_source.lower())
        if not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]"):
            break
        iid = page_instance(driver)
        want = (manifest["attention"].get(iid) or gold.get(iid) or {}).get("match", "match")
        radio = driver.find_element(By.CSS_SELECTOR, f"input[type=radio][value='{want}']")
        click(driver, driver.find_element(By.CSS_SELECTOR, f"label[for='{radio.get_attribute('id')}']"))
        seen.append(iid)
        click(driver, driver.find_element(By.ID, "next-btn"))
        wait_for_next_page(driver, iid)
    return seen


def test_prolific_participant_arrives_by_link_finishes_with_the_code_and_cannot_retake(platform_studies, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from connote.collect.serving import validate

    for study in platform_studies["servers"].values():  # Potato's own check knows every key the platform wrote
        checked = validate(study.folder)
        assert checked.returncode == 0 and "no issues found" in checked.stdout, checked.stdout + checked.stderr
    server = platform_studies["servers"]["prolific"]
    manifest = read_manifest(server.folder)
    gold = manifest["quality"]["gold"]
    assert platform_studies["gold"] in gold and platform_studies["gold"] not in manifest["items"]
    driver = _browser(tmp_path)
    try:
        driver.get(f"{server.url}/?PROLIFIC_PID=PPT-1&STUDY_ID=STUDY-9&SESSION_ID=SESSION-1")
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[type=radio]"))
        assert not driver.find_elements(By.ID, "login-email")  # the link is the login
        shoot(driver, tmp_path, "prolific-first-item")
        seen = _answer_every_page(driver, manifest, gold)
        assert set(manifest["items"]) <= set(seen) and platform_studies["gold"] in seen  # Potato showed the gold
        WebDriverWait(driver, 60).until(lambda d: PROLIFIC_CODE in d.page_source)
        back = driver.find_element(By.PARTIAL_LINK_TEXT, "Return to Prolific").get_attribute("href")
        assert back == f"https://app.prolific.com/submissions/complete?cc={PROLIFIC_CODE}"
        shoot(driver, tmp_path, "prolific-done")
        # the done page sends the participant back to Prolific by itself after 5 s (nothing leaves the machine:
        # the browser's own error page, or the address it tried, is all there is)
        assert f'window.location.href = "{back}"' in driver.page_source
        WebDriverWait(driver, 60).until(lambda d: not d.current_url.startswith(server.url))
        assert driver.current_url in (back, "chrome-error://chromewebdata/")
        # the same participant opening the link again gets the done page and the same code: no second batch
        driver.get(f"{server.url}/?PROLIFIC_PID=PPT-1&STUDY_ID=STUDY-9&SESSION_ID=SESSION-2")
        WebDriverWait(driver, 60).until(lambda d: PROLIFIC_CODE in d.page_source)
        assert not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")
        # someone without an id in the link (a fresh browser session) gets no study
        driver.delete_all_cookies()
        driver.get(f"{server.url}/")
        WebDriverWait(driver, 60).until(lambda d: d.title == "Error")
        assert not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")
        assert PROLIFIC_CODE not in driver.page_source
    finally:
        driver.quit()
    state = json.loads((server.folder / "annotation_output" / "PPT-1" / "user_state.json").read_text())
    answered = set(state["instance_id_to_label_to_value"])
    assert answered == set(seen)  # the return added nothing
    report = import_study(server.folder, platform_studies["root"] / "prolific-votes.csv", n_boot=50)
    row = next(r for r in report.reliability["annotators"] if r["annotator"] == "PPT-1")
    assert (row["gold_answered"], row["gold_correct"], row["excluded"]) == (1, 1, False)
    assert report.imported == len(manifest["items"])


def test_mturk_worker_previews_accepts_and_submits_the_assignment(platform_studies, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server = platform_studies["servers"]["mturk"]
    manifest = read_manifest(server.folder)
    recorder = f"http://127.0.0.1:{platform_studies['recorder'].server_address[1]}"
    Recorder.posts.clear()
    driver = _browser(tmp_path)
    try:
        driver.get(f"{server.url}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT-1")
        WebDriverWait(driver, 60).until(lambda d: "Accept the HIT" in d.page_source)
        assert not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")
        shoot(driver, tmp_path, "mturk-preview")
        driver.get(f"{server.url}/?workerId=WORKER-1&assignmentId=ASSIGN-1&hitId=HIT-1&turkSubmitTo="
                   + urllib.parse.quote(recorder, safe=""))
        seen = _answer_every_page(driver, manifest, {})
        assert set(manifest["items"]) <= set(seen)
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "mturk-form"))
        assert MTURK_CODE in driver.page_source
        shoot(driver, tmp_path, "mturk-done")
        click(driver, driver.find_element(By.CSS_SELECTOR, "#mturk-form button[type=submit]"))
        WebDriverWait(driver, 20).until(lambda d: "HIT submitted" in d.page_source)
    finally:
        driver.quit()
    assert Recorder.posts == [("/mturk/externalSubmit", {"assignmentId": ["ASSIGN-1"], "completionCode": [MTURK_CODE]})]
    report = import_study(server.folder, platform_studies["root"] / "mturk-votes.csv", n_boot=50)
    assert [r["annotator"] for r in report.reliability["annotators"]] == ["WORKER-1"]
    assert report.imported == len(manifest["items"])
