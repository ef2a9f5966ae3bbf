"""Cohen's and Fleiss' kappa against hand-computed values; the ``connote agreement`` command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from connote.cli import main
from connote.metrics.agreement import (
    agreement_table,
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_counts,
    read_labels,
)

A = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
B = [1, 0, 0, 0, 1, 1, 1, 1, 0, 1]
C = [1, 1, 0, 1, 1, 0, 1, 0, 0, 1]


def test_cohen_by_hand() -> None:
    # po = 8/10; pA(1) = pB(1) = 0.6 -> pe = 0.36 + 0.16 = 0.52; (0.8 - 0.52) / 0.48
    assert cohen_kappa(A, B) == pytest.approx(0.28 / 0.48)
    # A vs C: po = 8/10; pA(1) = 0.6, pC(1) = 0.6 -> same
    assert cohen_kappa(A, C) == pytest.approx(0.28 / 0.48)
    # B vs C: agree on 6/10; pe = 0.52 -> (0.6 - 0.52) / 0.48
    assert cohen_kappa(B, C) == pytest.approx(0.08 / 0.48)
    assert cohen_kappa([1, 1], [1, 1]) != cohen_kappa([1, 1], [1, 1])  # nan: undefined
    assert cohen_kappa(["x", "y"], ["x", "y"]) == 1.0


def test_cohen_matches_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    for x, y in [(A, B), (A, C), (B, C), ([0, 1, 2, 2, 1], [0, 2, 2, 1, 1])]:
        assert cohen_kappa(x, y) == pytest.approx(metrics.cohen_kappa_score(x, y))


def test_fleiss_wikipedia_example() -> None:
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa_counts(table) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_by_hand() -> None:
    # P_i = 1, 1, 1/3, 1/3 -> P = 2/3; p(0) = 5/12, p(1) = 7/12 -> Pe = 74/144
    expected = (2 / 3 - 74 / 144) / (1 - 74 / 144)
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0]]) == pytest.approx(expected)
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa_counts([[1, 1], [2, 1]])


def _write_labels(path: Path) -> Path:
    lines = ["item_id,rater,criterion,label"]
    for i in range(10):
        for rater, labels in (("A", A), ("B", B), ("C", C)):
            lines.append(f"v{i},{rater},fluency,{labels[i]}")
            lines.append(f"v{i},{rater},creativity,{1 - labels[i] if i < 5 else labels[i]}")
    lines.append("v10,A,fluency,1")  # rated by A only: left out of Fleiss
    path.write_text("\n".join(lines) + "\n")
    return path


def test_table_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_labels(tmp_path / "labels.csv")
    rows = {r.criterion: r for r in agreement_table(read_labels(path))}
    assert list(rows) == ["fluency", "creativity", "all"]
    flu = rows["fluency"]
    assert flu.cohen[("A", "B")] == pytest.approx(0.28 / 0.48)
    assert flu.cohen_items[("A", "B")] == 10 and flu.items == 11 and flu.fleiss_items == 10
    assert flu.fleiss == pytest.approx(fleiss_kappa(list(zip(A, B, C))))
    assert rows["all"].fleiss_items == 20
    assert main(["agreement", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["criterion"] == "fluency"
    assert out[0]["cohen"][0] == {"a": "A", "b": "B", "kappa": round(0.28 / 0.48, 6), "items": 10}
    assert main(["agreement", str(path)]) == 0
    assert "Fleiss" in capsys.readouterr().out


def test_bad_label_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,rater,label\nv1,A,1\n")
    assert main(["agreement", str(bad)]) == 2
    assert "missing column(s) criterion" in capsys.readouterr().err
    dup = tmp_path / "dup.csv"
    dup.write_text("item_id,rater,criterion,label\nv1,A,fluency,1\nv1,A,fluency,0\n")
    assert main(["agreement", str(dup)]) == 2
    assert "line 3" in capsys.readouterr().err
    assert not math.isnan(cohen_kappa([0, 1], [0, 1]))
