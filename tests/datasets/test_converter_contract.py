"""Every registered release converter keeps the converter contract (registry-wide, over the plugins'
``CONVERTERS``, as ``connote datasets convert`` lists them).

A converter is named by the catalogue entry it produces (``Dataset.convert``: ``connote datasets convert NAME
...``) and states its input in its help (``HELP`` beside its command). For each one, a small input in the shape
that help documents (a case here; a converter without one fails ``test_every_converter_has_a_case``) must convert
with exit 0, write nothing outside ``--out``, and give files that the catalogue's own format check of that entry
reads back with its reader (the ``format`` of each expected file), with as many records as the input held.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from connote.cli import main
from connote.core.plugins import PluginTable
from connote.core.registry import import_target
from connote.datasets.catalog import DATASETS, check_copy


@dataclass
class Made:
    """A case's input: the command's arguments after ``convert NAME``, the folder the catalogue checks, and the
    record counts (by expected file) the input holds."""

    args: list[str]
    folder: Path
    counts: dict[str, dict[str, int]]


def _cv_probes(root: Path) -> Made:
    """A long table (one row per image-caption pair) with numbered vote columns, two images."""
    (root / "release" / "imgs").mkdir(parents=True)
    for name, rgb in (("a", (200, 20, 20)), ("b", (20, 200, 20))):
        Image.new("RGB", (16, 12), rgb).save(root / "release" / "imgs" / f"{name}.png")
    rows = [("p1", "imgs/a.png", "SG", "A man begs.", "SG", "beg", "1", "1", "0"),
            ("p2", "imgs/a.png", "SG", "A man sits.", "PG", "", "yes", "yes", "yes"),
            ("p3", "imgs/b.png", "PG", "A dog begs.", "social", "beg", "no", "no", "yes"),
            ("p4", "imgs/b.png", "PG", "A dog sits.", "physical", "", "1", "1", "1")]
    src = root / "release" / "pairs.csv"
    with src.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "image_path", "image_type", "text", "caption_type", "verb", "vote_1", "vote_2",
                         "vote_3"])
        writer.writerows(rows)
    out = root / "out"
    return Made([str(src), "--out", str(out / "probes.csv")], out,
                {"probes.csv": {"items": len(rows), "items with human votes": len(rows)}})


def _vmc(root: Path) -> Made:
    """The authors' files: a caption table, LLaVA-style split files, a question file and videos."""
    rel = root / "release"
    (rel / "videos").mkdir(parents=True)
    ids = ["__C7sd_UDU0", "_6MAkLJ79LE", "jmNrvlQ73pU"]
    (rel / "VMCD_v2.csv").write_text("unique_id,annotator_1,annotator_2,annotator_3\n" + "".join(
        f"{v},the sea is as calm as glass.,the car is as fast as wind.,a man is as strong as an ox.\n" for v in ids),
        encoding="utf-8")
    for v in ids:
        (rel / "videos" / f"{v}.mp4").write_bytes(b"")

    def llava(vid: str) -> dict:
        return {"id": vid, "video": f"videos/{vid}.mp4",
                "conversations": [{"from": "human", "value": "<video>\nA metaphor?"}, {"from": "gpt", "value": "x"}]}

    (rel / "train.json").write_text(json.dumps([llava(ids[0]), llava(ids[1])]), encoding="utf-8")
    (rel / "val.json").write_text(json.dumps([llava(ids[2])]), encoding="utf-8")
    (rel / "test_questions.jsonl").write_text(json.dumps(
        {"question_id": 0, "video": f"videos/{ids[2]}.mp4", "text": "q", "true_answer": "y"}) + "\n", encoding="utf-8")
    out = root / "out"
    return Made([str(rel), "--out", str(out)], out,
                {"captions.csv": {"videos": 3, "captions": 9}, "splits/train.txt": {"ids": 2},
                 "splits/val.txt": {"ids": 1}, "splits/test.txt": {"ids": 1}})


#: Converter -> its case. Every registered converter needs one.
CASES: dict[str, Callable[[Path], Made]] = {"cv-probes": _cv_probes, "vmc": _vmc}


def _converters() -> dict[str, str]:
    return dict(PluginTable("converter", "CONVERTERS").items())


def _producer(name: str):
    """The catalogue entry whose ``convert`` command is this converter's."""
    entries = [d for d in DATASETS.values() if d.convert and d.convert.split()[:4] == ["connote", "datasets",
                                                                                      "convert", name]]
    return entries[0] if len(entries) == 1 else None


def test_every_converter_has_a_case() -> None:
    assert sorted(_converters()) == sorted(CASES), "add a case for each new converter to CASES"


def test_every_catalogue_convert_command_names_a_converter() -> None:
    named = {d.name: d.convert.split()[3] for d in DATASETS.values()
             if d.convert and d.convert.startswith("connote datasets convert ")}
    assert sorted(set(named.values()) - set(_converters())) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_converter_is_a_command_with_its_documented_input(name: str, capsys) -> None:
    target = _converters()[name]
    assert callable(import_target(target))
    help_text = import_target(target.split(":", 1)[0] + ":HELP")
    assert isinstance(help_text, str) and "Exit 0" in help_text, "the help states the input and the exit codes"
    assert _producer(name) is not None, f"no catalogue entry says it is made by `connote datasets convert {name}`"
    assert main(["datasets", "convert", name, "--help"]) == 0
    assert " ".join(help_text.split()[:6]) in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_converter_output_is_read_back_by_the_catalogue_readers(name: str, tmp_path: Path, capsys) -> None:
    made = CASES[name](tmp_path)
    before = set(tmp_path.rglob("*"))
    code = main(["datasets", "convert", name, *made.args])
    err = capsys.readouterr().err
    assert code == 0, err
    written = set(tmp_path.rglob("*")) - before
    assert written and all(made.folder in p.parents or p == made.folder for p in written), "wrote outside --out"
    entry = _producer(name)
    checks = {f.path: f for f in check_copy(entry.name, made.folder).files}
    for path, counts in made.counts.items():
        f = checks[path]
        assert f.found_at is not None, f"{name} did not write {path}, which its catalogue entry expects"
        assert f.status != "unreadable" and not f.problems, (path, f.messages, f.problems)
        assert not any("not on disk" in m for m in f.messages), (path, f.messages)
        assert {k: f.counts.get(k) for k in counts} == counts, (path, f.counts)
