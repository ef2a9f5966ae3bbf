"""Reading official VIST files and challenge-format files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.vist.challenge import read_gold, read_submission, submission_dict
from connote.vist.data import order_photos, read_official, seq_id
from tests.support.vist_fixtures import DATES, official, story_anns, write


def test_sis_reading_and_ordering(sis_file: Path) -> None:
    vf = read_official(sis_file)
    assert vf.tier == "sis"
    assert set(vf.albums) == {"A1", "A2"}
    # album photos ordered by datetaken, not by file order
    assert vf.albums["A1"].photo_ids == ["11", "12", "13", "14", "15", "16"]
    assert vf.albums["A1"].vist_label == "beach"
    assert vf.images["13"].datetaken.hour == 12
    stories = {s.id: s for s in vf.stories}
    # storylets ordered by worker_arranged_photo_order
    assert stories["S1"].photo_ids == ("11", "12", "13", "14", "15")
    assert stories["S1"].text == "we arrived early . the sea was calm . we ate lunch . we swam . the sun set ."
    assert stories["S2"].photo_ids == ("16", "15", "14", "13", "12")
    assert stories["S1"].sequence.id == "11-12-13-14-15"
    assert len(vf.sequences()) == 3
    assert {a: len(v) for a, v in vf.stories_by_album().items()} == {"A1": 2, "A2": 1}
    assert len(vf.pairs()) == 14


def test_stories_without_five_storylets_are_reported(sis_file: Path) -> None:
    vf = read_official(sis_file)
    msgs = [str(p) for p in vf.problems]
    assert any("story S3" in m and "has 4 storylets, expected 5" in m for m in msgs)
    assert not any("story S1" in m for m in msgs)


def test_a_first_stage_story_of_six_photos_is_read_and_a_photo_twice_is_a_problem(tmp_path: Path) -> None:
    # VIST's storytelling asked for "at least five" photos; connote collect keeps as many as were chosen
    six = story_anns("S6", "A1", ["16", "11", "12", "13", "14", "15"], [f"sentence {k} ." for k in range(6)])
    twice = story_anns("S7", "A1", ["11", "12", "11", "13", "14"], [f"line {k} ." for k in range(5)])
    vf = read_official(write(tmp_path / "x.story-in-sequence.json", official(six + twice)))
    stories = {s.id: s for s in vf.stories}
    assert stories["S6"].photo_ids == ("16", "11", "12", "13", "14", "15")
    assert [str(p) for p in vf.problems] == [f"{tmp_path / 'x.story-in-sequence.json'}: story S7: has a photo twice"]


def test_dii_and_dis(tmp_path: Path) -> None:
    dii_anns = [[{"album_id": "A1", "photo_flickr_id": p, "text": f"a photo of {p} .", "tier":
                  "descriptions-in-isolation", "photo_order_in_story": i, "worker_id": "w"}]
                for i, p in enumerate(["11", "12", "11"])]
    p = write(tmp_path / "x.description-in-isolation.json", official(dii_anns))
    vf = read_official(p)
    assert vf.tier == "dii"
    assert not vf.stories
    assert {k: len(v) for k, v in vf.descriptions.items()} == {"11": 2, "12": 1}
    assert len(vf.pairs()) == 3
    dis = story_anns("D1", "A1", ["12", "11", "13", "14", "15"], list("abcde"), order=[1, 0, 2, 3, 4],
                     tier="descriptions-in-sequence")
    p2 = write(tmp_path / "x.dis.json", official(dis))
    vf2 = read_official(p2)
    assert vf2.tier == "dis"
    assert vf2.stories[0].photo_ids == ("11", "12", "13", "14", "15")


def test_order_photos_undated_last() -> None:
    from connote.vist.data import Image, parse_datetaken

    imgs = {"1": Image("1", datetaken=parse_datetaken("2010-01-02 00:00:00")),
            "2": Image("2", datetaken=parse_datetaken("2010-01-01 00:00:00")),
            "3": Image("3", datetaken=None)}
    assert order_photos(["3", "1", "2", "9"], imgs) == ["2", "1", "3", "9"]


def test_missing_images_and_bad_dates_reported(tmp_path: Path) -> None:
    obj = official(story_anns("S", "A1", ["11", "12", "13", "14", "99"], list("abcde")))
    obj["images"][0]["datetaken"] = "yesterday"
    vf = read_official(write(tmp_path / "s.sis.json", obj))
    msgs = " | ".join(map(str, vf.problems))
    assert "photo 99 is not in the images table" in msgs
    assert "unparseable datetaken 'yesterday'" in msgs


def test_non_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    obj = official(story_anns("S", "A1", ["11", "12", "13", "14", "15"],
                              ["caf\u00e9 time", "b", "c", "d", "e"]))
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8").replace("caf\u00e9".encode(), b"caf\xe9")
    p = tmp_path / "bad.sis.json"
    p.write_bytes(data)
    vf = read_official(p)
    assert vf.stories[0].storylets[0].text == "caf\ufffd time"
    assert any("not valid UTF-8" in str(x) for x in vf.problems)


def test_malformed_json_line_column(tmp_path: Path) -> None:
    p = tmp_path / "broken.json"
    p.write_text('{\n  "output_stories": [\n    {"album_id": "1",,}\n  ]\n}\n')
    with pytest.raises(InputError) as ei:
        read_submission(p)
    assert ei.value.line == 3 and ei.value.column == 22  # the second comma
    assert ei.value.exit_code == 2
    assert "broken.json" in str(ei.value)


def test_not_a_vist_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not an official VIST file"):
        read_official(write(tmp_path / "x.json", {"output_stories": []}))
    with pytest.raises(InputError, match="file not found"):
        read_official(tmp_path / "nope.json")


def test_challenge_roundtrip_and_gold(tmp_path: Path, sis_file: Path) -> None:
    obj = submission_dict([("A1", ["1", "2", "3", "4", "5"], "x y ."), ("A1", ["1", "2", "3", "4", "5"], "z ."),
                           ("A2", ["6", "7"], "")])
    sub = read_submission(write(tmp_path / "s.json", obj))
    assert len(sub.entries) == 3
    assert [len(v) for v in sub.by_sequence().values()] == [2, 1]
    assert any("has 2 photos, expected 5" in str(p) for p in sub.problems)
    g = read_gold(tmp_path / "s.json")
    assert g.by_sequence[("1", "2", "3", "4", "5")] == ["x y .", "z ."]
    assert g.by_sequence[("6", "7")] == []  # empty text dropped
    g2 = read_gold(sis_file)
    assert g2.by_album()["A1"][0].startswith("we arrived early")
    assert len(g2.by_sequence) == 3


def test_jsonl_predictions(tmp_path: Path) -> None:
    p = tmp_path / "gen.jsonl"
    p.write_text(json.dumps({"album_id": "A", "photo_sequence": ["1", "2"], "story": "hi", "error": None}) + "\n"
                 + json.dumps({"album_id": "A", "photo_sequence": ["3"], "story": "", "error": "boom"}) + "\n")
    sub = read_submission(p)
    assert [e.error for e in sub.entries] == [None, "boom"]
    assert seq_id(sub.entries[0].key) == "1-2"


def test_real_files(vist_dir: Path) -> None:
    sub = read_submission(vist_dir / "example-submission-file.test.json")
    assert len(sub.entries) == 2019 and not sub.problems
    assert all(len(e.photo_sequence) == 5 for e in sub.entries)
    tpl = read_submission(vist_dir / "vist-challenge-template.json")
    assert len(tpl.by_sequence()) == 1938
    assert len({e.album_id for e in tpl.entries}) == 971
    g = read_gold(vist_dir / "example-submission-file.test.json")
    assert len(g.by_sequence) == 2019
    assert all(len(v) == 1 for v in g.by_sequence.values())


def test_dates_fixture_sane() -> None:
    assert len(DATES) == 11


def test_cli_info(sis_file: Path, capsys) -> None:
    from connote.cli import main

    assert main(["vist", "info", str(sis_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tier"] == "sis" and out["stories"] == 3 and out["storylets_per_story"] == {"4": 1, "5": 2}
    assert out["n_problems"] == 1 and "has 4 storylets" in out["problems"][0]


def test_cli_info_real(vist_dir: Path, capsys) -> None:
    from connote.cli import main

    assert main(["vist", "info", str(vist_dir / "example-submission-file.test.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stories"] == 2019 and out["albums"] == 1011 and out["photo_sequences"] == 2019
