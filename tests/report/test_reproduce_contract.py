"""Every registered output-file scorer keeps the ``connote reproduce`` contract (registry-wide, over the plugins'
``REPRODUCE``: run kind -> ``score_file(table, path, gold)``).

Each scorer is declared for a run kind that a report recognises and that has published tables (the papers'
tables, :mod:`connote.core.published`). On a small released-format file (a case here; a scorer without one fails
``test_every_scorer_has_a_case``), ``connote reproduce TABLE FILE`` must, for every table of that kind, measure
each published score under the table's own column name (a value under another spelling of it is never
compared), with intervals only for measured values, and at least one measured value must meet a published one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from connote.cli import main
from connote.core.plugins import PluginTable
from connote.core.published import compare, for_kind
from connote.core.registry import import_target


def _vist(root: Path) -> list[str]:
    """An AREL-format prediction file (``{album_id: ["  " + story]}``) of the sample's test albums, and the
    sample's story-in-sequence file as the references."""
    from connote.vist.challenge import read_gold
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(root / "vist")
    albums = read_gold(paths["test"]).by_album()
    pred = root / "prediction_test.json"
    pred.write_text(json.dumps({a: ["  " + stories[-1]] for a, stories in albums.items()}), encoding="utf-8")
    return [str(pred), "--refs", str(paths["test"])]


def _vmc(root: Path) -> list[str]:
    """A released answer file: a row per sample, each with the video's true caption."""
    rows = [("v1", "the sea is as calm as glass", "the sea is as calm as a mirror"),
            ("v1", "the sea is as blue as the sky", "the sea is as calm as a mirror"),
            ("v2", "the man is as strong as an ox", "the athlete is as strong as a bull"),
            ("v3", "the city is as busy as a hive", "the city is as busy as an ant hill")]
    path = root / "answers.jsonl"
    path.write_text("".join(json.dumps({"question_id": k, "video_id": v, "text": text, "true_caption": ref}) + "\n"
                            for k, (v, text, ref) in enumerate(rows)), encoding="utf-8")
    return [str(path)]


#: Run kind -> the arguments of ``connote reproduce TABLE`` for a small file of its released format.
CASES: dict[str, Callable[[Path], list[str]]] = {"vist-storytelling": _vist, "vmc-captioning": _vmc}


def _spells_a_column(name: str, columns: tuple[str, ...]) -> bool:
    """Whether ``name`` is another spelling of a score one of ``columns`` names (``CIDEr-D`` for ``CIDEr``): a
    value under it would never be compared. A measure of the scorer's own (VMC's template share) is not."""
    from connote.metrics.registry import lookup

    row = lookup(name)
    return row is not None and any(lookup(c) == row for c in columns)


def _scorers() -> dict[str, str]:
    return dict(PluginTable("output-file scorer", "REPRODUCE").items())


def test_every_scorer_has_a_case() -> None:
    assert sorted(_scorers()) == sorted(CASES), "add a case for each new REPRODUCE entry to CASES"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_scorer_is_declared_for_a_kind_with_published_tables(kind: str) -> None:
    from connote.report.load import available_kinds

    assert callable(import_target(_scorers()[kind]))
    assert kind in available_kinds(), f"{kind} is not a run kind connote report recognises"
    assert [t for t in for_kind(kind) if t.rows], f"no published table with rows of kind {kind}"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_scored_file_meets_the_published_values(kind: str, tmp_path: Path, capsys) -> None:
    args = CASES[kind](tmp_path)
    for table in [t for t in for_kind(kind) if t.rows]:
        code = main(["reproduce", table.id, *args, "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        (entry,) = json.loads(captured.out)["runs"]
        values, intervals = entry["values"], entry["intervals"]
        assert values, table.id
        misnamed = sorted(name for name in set(values) - set(table.columns) if _spells_a_column(name, table.columns))
        assert misnamed == [], f"{table.id}: measured under another spelling of its columns: {misnamed}"
        assert set(intervals) <= set(values), table.id
        assert all(v is None or math.isfinite(v) for v in values.values()), values
        met = [c for row in table.rows for c in compare(values, intervals, row, table.columns)
               if c["measured"] is not None]
        assert met, f"{table.id}: no measured value meets a published one ({sorted(values)} vs {table.columns})"
