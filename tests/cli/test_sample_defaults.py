"""Without data, ``story generate`` and ``metaphor caption`` run on packaged sample data and say so."""

import json

import pytest

from connote.cli import main
from connote.vist.sample import TRAIN


@pytest.mark.slow
def test_story_generate_without_data_uses_the_sample_and_demo_generator(tmp_path, capsys) -> None:
    out = tmp_path / "story"
    assert main(["story", "generate", "--out", str(out), "--json", "--no-progress"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["n_sequences"] == 3 and summary["n_errors"] == 0
    assert "no SEQUENCES: using the sample VIST set" in captured.err
    stories = [json.loads(x) for x in (out / "stories.jsonl").read_text().splitlines()]
    assert stories[0]["story"] == " ".join(s for _, s in TRAIN[0][2])  # the space photos find the space story
    # story demo builds the same generator (the spec it prints names the image index) and writes the same stories
    assert main(["story", "demo", "--out", str(tmp_path / "demo"), "--json"]) == 0
    assert "index_by=image" in capsys.readouterr().err
    assert (tmp_path / "demo" / "stories.jsonl").read_text() == (out / "stories.jsonl").read_text()


@pytest.mark.slow
def test_metaphor_caption_without_videos_uses_the_sample(tmp_path, capsys) -> None:
    pytest.importorskip("av")
    from connote.vmc.sample import CLIPS, TEST

    out = tmp_path / "cap"
    assert main(["metaphor", "caption", "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["videos"] == 3 and summary["captioned"] == 3 and summary["errors"] == 0
    assert "no --videos: using the sample VMC set" in captured.err and "nearest:" in captured.err
    rows = {r["video_id"]: r["text"] for r in map(json.loads, (out / "captions.jsonl").read_text().splitlines())}
    photo = {vid: p for vid, p, _, _ in CLIPS}
    first_caption = {p: caps[0] for vid, p, _, caps in CLIPS if vid not in TEST}
    assert rows == {vid: first_caption[photo[vid]] for vid in TEST}  # the training clip of the same photo
    # scoring without --refs: the sample's caption table and test split, the same numbers as naming them
    assert main(["metaphor", "score", str(out), "--bootstrap", "50", "--json"]) == 0
    captured = capsys.readouterr()
    assert "no --refs: scoring against the sample set's captions" in captured.err
    default = json.loads(captured.out)[0]["table"]
    assert main(["metaphor", "score", str(out), "--refs", str(out / "sample" / "vmc.csv"), "--split",
                 str(out / "sample" / "test.txt"), "--bootstrap", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["table"] == default and default["ROUGE-L"] > 0
    assert main(["metaphor", "score", str(tmp_path)]) == 2  # not a sample run: --refs is needed
    assert "--refs is needed" in capsys.readouterr().err


def test_metaphor_caption_with_videos_needs_a_model(tmp_path, capsys) -> None:
    assert main(["metaphor", "caption", "--videos", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "--model is needed" in capsys.readouterr().err
