"""The offline storytelling demo: packaged photos -> retrieval baseline -> album protocol."""

import json

import pytest

from connote.cli import main
from connote.vist.challenge import read_gold
from connote.vist.data import read_official
from connote.vist.sample import TRAIN, write_sample_vist


def test_sample_files_are_valid_vist(tmp_path):
    paths = write_sample_vist(tmp_path)
    train = read_official(paths["train"])
    assert len(train.stories) == 3 and all(len(s.storylets) == 5 for s in train.stories)
    gold = read_gold(paths["test"])
    assert len(gold.by_album()) == 3
    assert main(["vist", "validate", str(paths["template"]), "--template", str(paths["template"])]) == 0


@pytest.mark.slow
def test_demo_generates_and_scores_offline(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["story", "demo", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["protocol"] == "album"
    assert set(result["scores"]) >= {"BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D"}
    assert 0.0 < result["scores"]["METEOR"] < 1.0
    stories = [json.loads(x) for x in (out / "stories.jsonl").read_text().splitlines()]
    assert len(stories) == 3 and all(s["error"] is None for s in stories)
    # each test album retrieves the training story of its own photos (two albums once got the same story)
    assert [s["story"] for s in stories] == [" ".join(s for _, s in album[2]) for album in TRAIN]
