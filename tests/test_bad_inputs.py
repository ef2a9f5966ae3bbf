"""Malformed inputs through the CLI, in-process: each exits 2 with one message naming the problem, no traceback.

To add a case, append one ``case(...)`` to ``CASES``: a builder that writes whatever files it needs
under ``tmp_path`` and returns the argv, and a substring the error message must contain
(``{tmp}`` in it stands for ``tmp_path``). Cases run before any model loads, so they are fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
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


def case(build: Build, expect: str, id: str, slow: bool = False) -> object:  # noqa: A002 - pytest's name
    """One row; ``slow``: its set-up runs a command end to end first (e.g. a caption run to score)."""
    return pytest.param(build, expect, id=id, marks=[pytest.mark.slow] if slow else [])


SIS_TRAIN = json.dumps({"images": [], "albums": [], "annotations": [[{
    "album_id": "1", "photo_flickr_id": f"p{k}", "storylet_id": str(k), "story_id": "s1",
    "worker_arranged_photo_order": k, "text": "we went .", "original_text": "We went."}] for k in range(5)]})


def story_train(t: Path, *extra: str, features: dict | None = None) -> list[str]:
    """``connote story train`` on a one-story SIS file and a features .npz (by default one finite vector a photo)."""
    import numpy as np

    feats = features if features is not None else {f"p{k}": np.ones(4, np.float32) for k in range(5)}
    np.savez(t / "f.npz", **feats)
    return ["story", "train", "--sis", str(write(t, "sis.json", SIS_TRAIN)), "--features", str(t / "f.npz"),
            "--out", str(t / "model"), "--no-progress", *extra]


def vist_score(t: Path, stories: list[tuple[list[str], object]], gold: list[tuple[list[str], str]]) -> list[str]:
    def sub(entries: list) -> str:
        return json.dumps({"output_stories": [{"album_id": "1", "photo_sequence": seq, "story_text_normalized": text}
                                              for seq, text in entries]})
    return ["vist", "score", str(write(t, "sub.json", sub(stories))), "--gold", str(write(t, "gold.json", sub(gold))),
            "--n-boot", "0"]


def caption_run(t: Path, *extra: str) -> list[str]:
    """A sample-set caption run (``metaphor caption`` without --videos) into t/run, then ``extra`` args."""
    assert main(["metaphor", "caption", "--out", str(t / "run"), "-q"]) == 0
    return list(extra)


def cut_captions(t: Path) -> list[str]:
    caption_run(t)
    captions = t / "run" / "captions.jsonl"
    data = captions.read_bytes()
    captions.write_bytes(data[: data.index(b"\n") + 12])  # the second line cut after 11 bytes
    return ["metaphor", "score", str(t / "run"), "--bootstrap", "0"]


def saved_df(t: Path, n_documents: object, count: object) -> Path:
    return write(t, "df.json", json.dumps({"n_documents": n_documents, "source": "x", "df": [["a", 1, count]]}))


def other_schema_store(run: Path) -> Path:
    import sqlite3

    run.mkdir(parents=True)
    con = sqlite3.connect(run / "store.sqlite")
    con.execute("CREATE TABLE items (id TEXT, value TEXT)")
    con.commit()
    con.close()
    return run


class _Boom:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


def crafted_seq2seq(t: Path) -> str:
    """A seq2seq model folder whose model.pt is a pickle that would run a command when unpickled."""
    import pickle

    import torch

    from connote.vist.seq2seq import Seq2SeqConfig, StoryModel, Vocab, _build_module

    vocab = Vocab.build(["we went to the sea ."])
    cfg = Seq2SeqConfig(feature_dim=4, vocab_size=len(vocab), embed_dim=8, hidden_dim=8, max_len=10)
    folder = StoryModel(cfg, vocab, _build_module(cfg)).save(t / "s2s")
    torch.save({"x": 1}, folder / "model.pt")
    (folder / "model.pt").write_bytes(pickle.dumps(_Boom()))
    np.savez(t / "f.npz", p0=np.ones(4, np.float32))
    return f"seq2seq:{folder}?features={t / 'f.npz'}"


SCORE_FILES = ("--hyp", "{tmp}/h.json", "--ref", "{tmp}/r.json")


def score(t: Path, *extra: str) -> list[str]:
    write(t, "h.json", '{"a": "a cat"}')
    write(t, "r.json", '{"a": ["a cat sat"]}')
    return ["score", *(a.replace("{tmp}", str(t)) for a in SCORE_FILES), *extra]


CASES = [
    # ---- probe manifests (connote.cv_probes.manifest)
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
    # ---- JSON inputs of `connote score` and `connote vist` (connote.core.jsonio)
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
    # ---- duplicate JSON keys (connote.core.jsonio): the last value silently won before
    case(lambda t: ["score", "--hyp", str(write(t, "h.json", '{"a": "a cat", "a": "a dog"}')),
                    "--ref", str(write(t, "r.json", '{"a": ["a cat"]}'))],
         "h.json: duplicate key(s) 'a' in one JSON object", id="score-duplicate-keys"),
    # ---- suite readers: one JSON reader for every input (issue 39, item 5): the last value silently won before
    case(lambda t: ["suite", "run", "sugarcrepe", "--data", str(write(t, "add_obj.json", (
        '{\n "0": {"filename": "x.jpg", "caption": "a dog", "caption": "a cat", "negative_caption": "a cow"}\n}'))),
        "--out", str(t / "run"), "--no-progress"],
         "add_obj.json, line 2: duplicate key(s) 'caption' in one JSON object", id="suite-duplicate-nested-key"),
    case(lambda t: ["suite", "run", "valse", "--data", str(write(t, "existence.json", (
        '{"a": {"image_file": "x.jpg", "caption": "c", "foil": "f"},\n'
        ' "a": {"image_file": "y.jpg", "caption": "d", "foil": "g"}}'))), "--out", str(t / "run"), "--no-progress"],
         "existence.json, line 2: duplicate key(s) 'a' in one JSON object", id="suite-duplicate-top-level-key"),
    # ---- CIDEr document frequencies of --df-corpus
    case(lambda t: score(t, "--df-corpus", str(saved_df(t, 2, float("nan")))),
         "df.json: document frequency of 'a' is nan", id="score-df-corpus-nan"),
    case(lambda t: score(t, "--df-corpus", str(saved_df(t, 2, -3))),
         "df.json: document frequency of 'a' is -3.0", id="score-df-corpus-negative"),
    case(lambda t: score(t, "--df-corpus", str(saved_df(t, float("nan"), 1))),
         "df.json: n_documents must be a whole number >= 1, got nan", id="score-df-corpus-nan-documents"),
    case(lambda t: score(t, "--metrics", "cider", "--df-corpus",
                         str(write(t, "df.json", '{"df": {"a": NaN}, "n_docs": -3}'))),
         'df.json: expected the saved frequencies {"n_documents": N, "df": [[ngram, n, count], ...]}, got df, n_docs',
         id="score-df-corpus-another-layout"),
    case(lambda t: score(t, "--metrics", "cider", "--df-corpus", str(write(t, "df.json", '{"a": ["x"], "b": 3}'))),
         "df.json: id 'b': expected a reference text or a list of them, got 3", id="score-df-corpus-bad-reference"),
    # ---- a text that is not text (issue 39, item 13): refused by the one JSON reader, naming file, line, column
    case(lambda t: ["score", "--hyp", str(write(t, "h.json", '{"a": "a \\ud800 cat"}')),
                    "--ref", str(write(t, "r.json", '{"a": ["a cat"]}')), "--metrics", "meteor"],
         "h.json, line 1, column 10: a string holds a lone surrogate (\\ud800), which is not text: 'a \\ud800 cat'",
         id="score-lone-surrogate"),
    case(lambda t: vist_score(t, [(["a", "b"], "we went \ud800 home .")], [(["a", "b"], "we went home .")]),
         "sub.json, line 1, column 103: a string holds a lone surrogate (\\ud800)", id="vist-score-lone-surrogate"),
    case(lambda t: ["metaphor", "score", str(write(t, "answers.jsonl", '{"video_id": "v1", "text": "ok"}\n'
                                                   '{"video_id": "v2", "text": "the sea \\udc00 ice"}\n')),
                    "--bootstrap", "0"],
         "answers.jsonl, line 2, column 37: a string holds a lone surrogate (\\udc00)",
         id="vmc-answers-lone-surrogate"),
    # ---- numbers and folders out of range (issue 39, item 15): exit 2 at once
    case(lambda t: score(t, "--metrics", "bleu", "--jobs", "-3"), "--jobs (option n_jobs): '-3': must be",
         id="score-jobs-negative"),
    case(lambda t: [*vist_score(t, [(["a", "b"], "we went .")], [(["a", "b"], "we went home .")]), "--n-boot", "-5"],
         "--n-boot must be at least 0, got -5", id="vist-score-n-boot-negative"),
    case(lambda t: ["story", "features", str(write(t, "sis.json", SIS_TRAIN)), "--images", str(t / "missing"),
                    "--out", str(t / "f.npz"), "--no-progress"],
         "missing: --images: photo folder not found", id="story-features-images-missing"),
    # ---- messages that name their file (issue 39, item 16)
    case(lambda t: ["metaphor", "score", str(write(t, "answers.jsonl", jsonl(
        {"question_id": "v1", "video_id": "v1", "text": "the sea is as blue as ice", "true_caption": "x"}))),
        "--refs", str(write(t, "empty.csv", "unique_id,annotator_1\n")), "--bootstrap", "0"],
         "empty.csv: no references to score against: the caption table holds no caption", id="vmc-refs-empty"),
    case(lambda t: ["metaphor", "caption", "--videos", str(write(t, "v.csv", "video_id,path\na,a\nb,b\na,c\n")),
                    "--model", "nearest:x.csv?videos=.", "--out", str(t / "run"), "-q"],
         "v.csv, line 4, column video_id: video_id 'a' occurs more than once (first on line 2)",
         id="video-manifest-duplicate-id"),
    case(lambda t: ["vist", "validate", str(write(t, "empty.json", ""))],
         "empty.json, line 1, column 1: malformed JSON: Expecting value", id="vist-validate-empty-file"),
    case(lambda t: score(t, "--config", str(write(t, "c.yaml", "metrics: bleu\njobs: 1\nmetrics: cider\n"))),
         "c.yaml, line 3, column 1: invalid YAML: duplicate key 'metrics' in one mapping (first on line 1",
         id="config-duplicate-key"),
    case(lambda t: score(t, "--config", str(write(t, "c.yaml", "hyp: [a.json, b.json]\n"))),
         "c.yaml: key 'hyp': expected one value, got a list of 2", id="config-list-for-one-value"),
    # ---- VIST scoring: nothing scored is no METEOR 0.0000
    case(lambda t: vist_score(t, [(["x1", "x2"], "we went .")], [(["a", "b"], "we went home .")]),
         "sub.json: no story was scored (1 sequences: 1 missing", id="vist-score-nothing-scored"),
    case(lambda t: vist_score(t, [(["a", "b"], 5)], [(["a", "b"], "we went home .")]),
         "no story was scored (1 sequences: 0 missing, 1 failed", id="vist-score-story-is-a-number"),
    # ---- numeric and folder options
    case(lambda t: ["story", "generate", "--out", str(t / "run"), "--limit", "-1", "--no-progress"],
         "--limit must be at least 1, got -1", id="story-generate-limit-negative"),
    case(lambda t: ["story", "generate", "--out", str(t / "run"), "--limit", "0", "--no-progress"],
         "--limit must be at least 1, got 0", id="story-generate-limit-zero"),
    case(lambda t: story_train(t, "--steps", "0"), "--steps must be at least 1, got 0", id="story-train-steps-0"),
    case(lambda t: story_train(t, "--batch-size", "0"), "--batch-size must be at least 1, got 0",
         id="story-train-batch-size-0"),
    case(lambda t: story_train(t, "--lr", "nan"), "--lr must be a finite number above 0, got nan",
         id="story-train-lr-nan"),
    case(lambda t: story_train(t, features={"p0": np.full(4, np.nan, np.float32),
                                            **{f"p{k}": np.ones(4, np.float32) for k in range(1, 5)}}),
         "f.npz: photo p0: the feature vector holds NaN or infinite values", id="story-train-nan-features"),
    case(lambda t: story_train(t, features={"p0": np.ones(3, np.float32),
                                            **{f"p{k}": np.ones(4, np.float32) for k in range(1, 5)}}),
         "f.npz: feature vectors of different lengths: 3 (photo p0) and 4 (photo p1)",
         id="story-train-features-of-two-lengths"),
    case(lambda t: ["vist", "split", str(write(t, "sis.json", SIS_TRAIN)), "--out", str(t / "o"),
                    "--ratios", "-1,1,1"],
         "--ratios must be three shares >= 0 (not all 0), got '-1,1,1'", id="vist-split-negative-ratio"),
    case(lambda t: ["vist", "split", str(write(t, "sis.json", SIS_TRAIN)), "--out", str(write(t, "o.txt", "x"))],
         "o.txt: --out names an existing file, expected a folder", id="vist-split-out-is-a-file"),
    case(lambda t: ["story", "demo", "--out", str(write(t, "o.txt", "x"))],
         "o.txt: --out names an existing file, expected a folder", id="story-demo-out-is-a-file"),
    case(lambda t: ["collect", "sample", str(write(t, "o.txt", "x"))],
         "o.txt: FOLDER names an existing file, expected a folder", id="collect-sample-into-a-file"),
    case(lambda t: ["metaphor", "caption", "--out", str(t / "run"), "--k", "-2", "-q"],
         "--k must be at least 1, got -2", id="metaphor-caption-k-negative"),
    case(lambda t: caption_run(t, "metaphor", "score", str(t / "run"), "--bootstrap", "-1"),
         "--n-boot must be at least 0, got -1", id="metaphor-score-bootstrap-negative", slow=True),
    case(cut_captions, "captions.jsonl, line 2, column 2: invalid JSON: Unterminated string",
         id="metaphor-score-cut-captions", slow=True),
    case(lambda t: ["vist", "anonymize", str(write(t, "s.txt", "Mary went home\n")),
                    "--names", str(write(t, "names.txt", "Mary,F,ten\n")), "--no-ner"],
         "names.txt, line 1, column 3: count 'ten' is not a whole number", id="vist-anonymize-count-not-a-number"),
    # ---- collect manifests, agreement labels (strict readers: the file, line and column named)
    case(lambda t: ["collect", "make", "probes-votes", "--from", str(write(
        t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,caf\xe9,SG\n".encode("latin-1"))), "--out", str(t / "s")],
         "m.csv, line 2, column 15: not UTF-8 text", id="collect-manifest-not-utf8"),
    case(lambda t: ["collect", "make", "probes-votes", "--from", str(write(t, "m.jsonl", '{"item_id": "a", \n')),
                    "--out", str(t / "s")],
         "m.jsonl, line 1, column 18: invalid JSON", id="collect-manifest-malformed-jsonl"),
    case(lambda t: ["collect", "make", "probes-votes", "--from", str(t / "missing.csv"), "--out", str(t / "s")],
         "missing.csv: manifest not found", id="collect-manifest-missing"),
    case(lambda t: ["metaphor", "caption", "--videos", str(write(t, "v.csv", "video_id,path\na\n")), "--model",
                    "nearest:x.csv?videos=.", "--out", str(t / "run"), "-q"],
         "v.csv, line 2, column path: no path for this video", id="video-manifest-row-without-path"),
    case(lambda t: ["agreement", str(write(t, "labels.csv", "item_id,rater,criterion,label\na,r1,c,yes\n"
                                                          .encode("utf-16")))],
         "labels.csv, line 1, column 1: not UTF-8 text", id="agreement-labels-utf16"),
    # ---- run stores of another schema (connote.runs.store)
    case(lambda t: ["probe", "--data", str(write(t, "m.csv", f"{MANIFEST_HEADER}\na,x.png,SG,a,SG\n")),
                    "--out", str(other_schema_store(t / "run")), "-q"],
         "the run store is damaged or not a SQLite file (table items has columns id, value", id="store-other-schema"),
    # ---- weights that are a pickle with code in it (torch.load(weights_only=True) refuses them)
    case(lambda t: ["story", "generate", "--out", str(t / "run"), "--no-progress", "--model", crafted_seq2seq(t)],
         "refused: not a safe weights file", id="weights-crafted-pickle"),
    # ---- training config (connote.vmc.train.config)
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


# ---- wrong results that exit 0: each is checked for the number it gets


@pytest.mark.slow
def test_metaphor_score_scores_the_runs_captions_not_the_store(tmp_path: Path, capsys) -> None:
    """``metaphor caption --limit 1`` into a run folder that captioned 3 videos: the score covers 1 video's caption
    (the sample's test split has 3: the 2 others are uncaptioned, not scored from rows of the earlier run)."""
    assert main(["metaphor", "caption", "--out", str(tmp_path / "run"), "-q"]) == 0
    assert main(["metaphor", "caption", "--out", str(tmp_path / "run"), "-q", "--limit", "1"]) == 0
    capsys.readouterr()
    assert main(["metaphor", "score", str(tmp_path / "run"), "--bootstrap", "0", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["n"] == 3 and result["uncaptioned"] == ["vmc-sample-05", "vmc-sample-06"]


def test_vist_sequence_ids_stay_apart_when_photo_ids_hold_a_dash(tmp_path: Path, capsys) -> None:
    """``["1-2","3",...]`` and ``["1","2-3",...]`` are two sequences: both scored, each against its own gold."""
    one, two = ["1-2", "3", "4", "5", "6"], ["1", "2-3", "4", "5", "6"]
    argv = vist_score(tmp_path, [(one, "we went to the sea ."), (two, "the dog ran .")],
                      [(one, "we went to the sea ."), (two, "the dog ran .")])
    assert main([*argv, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_items"] == 2 and res["n_scored"] == 2


def test_a_gold_file_with_every_storylet_twice_says_duplicate(tmp_path: Path, capsys) -> None:
    """Issue 39, item 16: every storylet listed twice made every gold story ten photos long, and the error blamed
    the submission's photo sequences; the repeats are now left out, named as duplicates, and the stories scored."""
    from connote.vist.data import read_official
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(tmp_path / "sample")
    gold = json.loads(paths["test"].read_text())
    gold["annotations"] = gold["annotations"] * 2
    stories = {s.photo_ids: s for s in reversed(read_official(paths["test"]).stories)}  # one story a sequence
    sub = {"output_stories": [{"album_id": s.album_id, "photo_sequence": list(s.photo_ids),
                               "story_text_normalized": s.text} for s in stories.values()]}
    argv = ["vist", "score", str(write(tmp_path, "sub.json", json.dumps(sub))), "--gold",
            str(write(tmp_path, "gold.json", json.dumps(gold))), "--n-boot", "0", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n_scored"] == len(stories) and "duplicate storylet" in err


def test_a_story_that_is_a_number_is_malformed_not_scored(tmp_path: Path, capsys) -> None:
    argv = vist_score(tmp_path, [(["a", "b"], "we went home ."), (["c", "d"], float("nan"))],
                      [(["a", "b"], "we went home ."), (["c", "d"], "the dog ran .")])
    assert main([*argv, "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["n_scored"] == 1 and "malformed" in res["errors"]["c-d"]


# ---- inputs that used to hang: each run ends (exit 1) in bounded time with the item's error recorded


class _Constant:
    """A backend that answers at once, so that only reading the inputs can take time."""

    backend = "bad-inputs-constant"
    inputs = "video"

    def __init__(self, weights: str | None = None) -> None:
        pass

    def describe(self) -> dict:
        return {"backend": self.backend}

    def match_probability(self, images, captions, pairs):
        return [0.5 for _ in pairs]

    def generate(self, requests):
        return ["the sea is as blue as ice" for _ in requests]


@pytest.fixture
def constant_model():
    from connote.models.registry import MODELS, register_model

    register_model(_Constant.backend, _Constant, capabilities={"match", "generate"}, weights="none")
    yield _Constant.backend
    MODELS._entries.pop(_Constant.backend, None)
    MODELS._help.pop(_Constant.backend, None)


def _fifo(t: Path, name: str) -> Path:
    import os

    path = t / name
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _link(t: Path, name: str, target: str) -> Path:
    path = t / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def probe_images(t: Path, model: str, image: Path) -> list[str]:
    from PIL import Image

    Image.new("RGB", (8, 8)).save(t / "ok.png")
    rows = f"{MANIFEST_HEADER}\na,{t / 'ok.png'},SG,a man,SG\nb,{image},SG,a man,SG\n"
    return ["probe", "--data", str(write(t, "m.csv", rows)), "--model", model, "--out", str(t / "run"), "-q"]


def caption_videos(t: Path, model: str, video: Path) -> list[str]:
    from connote.media.synthetic import write_video

    (t / "videos").mkdir(exist_ok=True)
    write_video(t / "videos" / "ok.mp4", [], size=(32, 32), colours=[(200, 40, 40)] * 8)
    manifest = write(t, "videos.csv", f"video_id,path\nok,{t / 'videos' / 'ok.mp4'}\nb,{video}\n")
    return ["metaphor", "caption", "--videos", str(manifest), "--model", model, "--out", str(t / "run"), "-q"]


ITEM_CASES = [
    pytest.param(lambda t, m: probe_images(t, m, _fifo(t, "fifo.png")), "not a regular file", id="probe-image-fifo"),
    pytest.param(lambda t, m: probe_images(t, m, Path("/dev/zero")), "not a regular file", id="probe-image-dev-zero"),
    pytest.param(lambda t, m: caption_videos(t, m, Path("/dev/zero")), "not a regular file", id="video-dev-zero"),
    pytest.param(lambda t, m: caption_videos(t, m, _fifo(t, "fifo.mp4")), "not a regular file", id="video-fifo"),
]


@pytest.mark.parametrize("build, expect", ITEM_CASES)
def test_unreadable_media_is_an_item_error_in_bounded_time(build, expect: str, tmp_path: Path,
                                                           constant_model, capsys) -> None:
    """The run ends within the alarm; the bad item is recorded with ``expect``, the others are computed."""
    import signal

    def hung(signum, frame):
        raise AssertionError("the run hung on an input that is not a regular file")

    argv = build(tmp_path, constant_model)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        status = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert status in (0, 1), (status, err[-2000:])
    run = tmp_path / "run"
    if (run / "items.jsonl").is_file():  # probe
        rows = [json.loads(x) for x in (run / "items.jsonl").read_text().splitlines()]
        assert [r["item_id"] for r in rows if r.get("error") and expect in r["error"]] == ["b"]
    else:  # metaphor caption
        assert expect in json.loads((run / "results.json").read_text())["errors"]["b"]
        assert [json.loads(x)["video_id"] for x in (run / "captions.jsonl").read_text().splitlines()] == ["ok"]


# ---- a damaged store and a full disk: one line naming the store and what to do, nothing committed lost


@pytest.mark.parametrize("data", ["not json", "[1, 2]", '{"p_match": 0.5', '{}', '{"p_match": "x"}'])
def test_a_damaged_stored_row_is_set_aside_and_computed_again(data: str, tmp_path: Path, constant_model,
                                                              capsys) -> None:
    """Issue 39, item 17: one stored row that is not a JSON object used to stop the whole run (exit 2, "move the
    store aside"), and an object that is not the item's row (``{}``, no ``item_id``) was reused as an errored item
    on every rerun; it is now moved into the store's ``set_aside`` table (kept), its item computed again, the
    others resumed, and the run says so."""
    import sqlite3

    argv = probe_images(tmp_path, constant_model, tmp_path / "ok.png")
    assert main(argv) == 0
    store = tmp_path / "run" / "store.sqlite"
    con = sqlite3.connect(store)
    con.execute("UPDATE items SET data = ? WHERE item_id = 'a'", (data,))
    con.commit()
    con.close()
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"note: {store}: 1 damaged row(s) set aside (table set_aside) and computed again (a: " in err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert (results["n_resumed"], results["n_computed_this_run"], results["n_set_aside"]) == (1, 1, 1)
    rows = {r["item_id"]: r for r in map(json.loads, (tmp_path / "run" / "items.jsonl").read_text().splitlines())}
    assert rows["a"]["p_match"] == 0.5 and rows["a"]["error"] is None
    con = sqlite3.connect(store)
    assert con.execute("SELECT item_id, data FROM set_aside").fetchall() == [("a", data)]
    con.close()
    assert main(argv) == 0 and "set aside" not in capsys.readouterr().err  # and it stays computed


def test_a_full_disk_is_one_line_and_keeps_what_was_committed(tmp_path: Path) -> None:
    """SQLite's own "database or disk is full" (a page limit stands in for the disk): an ``InputError`` naming
    the store; the batch committed before it is still there."""
    from connote.core.errors import InputError
    from connote.runs.store import RunStore

    with RunStore(tmp_path / "run") as store:
        fp = store.register({"backend": "x"})
        store.put(fp, [{"item_id": "a", "item_key": "k", "error": None}])
        pages = store._con.execute("PRAGMA page_count").fetchone()[0]
        store._con.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(InputError, match=r"store\.sqlite: the disk is full \(database or disk is full\); every "
                                             r"batch committed before is kept"):
            store.put(fp, [{"item_id": f"b{k}", "item_key": "k", "error": None, "pad": "x" * 5000} for k in range(50)])
    with RunStore(tmp_path / "run") as store:
        assert set(store.rows(fp)) == {"a"}


@pytest.mark.slow
def test_a_killed_torchrun_rank_is_one_line_naming_the_rank(tmp_path: Path) -> None:
    """Two gloo ranks on loopback; rank 1 is killed (SIGKILL) while rank 0 waits in a collective: rank 0's
    ``connote`` error boundary prints one line naming its rank, exit 2."""
    import os
    import socket
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("torch")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "rank.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        import torch, torch.distributed as dist
        import typer
        from connote.commands.entry import run_app

        app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

        @app.command()
        def job() -> None:  # a command that leaves its group open: the boundary closes it
            dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=20))
            if dist.get_rank() == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(1)
            dist.all_reduce(torch.ones(1))

        sys.exit(run_app(app, [], "connote"))
    """))
    import connote

    env = {**os.environ, "PYTHONPATH": str(Path(connote.__file__).resolve().parents[1]), "WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    procs = [subprocess.Popen([sys.executable, str(script)], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    try:
        _, err0 = procs[0].communicate(timeout=120)
        procs[1].wait(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert procs[0].returncode == 2, err0[-3000:]
    lines = [line for line in err0.splitlines() if line.strip()]
    assert "Traceback" not in err0
    assert lines[-1].startswith("error: connote: rank 0: another rank of the torchrun job stopped")
