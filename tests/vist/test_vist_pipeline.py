"""VIST's crowdsourcing workflow as the paper ran it (§3, Figure 2), on real Potato servers driven by
headless Chromium: storytelling (at least five photos; two skips discard an album) -> re-telling (the
album's two first-stage sequences to choose from) -> DII and DIS on the sequence with stories from a
majority of workers -> official SIS, DII and DIS files that `connote datasets check` and `connote vist
stats` take (three tiers of Table 2)."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.collect.samples import write_sample_album
from connote.vist.data import read_official
from tests.support.potato_driver import Annotator, browser_login, chrome, click, need_browser_tools, running, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHOTO, CARD_PHOTO = ".connote-story-photo", ".connote-story-card img"
ALBUM = "sample-album"
COINS = "coins"
ALICE_ORDER = ["rocket", "astronaut", "camera", "coffee", "chelsea", "flower"]  # six photos
ALICE = ["The rocket was ready at dawn.", "The astronaut smiled for one last photo.",
         "A photographer caught the moment.", "Back home we all needed a coffee.", "Even the cat was tired.",
         "Someone had left flowers on the doorstep."]
BOB_ORDER = ["astronaut", "grace_hopper", "rocket", "camera", "coffee"]
BOB = ["Our crew met early on launch day.", "The admiral arrived to wish us luck.",
       "Our rocket looked huge against the sky.", "Cameras were everywhere on the field.",
       "Afterwards we shared coffee and stories."]
DAVE = ["We gathered before the big launch.", "An old officer told us about her first flight.",
        "The rocket waited on the pad.", "I took a picture for my family.", "We ended the day with hot coffee."]


def story_answers(photos, sentences, choice=None):
    out = {"story:::order": ",".join(photos)}
    out.update({f"story:::sentence_{k}": s for k, s in enumerate(sentences, start=1)})
    if choice is not None:
        out["story:::choice"] = str(choice)
    return out


def describe(name, photos):
    return [f"{name} sees photo {k} of the sequence, the {p.replace('_', ' ')} picture, in clear daylight."
            for k, p in enumerate(photos, start=1)]


def two_albums(root):
    """The sample album (9 photos) and a second album of six photos (copies under new ids): the one that
    both storytellers skip."""
    sis = write_sample_album(root)
    doc = json.loads(sis.read_text())
    for k, src in enumerate(["coffee", "camera", "china", "flower", "motorcycle", "rocket"], start=1):
        shutil.copyfile(root / "images" / f"{src}.jpg", root / "images" / f"coin{k}.jpg")
        doc["images"].append({"id": f"coin{k}", "album_id": COINS, "datetaken": f"2016-06-01 09:0{k}:00",
                              "title": f"coin {k}", "url_o": f"images/coin{k}.jpg"})
    doc["albums"].append({"id": COINS, "title": "My coin collection", "photos": 6})
    path = root / "albums.story-in-sequence.json"
    path.write_text(json.dumps(doc))
    return path


def wait_text(driver, css, text, timeout=15):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: text in d.find_element(By.CSS_SELECTOR, css).text)


def instance(driver):
    return driver.execute_script("var e = document.getElementById('instance_id'); return e ? e.value : null;")


def next_page(driver, previous):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    click(driver, driver.find_element(By.ID, "next-btn"))
    WebDriverWait(driver, 30).until(lambda d: instance(d) != previous)


def finish(driver, tmp, shot, code, done="Story complete"):
    """The page says the text is complete: screenshot, Next, and the done page with the completion code."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait_text(driver, ".connote-story-status", done)
    shoot(driver, tmp, shot)
    click(driver, driver.find_element(By.ID, "next-btn"))
    WebDriverWait(driver, 30).until(lambda d: code in d.page_source)


def test_the_papers_workflow_through_the_pages(tmp_path, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    need_browser_tools()
    t0 = time.monotonic()
    source = two_albums(tmp_path / "sample")
    images = tmp_path / "sample" / "images"

    # ---- stage 1: storytelling (2 workers per album, the paper's default)
    story = tmp_path / "story"
    assert main(["collect", "make", "vist-storytelling", "--from", str(source), "--out", str(story)]) == 0
    made = read_manifest(story)
    assert made["per_item"] == 2 and made["items"] == [f"album-{ALBUM}", f"album-{COINS}"]
    with running(story) as server:
        driver = chrome(tmp_path)
        try:
            browser_login(driver, server, "alice")
            WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, PHOTO)) == 9)
            first = instance(driver)
            assert first == f"album-{ALBUM}"
            for pid in ALICE_ORDER:
                click(driver, driver.find_element(By.CSS_SELECTOR, f".connote-story-photo[data-photo='{pid}']"))
            cards = driver.find_elements(By.CSS_SELECTOR, ".connote-story-card")
            assert len(cards) == 6
            areas = driver.find_elements(By.CSS_SELECTOR, ".connote-story-card textarea")
            for area, sentence in zip(areas, ALICE[:5] + [ALICE[0]]):  # the last card repeats the first
                area.send_keys(sentence)
            wait_text(driver, ".connote-story-status", "cards 1 and 6 say the same")
            click(driver, driver.find_element(By.ID, "next-btn"))
            time.sleep(1.0)
            assert instance(driver) == first  # the page refuses a story whose sentences repeat
            shoot(driver, tmp_path, "vist-storytelling-six-refused")
            areas[5].clear()
            areas[5].send_keys(ALICE[5])
            wait_text(driver, ".connote-story-status", "Story complete")
            shoot(driver, tmp_path, "vist-storytelling-six")
            next_page(driver, first)
            assert instance(driver) == f"album-{COINS}"
            WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, PHOTO)) == 6)
            click(driver, driver.find_element(By.CSS_SELECTOR, ".connote-story-skip-box"))
            wait_text(driver, ".connote-story-status", "Marked to skip")
            shoot(driver, tmp_path, "vist-storytelling-skip")
            click(driver, driver.find_element(By.ID, "next-btn"))
            WebDriverWait(driver, 30).until(lambda d: made["completion_code"] in d.page_source)
        finally:
            driver.quit()
        bob = Annotator(server, "bob")
        assert bob.work(lambda inst: {"story:::order": "skip"} if inst["instance_id"].endswith(COINS)
                        else story_answers(BOB_ORDER, BOB)) == [f"album-{ALBUM}", f"album-{COINS}"]
    stories = tmp_path / "stories.json"
    report = import_study(story, stories)
    assert report.extra["skipped_albums"] == {COINS: ["alice", "bob"]}
    assert report.extra["discarded_albums"] == [COINS]
    assert report.extra["photos_per_story"] == {"5": 1, "6": 1} and report.extra["refused"] == []
    first_stage = read_official(stories)
    assert not first_stage.problems and set(first_stage.stories_by_album()) == {ALBUM}
    told = {s.storylets[0].worker_id: s for s in first_stage.stories}
    assert list(told["alice"].photo_ids) == ALICE_ORDER  # the worker's order and number of photos
    assert [sl.original_text for sl in told["alice"].storylets] == ALICE
    assert list(told["bob"].photo_ids) == BOB_ORDER
    capsys.readouterr()
    assert main(["collect", "import", str(story), "--out", str(tmp_path / "again.json")]) == 0
    assert f'discarded_albums: ["{COINS}"]' in capsys.readouterr().out

    # ---- stage 2: re-telling (3 workers), the album's two first-stage sequences to choose from
    retell = tmp_path / "retell"
    assert main(["collect", "make", "vist-retelling", "--from", str(stories), "--images", str(images),
                 "--out", str(retell)]) == 0
    made = read_manifest(retell)
    src = made["sources"][f"album-{ALBUM}"]
    assert made["per_item"] == 3 and src["sequences"] == [ALICE_ORDER, BOB_ORDER]
    with running(retell) as server:
        driver = chrome(tmp_path)
        try:
            browser_login(driver, server, "dave")
            WebDriverWait(driver, 30).until(
                lambda d: len(d.find_elements(By.CSS_SELECTOR, ".connote-story-choice-row")) == 2)
            assert len(driver.find_elements(By.CSS_SELECTOR, ".connote-story-photo")) == 9  # the album, in time order
            assert len(driver.find_elements(By.CSS_SELECTOR, ".connote-story-card")) == 0
            wait_text(driver, ".connote-story-status", "choose one of the photo sequences")
            shoot(driver, tmp_path, "vist-retelling-choose")
            click(driver, driver.find_element(By.CSS_SELECTOR, ".connote-story-choice-row[data-sequence='2']"))
            cards = driver.find_elements(By.CSS_SELECTOR, CARD_PHOTO)
            assert len(cards) == 5
            for area, sentence in zip(driver.find_elements(By.CSS_SELECTOR, ".connote-story-card textarea"), DAVE):
                area.send_keys(sentence)
            finish(driver, tmp_path, "vist-retelling-second", made["completion_code"])
        finally:
            driver.quit()
        Annotator(server, "erin").work(lambda inst: story_answers(BOB_ORDER, [s + " Erin agrees." for s in BOB], 2))
        Annotator(server, "frank").work(lambda inst: story_answers(ALICE_ORDER, [s.replace(".", " again.")
                                                                                 for s in ALICE], 1))
    sis = tmp_path / "sis.json"
    report = import_study(retell, sis)
    assert report.extra["choices"] == {ALBUM: {"dave": 2, "erin": 2, "frank": 1}}
    assert report.extra["preferred"] == {ALBUM: BOB_ORDER}  # bob, dave and erin: 3 of the album's 5 workers
    assert report.extra["stories"] == 3 and report.extra["first_stage_stories"] == 2
    assert report.extra["refused"] == [] and report.items_complete == 1
    full = read_official(sis)
    assert not full.problems and len(full.stories) == 5
    retold = {s.storylets[0].worker_id: s for s in full.stories if s.id.startswith("retelling")}
    assert list(retold["dave"].photo_ids) == BOB_ORDER and [sl.original_text for sl in retold["dave"].storylets] == DAVE
    assert list(retold["frank"].photo_ids) == ALICE_ORDER

    # ---- DII and DIS, 3 workers each, on the sequence with stories from a majority of workers
    dis_dir, dii_dir = tmp_path / "dis", tmp_path / "dii"
    for study, folder in (("vist-descriptions-in-sequence", dis_dir), ("vist-descriptions", dii_dir)):
        assert main(["collect", "make", study, "--from", str(stories), str(sis), "--images", str(images),
                     "--out", str(folder)]) == 0
    dis_made, dii_made = read_manifest(dis_dir), read_manifest(dii_dir)
    assert dis_made["per_item"] == 3 and dii_made["per_item"] == 3
    assert [s["photos"] for s in dis_made["sources"].values()] == [BOB_ORDER]
    assert [dii_made["sources"][i]["photo_id"] for i in dii_made["items"]] == BOB_ORDER
    with running(dis_dir) as server, running(dii_dir) as dii_server:
        driver = chrome(tmp_path)
        try:
            browser_login(driver, server, "gina")
            WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, CARD_PHOTO)) == 5)
            assert not driver.find_element(By.CSS_SELECTOR, ".connote-story-album").is_displayed()
            areas = driver.find_elements(By.CSS_SELECTOR, ".connote-story-card textarea")
            texts = describe("gina", BOB_ORDER)
            for area, sentence in zip(areas, ["A man."] + texts[1:]):
                area.send_keys(sentence)
            wait_text(driver, ".connote-story-status", "card 1 has 2 words; each needs at least 8")
            first = instance(driver)
            click(driver, driver.find_element(By.ID, "next-btn"))
            time.sleep(1.0)
            assert instance(driver) == first
            shoot(driver, tmp_path, "vist-dis-refused")
            areas[0].clear()
            areas[0].send_keys(texts[0])
            finish(driver, tmp_path, "vist-dis", dis_made["completion_code"], "Descriptions complete")
        finally:
            driver.quit()
        for name in ("hank", "ivy"):
            assert len(Annotator(server, name).work(lambda inst, n=name: story_answers(
                BOB_ORDER, describe(n, BOB_ORDER)))) == 1
        for name in ("gina", "hank", "ivy"):
            done = Annotator(dii_server, name).work(lambda inst, n=name: {"description:::text_box": (
                dii_made["attention"].get(inst["instance_id"], {}).get("description")
                or f"{n} describes the {inst['instance_id']} photo in one long sentence.")})
            assert set(dii_made["items"]) <= set(done)
    dis, dii = tmp_path / "dis.json", tmp_path / "dii.json"
    report = import_study(dis_dir, dis)
    assert report.extra["sequences_described"] == 3 and report.extra["descriptions"] == 15
    described = read_official(dis)
    assert described.tier == "dis" and not described.problems
    assert sorted(s.storylets[0].worker_id for s in described.stories) == ["gina", "hank", "ivy"]
    assert all(list(s.photo_ids) == BOB_ORDER for s in described.stories)
    report = import_study(dii_dir, dii)
    isolated = read_official(dii)
    assert isolated.tier == "dii" and not isolated.problems and report.imported == 15
    assert {d.album_id for ds in isolated.descriptions.values() for d in ds} == {ALBUM}

    # ---- the files are VIST's: datasets check passes, vist stats gives the three tiers of Table 2
    for path, entry in ((sis, "sis/train.story-in-sequence.json"), (dii, "dii/train.description-in-isolation.json"),
                        (dis, "dis/description-in-sequence.json")):
        capsys.readouterr()
        assert main(["datasets", "check", "vist", str(path), "--file", entry, "--json"]) == 0
        checked = json.loads(capsys.readouterr().out)["files"][0]
        assert checked["status"] == "ok" and checked["problems"] == [], checked
    capsys.readouterr()
    assert main(["vist", "stats", str(sis), str(dii), str(dis), "--no-parse", "--json", "--min-count", "1",
                 "--no-progress"]) == 0
    table2 = json.loads(capsys.readouterr().out)["table2"]
    assert [(r["tier"], r["pairs"]) for r in table2] == [("SIS", 6 + 5 + 5 + 5 + 6), ("DII", 15), ("DIS", 15)]
    print(f"\nthe whole workflow through four Potato servers: {time.monotonic() - t0:.1f} s")
