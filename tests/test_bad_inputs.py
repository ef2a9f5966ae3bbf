"""Malformed inputs through the CLI, in-process: each exits 2 with one message naming the problem, no traceback.

To add a case, append one ``case(...)`` to ``CASES``: a builder that writes whatever files it needs
under ``tmp_path`` and returns the argv, and a substring the error message must contain
(``{tmp}`` in it stands for ``tmp_path``). Cases run before any model loads, so they are fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from connote.cli import main

Build = Callable[[Path], list[str]]

MANIFEST_HEADER = "item_id,image,image_kind,caption,caption_kind"
GOOD_ITEM = {"item_id": "a", "image": "x.png", "image_kind": "SG", "caption": "a man begs", "caption_kind": "SG"}


def write(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def probe(tmp: Path, name: str, content: str | bytes) -> list[str]:
    """``connote probe`` on a manifest with this content (the run folder under tmp)."""
    return ["probe", "--data", str(write(tmp, name, content)), "--out", str(tmp / "run"), "--quiet"]


def jsonl(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def deep_json(levels: int = 100_000) -> str:
    return "[" * levels + "]" * levels


def case(build: Build, expect: str, id: str) -> object:  # noqa: A002 - pytest's name
    return pytest.param(build, expect, id=id)


CASES = [
    # ---- probe manifests (connote.data.probes)
    case(lambda t: probe(t, "m.csv", f'{MANIFEST_HEADER}\na,x.png,SG,"a man begs,SG\nb,x.png,SG,a dog,SG\n'),
         "m.csv, line 2, column caption: unbalanced quote", id="csv-unbalanced-quote"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER},caption\na,x.png,SG,one,SG,two\n"),
         "line 1, column caption: duplicate column 'caption' in the header", id="csv-duplicate-column"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a man begs\n"),
         "line 2, column 5: 4 fields where the header (line 1) has 5", id="csv-short-row"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,caf\xe9,SG\n".encode("latin-1")),
         "m.csv, line 2, column 15: not UTF-8 text", id="csv-not-utf8"),
    case(lambda t: probe(t, "m.csv", "item_id,image,caption\na,x.png,c\n"),
         "missing required column(s) image_kind, caption_kind", id="csv-missing-column"),
    case(lambda t: probe(t, "m.jsonl", jsonl(GOOD_ITEM, {**GOOD_ITEM, "item_id": "b", "caption": ["a", "b"]})),
         "m.jsonl, line 2, column caption: field 'caption' must be a string, got list", id="jsonl-list-caption"),
    case(lambda t: probe(t, "m.jsonl", jsonl(GOOD_ITEM) + '{"item_id": "b", \n'),
         "m.jsonl, line 2, column 18: invalid JSON: Expecting property name", id="jsonl-malformed"),
    case(lambda t: probe(t, "m.jsonl", jsonl(GOOD_ITEM) + deep_json() + "\n"),
         "m.jsonl, line 2: JSON nested too deeply", id="jsonl-deep"),
    case(lambda t: probe(t, "m.jsonl", jsonl(GOOD_ITEM, GOOD_ITEM)),
         "duplicate item_id 'a' (first on line 1)", id="jsonl-duplicate-id"),
    case(lambda t: ["probe", "--data", str((t / "probes.csv").mkdir() or t / "probes.csv"), "--out", str(t / "r")],
         "probes.csv: is a directory, expected a manifest", id="manifest-is-a-directory"),
    case(lambda t: ["probe", "--data", str(t / "missing.csv"), "--out", str(t / "r")],
         "missing.csv: manifest not found", id="manifest-missing"),
    # ---- JSON inputs of `connote score` and `connote vist` (connote.data.jsonio)
    case(lambda t: ["score", "--hyp", str(write(t, "h.json", deep_json())), "--ref", str(write(t, "r.json", "{}"))],
         "h.json: JSON nested too deeply", id="score-deep-json"),
    case(lambda t: ["score", "--hyp", str(write(t, "h.json", b'{"a": "caf\xe9"}')),
                    "--ref", str(write(t, "r.json", '{"a": ["x"]}'))],
         "h.json, line 1, column 11: not UTF-8 text", id="score-not-utf8"),
    case(lambda t: ["score", "--hyp", str((t / "h.json").mkdir() or t / "h.json"),
                    "--ref", str(write(t, "r.json", '{"a": ["x"]}'))],
         "h.json: is a directory, expected a hypotheses file", id="score-directory"),
    case(lambda t: ["vist", "validate", str(write(t, "s.json", deep_json()))],
         "s.json: JSON nested too deeply", id="vist-deep-json"),
    case(lambda t: ["vist", "info", str((t / "sis.json").mkdir() or t / "sis.json")],
         "sis.json: is a directory, expected a file", id="vist-directory"),
    # ---- model specs (connote.models.registry): refused before anything loads
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a man,SG\n")[:-1]
         + ["--model", "objects?threshhold=0.1", "-q"],
         "unknown option 'threshhold' for model backend objects; valid options:", id="spec-unknown-option"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a man,SG\n")[:-1]
         + ["--model", "objects?top_k=abc", "-q"],
         "model option top_k='abc' of objects: expected an integer", id="spec-bad-value"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a man,SG\n")[:-1]
         + ["--model", "hf-blip-itm:./models/blipp", "-q"],
         "'./models/blipp' for hf-blip-itm: no such local folder", id="spec-missing-local-folder"),
    case(lambda t: probe(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a man,SG\n")[:-1]
         + ["--model", "nope", "-q"],
         "unknown model 'nope'; valid models:", id="spec-unknown-backend"),
    # ---- run folders (connote.runs)
    case(lambda t: ["probe", "--data", str(write(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a,SG\n")),
                    "--out", str(write(t, "taken.txt", "mine")), "-q"],
         "taken.txt: the run folder is an existing file", id="out-is-a-file"),
    case(lambda t: ["probe", "--data", str(write(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a,SG\n")),
                    "--out", str(write(t, "run/store.sqlite", b"garbage" * 200).parent), "-q"],
         "store.sqlite: the run store is damaged or not a SQLite file", id="store-damaged"),
    case(lambda t: ["report", str((t / "notarun").mkdir() or t / "notarun")],
         "no results.json", id="report-not-a-run"),
    # ---- explain
    case(lambda t: ["explain", "--data", str(write(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a,SG\n")),
                    "--model", "objects", "--out", str(t / "run"), "--sample", "-1"],
         "--sample", id="explain-negative-sample"),
    case(lambda t: ["explain", "--data", str(write(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a,SG\n")),
                    "--model", "objects", "--out", str(t / "run"), "--budget", "0"],
         "--budget", id="explain-zero-budget"),
    # ---- VIST scoring
    case(lambda t: ["vist", "score", str(write(t, "sub.json", json.dumps({"output_stories": [
        {"album_id": "1", "photo_sequence": ["a", "b"], "story_text_normalized": "we went ."}]}))),
                    "--gold", str(write(t, "gold.json", json.dumps({"output_stories": [
                        {"album_id": "1", "photo_sequence": ["a", "b"], "story_text_normalized": ""}]})))],
         "no gold stories", id="vist-gold-without-stories"),
    # ---- training config (connote.train.config)
    case(lambda t: ["metaphor", "train", "--config", str(write(t, "c.yaml", "train:\n  lr: 0.1\n  lrr: 2\n"))],
         "c.yaml, line 3: unknown config field(s) train.lrr", id="train-config-unknown-field"),
    case(lambda t: ["metaphor", "train", "--config", str(write(t, "c.yaml", "model:\n  clips: four\n"))],
         "c.yaml, line 2: model.clips should be int, got 'four'", id="train-config-mistyped"),
    case(lambda t: ["metaphor", "train", "--config", str(write(t, "c.yaml", "train:\n  bf16: yes\n"))],
         "train.bf16 should be str, got True (YAML reads yes/no/on/off as booleans", id="train-config-yaml-bool"),
    case(lambda t: ["metaphor", "train", "--config", str(t)],
         "is a directory, expected a YAML file", id="train-config-directory"),
]


@pytest.mark.parametrize(("build", "expect"), CASES)
def test_bad_input_exits_2_with_a_message(build: Build, expect: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv = build(tmp_path)
    capsys.readouterr()
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, (status, out[-2000:], err[-2000:])
    assert expect.replace("{tmp}", str(tmp_path)) in err, err
    assert "Traceback" not in out + err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
