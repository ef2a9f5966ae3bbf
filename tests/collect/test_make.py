"""`connote collect make` without a server: files, left-out items, safe paths, bad input."""

from __future__ import annotations

import csv
import json

import yaml

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.collect.status import study_status
from connote.media.sample import write_sample_probes


def test_make_writes_a_complete_project_and_names_what_it_left_out(tmp_path, capsys):
    manifest = write_sample_probes(tmp_path / "sample")
    rows = list(csv.DictReader(manifest.open()))[:4]
    rows.append({**rows[0], "item_id": "../../escape", "image": "../../../../etc/hostname"})
    rows.append({**rows[1], "item_id": "gone", "image": "images/nothere.jpg"})
    bad = tmp_path / "sample" / "odd.csv"
    with bad.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(bad), "--out", str(out), "--per-item", "5"]) == 0
    err = capsys.readouterr().err
    assert "gone: image not found" in err
    made = read_manifest(out)
    assert "gone" not in made["items"] and made["per_item"] == 5
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["num_annotators_per_item"] == 5 and config["completion_code"] == made["completion_code"]
    assert config["attention_checks"]["enabled"] and (out / "attention.jsonl").read_text().count("expected_answer") == 2
    assert config["plugins"] == ["connote-collect"]
    assert "Worked example" in (out / "instructions.html").read_text()
    # every file the study wrote stays in its folder, whatever the source paths and ids looked like
    root = out.resolve()
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(root)
    for line in (out / "data.jsonl").read_text().splitlines():
        assert json.loads(line)["image"].startswith("/media/") and ".." not in json.loads(line)["image"]
    # the same input gives the same study (and completion code)
    assert main(["collect", "make", "probes-votes", "--from", str(bad), "--out", str(tmp_path / "again"),
                 "--per-item", "5"]) == 0
    assert read_manifest(tmp_path / "again")["completion_code"] == made["completion_code"]
    # nothing answered yet: status says so, import writes the manifest back with every item listed as open
    status = study_status(out)
    assert (status["done"], status["in_progress"], status["left"]) == (0, 0, len(made["items"]))
    report = import_study(out, tmp_path / "votes.csv")
    assert len(report.incomplete) == len(made["items"]) and report.imported == 0
    capsys.readouterr()
    assert main(["collect", "import", str(out), "--out", str(tmp_path / "votes.csv")]) == 1  # a finding, not 0
    assert "nothing was imported" in capsys.readouterr().err


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["collect", "make", "probes-votes", "--out", str(tmp_path / "x")]) == 2
    assert "needs one --data" in capsys.readouterr().err
    assert main(["collect", "make", "no-such-study", "--out", str(tmp_path / "x")]) == 2
    assert main(["collect", "status", str(tmp_path)]) == 2
    assert "connote-study.json missing" in capsys.readouterr().err
    (tmp_path / "photos").mkdir()
    assert main(["collect", "make", "vist-descriptions", "--from", str(tmp_path / "photos"), "--out",
                 str(tmp_path / "dii")]) == 2
    assert "no usable items" in capsys.readouterr().err
    manifest = write_sample_probes(tmp_path / "sample")
    out = tmp_path / "votes"
    assert main(["collect", "make", "probes-votes", "--from", str(manifest), "--out", str(out)]) == 0
    assert main(["collect", "make", "probes-votes", "--from", str(manifest), "--out", str(out)]) == 2
    assert main(["collect", "import", str(out), "--out", str(tmp_path / "v.csv"), "--scores", "s.json"]) == 2


def test_storytelling_leaves_out_missing_photos_and_short_albums(tmp_path, capsys):
    from connote.collect.samples import write_sample_album

    album = write_sample_album(tmp_path / "sample")
    (tmp_path / "sample" / "images" / "chelsea.jpg").unlink()
    out = tmp_path / "story"
    assert main(["collect", "make", "vist-storytelling", "--from", str(album), "--out", str(out)]) == 0
    made = read_manifest(out)
    assert any("photo chelsea: no image file" in r for r in made["left_out"])
    photos = json.loads((out / "data.jsonl").read_text().splitlines()[0])["photos"]
    assert [p["id"] for p in photos] == ["astronaut", "grace_hopper", "camera", "rocket", "coffee", "motorcycle",
                                         "china", "flower"]  # time order, without the missing photo
    assert "chelsea" in capsys.readouterr().err
    for name in ("astronaut", "grace_hopper", "camera", "rocket"):
        (tmp_path / "sample" / "images" / f"{name}.jpg").unlink()
    assert main(["collect", "make", "vist-storytelling", "--from", str(album), "--out", str(tmp_path / "s2")]) == 2
    assert "only 4 of its photos found" in capsys.readouterr().err
