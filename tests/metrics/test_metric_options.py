"""Typed metric options, the registry and the score-name table; bad options and files exit 2 on the CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.metrics import compute_scores
from connote.metrics.options import OptionError
from connote.metrics.registry import METRICS, SCORE_NAMES, display_name, register, score_keys, score_names

HYP = {"1": "a man rides a horse", "2": "two dogs play in the snow"}
REF = {"1": ["a man riding a horse", "a person on a horse"], "2": ["dogs playing in snow", "two dogs play"]}


def test_misspelt_option_names_it_and_the_valid_ones():
    with pytest.raises(OptionError) as err:
        compute_scores(HYP, REF, ["cider"], cider_sigmma=1)
    msg = str(err.value)
    assert "'cider_sigmma'" in msg and "did you mean 'cider_sigma'" in msg and "meteor_task" in msg


@pytest.mark.parametrize("name,value,expected", [
    ("cider_sigma", 0, "cider_sigma"), ("cider_sigma", -1.5, "cider_sigma"), ("cider_sigma", float("nan"), "> 0"),
    ("cider_sigma", "abc", "expected a number"), ("bleu_n", 0, "bleu_n"), ("bleu_n", 2.5, "an integer"),
    ("rouge_beta", 0, "rouge_beta"), ("meteor_beam", 0, "meteor_beam"), ("meteor_norm", "yes", "true/false"),
    ("synonym_source", "nltk", "synonym_source"), ("meteor_preset", "coco", "meteor_preset"),
])
def test_mistyped_or_out_of_range_option_is_refused(name, value, expected):
    metric = {"cider_sigma": "cider", "bleu_n": "bleu", "rouge_beta": "rouge_l"}.get(name, "meteor")
    with pytest.raises(OptionError, match=expected):
        compute_scores(HYP, REF, [metric], **{name: value})


def test_lossless_conversions_are_accepted():
    a = compute_scores(HYP, REF, ["cider"], cider_sigma="6")
    b = compute_scores(HYP, REF, ["cider"], cider_sigma=6)
    assert a.scores == b.scores and "sigma:6" in a.signatures["cider"]


def test_options_of_metrics_not_computed_are_accepted():
    out = compute_scores(HYP, REF, ["bleu"], cider_sigma=3.0, meteor_task="hter")
    assert set(out.scores) == {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"}


def test_meteor_declares_the_asynchronous_capability():
    assert METRICS.get("meteor").asynchronous
    assert not any(METRICS.get(n).asynchronous for n in ("bleu", "rouge_l", "cider", "bertscore", "acs_acd"))


@dataclass(frozen=True)
class _EchoOptions:
    echo_scale: float = 1.0


def _echo(inp, options):
    from connote.metrics.registry import MetricOutput

    vals = {i: {"ECHO": options.echo_scale * len(h.split())} for i, h in zip(inp.ids, inp.hyps)}
    return MetricOutput({"ECHO": sum(v["ECHO"] for v in vals.values()) / len(vals)}, vals, "echo", [])


def test_a_metric_is_one_module_plus_one_registration():
    """A metric registered from outside the package runs through compute_scores with typed options."""
    register("echo_test", f"{__name__}:_echo", f"{__name__}:_EchoOptions", help="test metric")
    try:
        out = compute_scores(HYP, REF, ["echo_test", "bleu"], per_item=True, echo_scale=2)
        assert out.scores["ECHO"] == pytest.approx(2 * (5 + 6) / 2)
        assert out.per_item["2"]["ECHO"] == 12.0
        with pytest.raises(OptionError, match="echo_scale"):
            compute_scores(HYP, REF, ["echo_test"], echo_scale="big")
    finally:
        METRICS._entries.pop("echo_test")
        METRICS._help.pop("echo_test")


def test_score_name_table_serves_vist_and_vmc():
    from connote.vist.protocols import ALBUM_NAMES, metric_name
    from connote.vmc.scoring import COLUMNS

    assert ALBUM_NAMES == ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D")
    assert metric_name is display_name
    assert [display_name(x) for x in ("Bleu_4", "rouge_l", "CIDEr", "cider_d", "BERTScore_F1")] == [
        "BLEU-4", "ROUGE-L", "CIDEr-D", "CIDEr-D", "BERT-F1"]
    assert COLUMNS["BLEU-4"] == (("Bleu_4",), 100.0) and COLUMNS["CIDEr"][0][0] == "CIDEr"
    assert COLUMNS["BERT-F1"][0][0] == "BERTScore_F1"
    generic = {s.key for s in SCORE_NAMES}
    assert {"Bleu_1", "METEOR", "ROUGE_L", "CIDEr", "BERTScore_F1"} <= generic
    # the papers' score names come from their plugin modules, not from the generic table
    assert not generic & {"ACS", "ACD", "GROOViST", "RoViST-VG", "RoViST-C", "RoViST-NR"}
    assert {"ACS", "ACD", "GROOViST", "RoViST-VG", "RoViST-C", "RoViST-NR"} <= {s.key for s in score_names()}
    assert [display_name(x) for x in ("groovist", "rovist_nr", "acs")] == ["GROOViST", "RoViST-NR", "ACS"]
    assert score_keys("BERT-F1")[0] == "BERTScore_F1"


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj), encoding="utf-8")
    return p


@pytest.mark.parametrize("args,expected", [
    (["--metrics", "cider", "--cider-sigma", "0"], "cider_sigma"),
    (["--metrics", "cider", "--cider-sigma", "nan"], "cider_sigma"),
    (["--metrics", "meteor", "--meteor-task", "nope"], "nope"),
    (["--metrics", "meteor", "--synonyms", "nltk"], "synonym_source"),
    (["--metrics", "bertscore", "--bertscore-layer", "-1"], "bertscore_layer"),
])
def test_cli_invalid_numeric_and_choice_options_exit_2(tmp_path, capsys, args, expected):
    hyp, ref = _write(tmp_path, "h.json", HYP), _write(tmp_path, "r.json", REF)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_cli_paraphrase_file_that_is_not_a_table_exits_2_naming_it(tmp_path, capsys, pycoco):
    import gzip

    hyp, ref = _write(tmp_path, "h.json", HYP), _write(tmp_path, "r.json", REF)
    plain = tmp_path / "notes.txt"
    plain.write_text("not a table\n", encoding="utf-8")
    gz = tmp_path / "wrong.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write("hello\nworld\nagain\n")
    for bad in (plain, gz):
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "meteor",
                     "--paraphrase-file", str(bad)]) == 2
        err = capsys.readouterr().err
        assert bad.name in err and "paraphrase table" in err and "Traceback" not in err
    missing = tmp_path / "absent.gz"
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "meteor",
                 "--paraphrase-file", str(missing)]) == 2
    assert "absent.gz" in capsys.readouterr().err


@pytest.mark.parametrize("hyps,refs,bad_id", [
    ({"1": None, "2": "x"}, REF, "'1'"),
    ({"1": 5, "2": "x"}, REF, "'1'"),
    ({"1": ["a", "b"], "2": "x"}, REF, "'1'"),
    ({"1": "x", "2": "y"}, {"1": ["a"], "2": [["nested"]]}, "'2'"),
    ({"1": "x", "2": "y"}, {"1": ["a"], "2": 7}, "'2'"),
    ({"1": "x", "2": "y"}, {"1": ["a"], "2": {"t": "a"}}, "'2'"),
])
def test_cli_non_string_json_values_exit_2_naming_the_id(tmp_path, capsys, hyps, refs, bad_id):
    hyp, ref = _write(tmp_path, "h.json", hyps), _write(tmp_path, "r.json", refs)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "bleu"]) == 2
    err = capsys.readouterr().err
    assert bad_id in err and "Traceback" not in err


def test_library_refuses_null_hypothesis():
    with pytest.raises(InputError, match="'1'"):
        compute_scores({"1": None}, {"1": ["a cat"]}, ["bleu"])
