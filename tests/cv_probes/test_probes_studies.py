"""CV-Probes studies on the real Potato server, driven by headless Chromium and over HTTP."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.collect.status import study_status
from connote.cv_probes.manifest import read_probe_manifest
from tests.support.potato_driver import (
    Annotator,
    browser_login,
    chrome,
    click,
    page_instance,
    shoot,
    wait_for_next_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# alice answers through the page; bob and carol over HTTP. Known answers, item by item.
ANNOTATORS = ("alice", "bob", "carol")


def vote_for(name: str, item_id: str) -> str:
    """A fixed, annotator-specific answer: alice says match to SG captions, bob to all but 'chelsea',
    carol alternates by item id length."""
    if name == "alice":
        return "match" if item_id.endswith("-sg") else "no match"
    if name == "bob":
        return "no match" if item_id.startswith("chelsea") else "match"
    return "match" if len(item_id) % 2 else "no match"


@pytest.fixture(scope="module")
def votes_study(studies, tmp_path_factory):
    return tmp_path_factory.mktemp("votes"), studies["servers"]["probes-votes"]


def _answers(name, manifest):
    def answers_for(inst):
        iid = inst["instance_id"]
        want = manifest["attention"].get(iid, {}).get("match") or vote_for(name, iid)
        return {f"match:::{want}": want}
    return answers_for


def test_votes_three_annotators_page_and_http(votes_study, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tmp, server = votes_study
    folder = server.folder
    manifest = read_manifest(folder)
    assert "ghost-sg" not in manifest["items"] and any("ghost" in r for r in manifest["left_out"])
    t0 = time.monotonic()
    driver = chrome(tmp)
    seen = []
    try:
        browser_login(driver, server, "alice")
        for step in range(12):
            WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[type=radio]"))
            iid = page_instance(driver)
            if step == 0:
                shoot(driver, tmp, "probes-votes")
            want = manifest["attention"].get(iid, {}).get("match") or vote_for("alice", iid)
            radio = driver.find_element(By.CSS_SELECTOR, f"input[type=radio][value='{want}']")
            click(driver, driver.find_element(By.CSS_SELECTOR, f"label[for='{radio.get_attribute('id')}']"))
            seen.append(iid)
            click(driver, driver.find_element(By.ID, "next-btn"))
            wait_for_next_page(driver, iid)
            if not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]"):
                break
        shoot(driver, tmp, "probes-votes-done")
        assert manifest["completion_code"] in driver.page_source
    finally:
        driver.quit()
    browser_seconds = time.monotonic() - t0
    items = set(manifest["items"])
    assert items <= set(seen)
    # bob leaves after two items and comes back: he continues where he stopped
    bob = Annotator(server, "bob")
    first = [bob.current()["instance_id"]]
    bob.answer(first[0], _answers("bob", manifest)(bob.current()))
    bob.next(first[0])
    again = Annotator(server, "bob")
    assert again.current()["instance_id"] != first[0]
    again.work(_answers("bob", manifest))
    Annotator(server, "carol").work(_answers("carol", manifest))

    status = study_status(folder)
    assert status["done"] == len(items) and status["left"] == 0 and not status["excluded"]
    capsys.readouterr()
    assert main(["collect", "status", str(folder), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["done"] == len(items) and [p["annotator"] for p in printed["annotators"]] == list(ANNOTATORS)
    assert all(p["done"] == len(items) and p["attention_checks_answered"] >= 1 for p in printed["annotators"])
    print(f"\nprobes-votes: server start {server.start_seconds:.1f} s, alice through the page "
          f"({len(seen)} items) {browser_seconds:.1f} s")
    out = tmp / "out" / "probes-with-votes.csv"
    report = import_study(folder, out)
    got = {it.item_id: it.human_votes for it in read_probe_manifest(out)}
    for iid in items:
        assert got[iid] == [1 if vote_for(n, iid) == "match" else 0 for n in ANNOTATORS], iid
    assert report.items_complete == len(items) and report.imported == 3 * len(items)
    first_bytes = out.read_bytes()
    import_study(folder, out)
    assert out.read_bytes() == first_bytes  # importing twice gives the same file
    labels = out.with_name("probes-with-votes.labels.csv")
    assert main(["agreement", str(labels), "--json"]) == 0


def test_votes_kappa_equals_agreement_command(votes_study, capsys):
    tmp, server = votes_study
    out = tmp / "out" / "probes-with-votes.csv"
    if not out.exists():
        pytest.skip("runs after the annotation test")
    report = import_study(server.folder, out)
    capsys.readouterr()
    assert main(["agreement", str(out.with_name("probes-with-votes.labels.csv")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report.agreement
    from connote.metrics.agreement import fleiss_kappa

    rows = [[vote_for(n, iid) for n in ANNOTATORS] for iid in read_manifest(server.folder)["items"]]
    assert report.agreement[0]["fleiss"] == pytest.approx(fleiss_kappa(rows), abs=1e-6)


@pytest.fixture(scope="module")
def validation_study(studies, tmp_path_factory):
    return tmp_path_factory.mktemp("validation"), studies["servers"]["probes-validation"]


def test_validation_repair_rule(validation_study):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tmp, server = validation_study
    folder = server.folder
    manifest = read_manifest(folder)
    items = manifest["items"]
    assert len(items) == 4  # grace_hopper (SG image) x coffee (PG image), paired by the verb "serves"
    presumed = {i: manifest["sources"][i]["presumed"] for i in items}
    assert presumed["t001-grace_hopper-sg"] == "only one" and presumed["t001-grace_hopper-pg"] == "both"
    wrong = {i: next(x for x in ("both", "only one", "neither") if x != presumed[i]) for i in items}

    def answers(name):
        def answers_for(inst):
            iid = inst["instance_id"]
            if iid in manifest["attention"]:
                want = manifest["attention"][iid]["applies"]
            # alice agrees with the presumed answers; bob and carol disagree on the first triplet only
            elif name == "alice" or iid != items[0]:
                want = presumed[iid]
            else:
                want = wrong[iid]
            return {f"applies:::{want}": want}
        return answers_for

    driver = chrome(tmp)
    try:
        browser_login(driver, server, "alice")
        WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[type=radio]"))
        time.sleep(0.5)
        shoot(driver, tmp, "probes-validation")
        assert len(driver.find_elements(By.CSS_SELECTOR, "img[src^='/media/']")) == 2
    finally:
        driver.quit()
    for name in ("alice", "bob", "carol"):
        assert Annotator(server, name).work(answers(name))
    # Potato enforces three annotators per item: a fourth gets no work
    assert Annotator(server, "dave").current() is None
    out = tmp / "validation.csv"
    report = import_study(folder, out)
    assert not report.excluded and not report.incomplete
    rows = {r["triplet_id"]: r for r in csv.DictReader(out.open())}
    assert rows[items[0]]["needs_repair"] == "1" and rows[items[0]]["disagree"] == "2"
    assert [rows[i]["needs_repair"] for i in items[1:]] == ["0", "0", "0"]
    assert rows[items[0]]["answers"] == ";".join([presumed[items[0]], wrong[items[0]], wrong[items[0]]])
    assert report.extra["needs_repair"] == 1
    assert study_status(folder)["done"] == len(items)


def test_media_paths_stay_inside(validation_study):
    _tmp, server = validation_study
    folder = server.folder.resolve()
    for path in folder.rglob("*"):
        assert path.resolve().is_relative_to(folder)
    config = (folder / "config.yaml").read_text()
    assert "VALID-42" in config and "num_annotators_per_item: 3" in config
    assert Path(folder / "instructions.html").read_text().count("Worked example") == 1
