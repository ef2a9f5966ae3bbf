"""Submission validation, including every broken file shipped in ../shared/data/vist."""

from __future__ import annotations

import json
from pathlib import Path

from connote.cli import main
from connote.vist.validate import validate_submission
from tests.support.vist_fixtures import challenge, write

S1, S2, S3 = ["1", "2", "3", "4", "5"], ["6", "7", "8", "9", "10"], ["11", "12", "13", "14", "15"]


def _tpl(tmp_path: Path) -> Path:
    return write(tmp_path / "tpl.json", challenge([("A", S1, ""), ("A", S2, ""), ("B", S3, "")]))


def test_valid(tmp_path: Path) -> None:
    sub = write(tmp_path / "s.json", challenge([("A", S1, "a ."), ("A", S2, "b ."), ("B", S3, "")]))
    r = validate_submission(sub, _tpl(tmp_path))
    assert r.ok and r.exit_status == 0 and r.empty_stories == 1


def test_missing_extra_duplicate(tmp_path: Path) -> None:
    sub = write(tmp_path / "s.json", challenge([("A", S1, "a ."), ("A", S1, "again ."),
                                               ("C", ["9", "9", "9", "9", "9"], "x"), ("A", S3, "y")]))
    r = validate_submission(sub, _tpl(tmp_path))
    assert r.exit_status == 1
    assert r.missing == [tuple(S2)]
    assert r.extra == [("9",) * 5]
    assert r.duplicates == {tuple(S1): 2}
    assert r.album_mismatch == [(tuple(S3), "A", "B")]
    d = r.to_dict()
    assert d["n_missing"] == 1 and d["missing"] == [S2] and d["n_duplicates"] == 1
    text = "\n".join(r.lines())
    assert "6-7-8-9-10" in text and "INVALID" in text


def test_malformed_entries(tmp_path: Path) -> None:
    obj = challenge([("A", S1, "a"), ("A", S2, "b"), ("B", S3, "c")])
    obj["output_stories"][1]["photo_sequence"] = ["6", "7"]
    del obj["output_stories"][2]["story_text_normalized"]
    r = validate_submission(write(tmp_path / "s.json", obj), None)
    msgs = [str(p) for p in r.problems]
    assert r.exit_status == 1
    assert any("output_stories[1]" in m and "has 2 photos" in m for m in msgs)
    assert any("output_stories[2]" in m and "missing 'story_text_normalized'" in m for m in msgs)


def test_cli_exit_codes(tmp_path: Path, capsys) -> None:
    tpl = _tpl(tmp_path)
    good = write(tmp_path / "g.json", challenge([("A", S1, "a"), ("A", S2, "b"), ("B", S3, "c")]))
    bad = tmp_path / "bad.json"
    bad.write_text('{"output_stories": [\n  {"album_id": "A" "photo_sequence": []}\n]}')
    assert main(["vist", "validate", str(good), "--template", str(tpl)]) == 0
    assert main(["vist", "validate", str(bad), "--template", str(tpl)]) == 2
    err = capsys.readouterr().err
    assert f"error: {bad}, line 2, column 20: malformed JSON" in err
    assert main(["vist", "validate", str(good), "--template", str(bad)]) == 2  # bad template: input error


# ---------------------------------------------------------------- the real files


def test_real_example_submission(vist_dir: Path, capsys) -> None:
    tpl = vist_dir / "vist-challenge-template.json"
    r = validate_submission(vist_dir / "example-submission-file.test.json", tpl)
    # 2,019 human stories cover the 1,938 template sequences plus 81 sequences outside it
    assert r.n_entries == 2019 and r.n_template == 1938
    assert not r.missing and len(r.extra) == 81 and not r.duplicates
    assert r.exit_status == 1


def test_real_template_against_itself(vist_dir: Path) -> None:
    tpl = vist_dir / "vist-challenge-template.json"
    r = validate_submission(tpl, tpl)
    assert r.ok and r.empty_stories == 1938


def test_real_empty_and_happy_are_valid(vist_dir: Path) -> None:
    tpl = vist_dir / "vist-challenge-template.json"
    for name in ("example-submission-file-extra.empty.test.json", "example-submission-file-extra.happy.test.json"):
        r = validate_submission(vist_dir / name, tpl)
        assert r.exit_status == 0, name
    assert validate_submission(vist_dir / "example-submission-file-extra.empty.test.json", tpl).empty_stories == 1938


def test_real_missing(vist_dir: Path, capsys) -> None:
    tpl = vist_dir / "vist-challenge-template.json"
    sub = vist_dir / "example-submission-file-extra.missing.happy.test.json"
    r = validate_submission(sub, tpl)
    assert r.exit_status == 1 and len(r.missing) == 1 and not r.extra and not r.duplicates
    first = ["7002675114", "7148761587", "7002675998", "7148771071", "7002682260"]
    assert r.missing == [tuple(first)]
    assert main(["vist", "validate", str(sub), "--template", str(tpl), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["n_missing"] == 1 and out["missing"] == [first]


def test_real_wrong(vist_dir: Path, capsys) -> None:
    tpl = vist_dir / "vist-challenge-template.json"
    sub = vist_dir / "example-submission-file-extra.wrong.happy.test.json"
    r = validate_submission(sub, tpl)
    assert r.exit_status == 2
    assert r.malformed == {"line": 17, "column": 7, "message": "Expecting ',' delimiter"}
    assert main(["vist", "validate", str(sub), "--template", str(tpl)]) == 2
    assert ", line 17, column 7: malformed JSON: Expecting ',' delimiter" in capsys.readouterr().err


def test_non_utf8_and_non_ascii(tmp_path: Path) -> None:
    obj = challenge([("A", S1, "caf\u00e9 \u2603 ."), ("A", S2, "b"), ("B", S3, "c")])
    good = write(tmp_path / "u.json", obj)
    assert validate_submission(good, _tpl(tmp_path)).exit_status == 0
    bad = tmp_path / "latin.json"
    bad.write_bytes(json.dumps(obj, ensure_ascii=False).replace("\u2603", "").encode("utf-8")
                    .replace("caf\u00e9".encode(), b"caf\xe9"))
    r = validate_submission(bad, _tpl(tmp_path))
    assert r.exit_status == 1 and any("not valid UTF-8" in str(p) for p in r.problems)
