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
from tests.support.simulated import first_probes


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
    capsys.readouterr()
    assert main(["collect", "import", str(out), "--out", str(tmp_path / "v.csv"), "--aggregate", "vote"]) == 2
    assert "--aggregate must be one of majority, dawid-skene, mace, got 'vote'" in capsys.readouterr().err
    assert main(["collect", "import", str(out), "--out", str(tmp_path / "v.csv"), "--n-boot", "-1"]) == 2


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


def test_platform_gold_items_and_rule_go_into_potatos_config_and_the_study(tmp_path, capsys):
    probes, ids = first_probes(tmp_path / "sample", 5)
    gold = tmp_path / "gold.csv"
    gold.write_text(f"item_id,question,answer\n{ids[0]},match,match\n{ids[3]},match,no match\n")
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(out), "--platform",
                 "prolific", "--per-participant", "2", "--gold-items", str(gold), "--gold-every", "3",
                 "--max-failed-checks", "1", "--completion-code", "C0DE"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["study_link"].endswith("?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                                          "&SESSION_ID={{%SESSION_ID%}}")
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["login"] == {"type": "url_direct", "url_argument": "PROLIFIC_PID"}
    assert config["crowdsourcing"] == {"provider": "prolific", "prolific": {"id_param": "PROLIFIC_PID",
                                                                          "completion": {"code": "C0DE"}}}
    assert config["auto_redirect_on_completion"] and config["max_annotations_per_user"] == 2
    assert config["hide_navbar"] and config["jumping_to_id_disabled"]
    assert config["gold_standards"]["items_file"] == "gold.jsonl" and config["gold_standards"]["frequency"] == 3
    made = read_manifest(out)
    assert made["quality"] == {"rule": {"max_failed_checks": 1, "min_gold_accuracy": 0.7},
                               "gold": {ids[0]: {"match": "match"}, ids[3]: {"match": "no match"}}, "gold_every": 3}
    assert made["items"] == [i for i in ids if i not in (ids[0], ids[3])] and made["platform"] == "prolific"
    in_data = [json.loads(line)["id"] for line in (out / "data.jsonl").read_text().splitlines()]
    in_gold = [json.loads(line) for line in (out / "gold.jsonl").read_text().splitlines()]
    assert in_data == made["items"] and [g["id"] for g in in_gold] == [ids[0], ids[3]]
    assert in_gold[1]["gold_label"] == {"match": "no match"} and in_gold[1]["image"].startswith("/media/")
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(tmp_path / "mturk"),
                 "--platform", "mturk"]) == 0
    config = yaml.safe_load((tmp_path / "mturk" / "config.yaml").read_text())
    assert config["login"]["url_argument"] == "workerId" and config["crowdsourcing"]["provider"] == "mturk"
    assert "auto_redirect_on_completion" not in config and "gold_standards" not in config


def test_bad_gold_items_exit_2_naming_the_line_and_leave_no_study(tmp_path, capsys):
    probes, ids = first_probes(tmp_path / "sample", 5)
    out = tmp_path / "study"
    cases = {
        f"item_id,question,answer\n{ids[0]},match,match\nnope,match,match\n": "line 3",
        f"item_id,question,answer\n{ids[0]},fluency,yes\n": "question 'fluency' is not one of the study's: match",
        f"item_id,question,answer\n{ids[0]},match,maybe\n": "answer 'maybe' is not one of match, no match",
        f"item_id,question,answer\n{ids[0]},match,match\n{ids[0]},match,match\n": "twice",
        f"item,answer\n{ids[0]},match\n": "expected the columns item_id, question, answer",
        "item_id,question,answer\n" + "".join(f"{i},match,match\n" for i in ids): "every item would be a gold item",
    }
    for k, (text, message) in enumerate(cases.items()):
        gold = tmp_path / f"gold{k}.csv"
        gold.write_text(text)
        capsys.readouterr()
        assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(out),
                     "--gold-items", str(gold)]) == 2, text
        err = capsys.readouterr().err
        assert message in err and str(gold) in err and "Traceback" not in err, err
        assert not out.exists()  # the refused study is not left half-made
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(out),
                 "--min-gold-accuracy", "0.8"]) == 2
    assert "--min-gold-accuracy needs --gold-items" in capsys.readouterr().err
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(out), "--platform", "mturk",
                 "--login", "prolific"]) == 2
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(out), "--platform",
                 "crowdflower"]) == 2
    assert "--platform must be one of prolific, mturk" in capsys.readouterr().err
    from connote.collect.samples import write_sample_album

    album = write_sample_album(tmp_path / "album")
    gold = tmp_path / "story-gold.csv"
    gold.write_text("item_id,question,answer\nalbum-sample-album,storyable,no\n")
    assert main(["collect", "make", "vist-storytelling", "--data", str(album), "--out", str(tmp_path / "story"),
                 "--gold-items", str(gold)]) == 2
    assert "no multiple-choice question a gold item could check" in capsys.readouterr().err
