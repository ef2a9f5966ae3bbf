"""VIST studies (storytelling, re-telling, descriptions) on the real Potato server."""

from __future__ import annotations

import time

import pytest

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.vist.data import read_official
from tests.support.potato_driver import Annotator, browser_login, chrome, click, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ALICE_ORDER = ["rocket", "astronaut", "camera", "coffee", "chelsea"]
ALICE = ["The rocket was ready at dawn.", "The astronaut smiled for one last photo.",
         "A photographer caught the moment.", "Back home we all needed a coffee.", "Even the cat was tired."]


def story_of(name: str) -> tuple[list[str], list[str]]:
    if name == "alice":
        return ALICE_ORDER, ALICE
    photos = ["china", "flower", "motorcycle", "grace_hopper", "astronaut"] if name == "bob" else \
        ["camera", "rocket", "coffee", "china", "chelsea"]
    return photos, [f"{name} writes sentence {k} about the {p} photo." for k, p in enumerate(photos, start=1)]


def story_answers(photos, sentences):
    out = {"story:::order": ",".join(photos)}
    out.update({f"story:::sentence_{k}": s for k, s in enumerate(sentences, start=1)})
    return out


@pytest.fixture(scope="module")
def album(studies, tmp_path_factory):
    return tmp_path_factory.mktemp("vist"), studies


def test_storytelling_through_the_page(album):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tmp, studies = album
    server = studies["servers"]["vist-storytelling"]
    folder = server.folder
    manifest = read_manifest(folder)
    t0 = time.monotonic()
    driver = chrome(tmp)
    try:
        browser_login(driver, server, "alice")
        WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".connote-story-photo")) == 9)
        shoot(driver, tmp, "vist-storytelling-empty")
        first = driver.find_element(By.ID, "instance_id").get_attribute("value")
        # pick the photos in a different order, then fix the order with the arrows
        for pid in ["astronaut", "rocket", "camera", "coffee", "chelsea"]:
            click(driver, driver.find_element(By.CSS_SELECTOR, f".connote-story-photo[data-photo='{pid}']"))
        cards = driver.find_elements(By.CSS_SELECTOR, ".connote-story-card")
        click(driver, cards[1].find_element(By.CSS_SELECTOR, "button[title='Move left']"))
        areas = driver.find_elements(By.CSS_SELECTOR, ".connote-story-card textarea")
        for area, sentence in zip(areas, ALICE[:4]):
            area.send_keys(sentence)
        # four sentences: the page must refuse to go on
        click(driver, driver.find_element(By.ID, "next-btn"))
        time.sleep(1.0)
        assert driver.find_element(By.ID, "instance_id").get_attribute("value") == first
        assert "write a sentence on 1 card" in driver.find_element(By.CSS_SELECTOR, ".connote-story-status").text
        areas[4].send_keys(ALICE[4])
        assert "Story complete" in driver.find_element(By.CSS_SELECTOR, ".connote-story-status").text
        shoot(driver, tmp, "vist-storytelling")
        click(driver, driver.find_element(By.ID, "next-btn"))
        WebDriverWait(driver, 30).until(lambda d: manifest["completion_code"] in d.page_source)
    finally:
        driver.quit()
    page_seconds = time.monotonic() - t0
    for name in ("bob", "carol"):
        ann = Annotator(server, name)
        assert ann.work(lambda inst, n=name: story_answers(*story_of(n))) == ["album-sample-album"]
    print(f"\nvist-storytelling: server start {server.start_seconds:.1f} s, alice through the page "
          f"{page_seconds:.1f} s")
    out = tmp / "stories.json"
    report = import_study(folder, out)
    vist = read_official(out)
    assert not vist.problems
    stories = {s.storylets[0].worker_id: s for s in vist.stories}
    assert sorted(stories) == ["alice", "bob", "carol"]
    for name, story in stories.items():
        photos, sentences = story_of(name)
        assert list(story.photo_ids) == photos
        assert [sl.original_text for sl in story.storylets] == sentences
    assert report.items_complete == 1 and report.extra["stories"] == 3
    assert main(["vist", "info", str(out)]) == 0
    before = out.read_bytes()
    import_study(folder, out)
    assert out.read_bytes() == before


def test_retelling_and_skip(album):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tmp, studies = album
    server = studies["servers"]["vist-retelling"]
    folder = server.folder
    manifest = read_manifest(folder)
    src = manifest["sources"][manifest["items"][0]]
    assert len(src["sequences"]) == 1  # the sample album has one story: its sequence is the one to re-tell
    board = src["sequences"][0]
    driver = chrome(tmp)
    try:
        browser_login(driver, server, "alice")
        WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".connote-story-card img")) == 5)
        for area, sentence in zip(driver.find_elements(By.CSS_SELECTOR, ".connote-story-card textarea"), ALICE):
            area.send_keys(sentence)
        WebDriverWait(driver, 10).until(
            lambda d: "Story complete" in d.find_element(By.CSS_SELECTOR, ".connote-story-status").text)
        shoot(driver, tmp, "vist-retelling")
        click(driver, driver.find_element(By.ID, "next-btn"))
        WebDriverWait(driver, 30).until(lambda d: manifest["completion_code"] in d.page_source)
    finally:
        driver.quit()
    Annotator(server, "bob").work(lambda inst: {**story_answers(board, story_of("bob")[1]), "story:::choice": "1"})
    Annotator(server, "carol").work(lambda inst: {"story:::order": "skip"})
    report = import_study(folder, tmp / "retold.json")
    vist = read_official(tmp / "retold.json")
    # the album's first-stage story ("sample") and the two new ones
    assert sorted(s.storylets[0].worker_id for s in vist.stories) == ["alice", "bob", "sample"]
    assert all(list(s.photo_ids) == board for s in vist.stories)
    assert report.extra["skipped"] == {src["album_id"]: ["carol"]} and report.extra["discarded_albums"] == []
    assert report.extra["choices"] == {src["album_id"]: {"alice": 1, "bob": 1}}


def test_descriptions_refuse_short_text(album):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tmp, studies = album
    server = studies["servers"]["vist-descriptions"]
    folder = server.folder
    manifest = read_manifest(folder)

    def describe(name):
        def answers(inst):
            iid = inst["instance_id"]
            want = manifest["attention"].get(iid, {}).get("description")
            return {"description:::text_box": want or f"{name} sees the {iid} photo with many details in it."}
        return answers

    driver = chrome(tmp)
    try:
        browser_login(driver, server, "alice")
        box = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "textarea.annotation-input"))
        first = driver.find_element(By.ID, "instance_id").get_attribute("value")
        box.send_keys("A cat.")
        click(driver, driver.find_element(By.ID, "next-btn"))
        alert = WebDriverWait(driver, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, ".connote-too-short"))
        assert "too short" in alert.text
        time.sleep(1.0)
        assert driver.find_element(By.ID, "instance_id").get_attribute("value") == first
        assert driver.find_element(By.CSS_SELECTOR, "textarea.annotation-input").is_displayed()
        shoot(driver, tmp, "vist-descriptions")
    finally:
        driver.quit()
    for name in ("alice", "bob"):
        Annotator(server, name).work(describe(name))
    out = tmp / "dii.json"
    report = import_study(folder, out)
    vist = read_official(out)
    assert vist.tier == "dii" and not report.incomplete
    got = {(d.photo_id, d.worker_id): d.original_text for ds in vist.descriptions.values() for d in ds}
    assert len(got) == 2 * len(manifest["items"])
    for iid in manifest["items"]:
        pid = manifest["sources"][iid]["photo_id"]
        for name in ("alice", "bob"):
            assert got[(pid, name)] == f"{name} sees the {iid} photo with many details in it."
