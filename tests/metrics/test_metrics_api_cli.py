"""compute_scores / CLI: input errors name ids and files, JSON output, signatures, registry."""

from __future__ import annotations

import json

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.metrics import METRICS, compute_scores


def test_registry_lists_metric_names():
    assert {"bleu", "meteor", "rouge_l", "cider", "bertscore"} <= set(METRICS.names())


def test_unknown_metric_names_the_valid_ones():
    with pytest.raises(KeyError, match="valid metrics"):
        compute_scores({"1": "a"}, {"1": ["a"]}, ["blue"])


def test_ids_on_one_side_are_listed():
    with pytest.raises(InputError) as err:
        compute_scores({"1": "a", "x": "b"}, {"1": ["a"], "y": ["c"]}, ["bleu"])
    assert "'x'" in str(err.value) and "'y'" in str(err.value)


@pytest.mark.parametrize("refs", [{"1": []}, {"1": None}])
def test_empty_reference_list_names_the_id(refs):
    with pytest.raises(InputError, match="'1'"):
        compute_scores({"1": "a cat"}, refs, ["bleu"])


def test_hypothesis_list_must_hold_one_text():
    with pytest.raises(InputError, match="'1'"):
        compute_scores({"1": ["a", "b"]}, {"1": ["a"]}, ["bleu"])


def test_hypothesis_as_one_element_list_equals_string():
    a = compute_scores({"1": ["a cat sits"]}, {"1": ["a cat sits down"]}, ["bleu", "rouge_l"])
    b = compute_scores({"1": "a cat sits"}, {"1": ["a cat sits down"]}, ["bleu", "rouge_l"])
    assert a.scores == b.scores


def test_ptb_tokenization_option_changes_signature_and_text():
    raw = compute_scores({"1": "A Cat, sitting!"}, {"1": ["a cat sitting"]}, ["bleu"], tokenize="ptb")
    assert raw.scores["Bleu_1"] == pytest.approx(1.0)
    assert "tok:ptb" in raw.signatures["bleu"]


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj), encoding="utf-8")
    return p


def test_cli_json_output(tmp_path, capsys, pycoco):
    hyp = _write(tmp_path, "h.json", {"1": "a man rides a horse", "2": ["two dogs play"]})
    ref = _write(tmp_path, "r.json", {"1": ["a man riding a horse", "a person on a horse"], "2": ["dogs playing"]})
    rc = main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "bleu,meteor,rouge_l,cider",
               "--json", "--per-item"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["scores"]) == {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"}
    assert set(out["signatures"]) == {"bleu", "meteor", "rouge_l", "cider"}
    assert set(out["per_item"]) == {"1", "2"}
    assert "task:rank" in out["signatures"]["meteor"]


def test_cli_hter_task_and_df_corpus(tmp_path, capsys, pycoco):
    hyp = _write(tmp_path, "h.json", {"1": "a man rides a horse"})
    ref = _write(tmp_path, "r.json", {"1": ["a man riding a horse"]})
    corpus = _write(tmp_path, "c.json", {"a": ["a man riding a horse"], "b": ["a dog"], "c": ["a horse runs"]})
    rc = main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "meteor,cider", "--json",
               "--meteor-task", "hter", "--df-corpus", str(corpus)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert "task:hter" in out["signatures"]["meteor"]
    assert out["scores"]["CIDEr"] > 0
    assert "3docs" in out["signatures"]["cider"]


def test_cli_errors_exit_2_and_name_the_file(tmp_path, capsys):
    hyp = _write(tmp_path, "h.json", {"1": "a"})
    ref = _write(tmp_path, "r.json", {"2": ["a"]})
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "bleu"]) == 2
    err = capsys.readouterr().err
    assert "h.json" in err and "'1'" in err and "'2'" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"1": ["a"', encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert main(["score", "--hyp", str(hyp), "--ref", str(hyp), "--metrics", "nope"]) == 2
