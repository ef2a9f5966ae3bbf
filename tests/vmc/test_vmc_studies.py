"""VMC studies (annotation questions a-h, caption evaluation) on the real Potato server."""

from __future__ import annotations

import csv
import json

import pytest

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.metrics.agreement import cohen_kappa, fleiss_kappa
from connote.vmc.data import read_caption_table
from tests.support.potato_driver import Annotator, browser_login, chrome, click, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RATERS = ("alice", "bob", "carol")


def vmc_answers(name: str, manifest: dict):
    """alice and bob find a metaphor in every video; carol not in carphone_distorted."""
    def answers(inst):
        iid = inst["instance_id"]
        if iid in manifest["attention"]:
            return {"metaphor:::no": "no"}
        if name == "carol" and iid == "carphone_distorted":
            return {"metaphor:::no": "no"}
        return {"metaphor:::yes": "yes", "audio_needed:::no": "no", "metaphor_time:::start": "1.5",
                "metaphor_time:::end": "4", "primary_concept:::text_box": f"the {iid}",
                "secondary_concept:::text_box": "a cheetah", "property:::text_box": "fast",
                "caption:::text_box": f"The {iid} is as fast as a cheetah ({name})",
                "description:::text_box": f"{name} watches {iid} move quickly across the screen."}
    return answers


def test_vmc_annotation_keeps_videos_all_marked_metaphoric(studies, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server = studies["servers"]["vmc-annotation"]
    manifest = read_manifest(server.folder)
    assert any("empty.mp4" in r for r in manifest["left_out"])
    driver = chrome(tmp_path)
    try:
        browser_login(driver, server, "alice")
        WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "video"))
        label = driver.find_element(By.CSS_SELECTOR, "label[for='" + driver.find_element(
            By.CSS_SELECTOR, "input[type=radio][value='yes']").get_attribute("id") + "']")
        click(driver, label)  # questions b-h appear once a) is "yes"
        WebDriverWait(driver, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "form#caption").is_displayed())
        shoot(driver, tmp_path, "vmc-annotation")
    finally:
        driver.quit()
    for name in RATERS:
        assert Annotator(server, name).work(vmc_answers(name, manifest))
    out = tmp_path / "vmc"
    report = import_study(server.folder, out)
    table = read_caption_table(out / "captions.csv")
    assert sorted(table) == ["bikes", "carphone_pristine"]  # carol said no metaphor for carphone_distorted
    assert table["bikes"] == [f"The bikes is as fast as a cheetah ({n})" for n in RATERS]
    assert report.extra["not_metaphoric_for_all"] == ["carphone_distorted"]
    segments = list(csv.DictReader((out / "segments.csv").open()))
    assert {(r["unique_id"], r["annotator"], r["start"], r["end"]) for r in segments} == {
        (v, n, "1.5", "4") for v in ("bikes", "carphone_pristine") for n in RATERS}
    concepts = list(csv.DictReader((out / "concepts.csv").open()))
    assert {r["primary_concept"] for r in concepts} == {"the bikes", "the carphone_pristine"}


def eval_label(name: str, item: str, criterion: str) -> str:
    """Known binary answers that differ between raters in a few places."""
    base = (len(item) + len(criterion)) % 2
    if name == "bob" and criterion == "creativity":
        base = 1 - base if "bikes" in item else base
    if name == "carol" and criterion == "fluency":
        base = 1
    return "yes" if base else "no"


def test_vmc_evaluation_kappa_and_acd(studies, tmp_path, capsys):
    server = studies["servers"]["vmc-evaluation"]
    manifest = read_manifest(server.folder)
    assert sorted(manifest["items"]) == ["bikes_gitllava", "bikes_videollava", "carphone_distorted_videollava",
                                         "carphone_pristine_gitllava", "carphone_pristine_videollava"]
    criteria = ("fluency", "creativity", "primary_concept_consistency", "consistency")
    driver = chrome(tmp_path)
    try:
        browser_login(driver, server, "alice")
        shoot(driver, tmp_path, "vmc-evaluation")
    finally:
        driver.quit()

    def answers(name):
        def for_item(inst):
            iid = inst["instance_id"]
            if iid in manifest["attention"]:
                return {f"{c}:::no": "no" for c in criteria}
            return {f"{c}:::{eval_label(name, iid, c)}": eval_label(name, iid, c) for c in criteria}
        return for_item

    for name in RATERS:
        Annotator(server, name).work(answers(name))
    # per-video ACD of one run, as `connote metaphor score` writes it
    acd = {"bikes": 0.61, "carphone_pristine": 0.12}
    scores = studies["runs"] / "gitllava" / "scores.json"
    scores.write_text(json.dumps({"per_video": {v: {"ACD": a} for v, a in acd.items()}}))
    out = tmp_path / "eval"
    report = import_study(server.folder, out)
    capsys.readouterr()
    assert main(["agreement", str(out / "labels.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report.agreement
    items = manifest["items"]
    for row in report.agreement:
        if row["criterion"] == "all":
            continue
        labels = {n: [eval_label(n, i, row["criterion"]) for i in items] for n in RATERS}
        want = fleiss_kappa([[labels[n][k] for n in RATERS] for k in range(len(items))])
        assert row["fleiss"] == (None if want != want else pytest.approx(want, abs=1e-6))
        ab = next(c for c in row["cohen"] if (c["a"], c["b"]) == ("alice", "bob"))
        want_ab = cohen_kappa(labels["alice"], labels["bob"])
        assert ab["kappa"] == (None if want_ab != want_ab else pytest.approx(want_ab, abs=1e-6))
    corr = json.loads((out / "acd_creativity.json").read_text())
    xs, ys = [], []
    for video, value in acd.items():
        for name in RATERS:
            xs.append(value)
            ys.append(1.0 if eval_label(name, f"{video}_gitllava", "creativity") == "yes" else 0.0)
    from scipy.stats import pearsonr

    assert corr["per_judgement"]["n"] == 6
    assert corr["per_judgement"]["r"] == pytest.approx(pearsonr(xs, ys)[0], abs=1e-6)
