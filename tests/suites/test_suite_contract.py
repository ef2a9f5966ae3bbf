"""Every registered probe suite keeps the suite contract (registry-wide, over :data:`connote.suites.SUITES`).

A suite (one of the four here or a plugin's) names a matching task, an MM-SHAP task and a sample writer. Each
must: be registered where the commands look it up (its tasks in ``TASKS``, its run kind in the report, its entry
in the dataset catalogue, all under the suite's name); write a sample that its own reader loads without errors,
that the catalogue's format check of the suite reads, and whose every item names the pairs to score and the
pairs to explain; run through ``connote suite run`` on that sample; and give the attributes ``connote report``
and ``connote suite`` read (title, headline, columns, published rows, its one-run table) values that exist in
the results the run wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.models.registry import MODELS, register_model
from connote.suites import SUITES, target
from connote.suites.base import PairSuiteTask, SuiteExplainTask, headline_value
from tests.report.test_kind_and_study_contract import Writer

BACKEND = Writer.backend  # a fixed p(match) rule, no weights (registered for the runs, then removed)


def _walk(results: dict, path: str) -> float | None:
    """The value at ``a/b/c`` in results.json; None where a key is absent (the sample lacks that part of the
    suite, e.g. a category), a failure where the path meets something that is not a mapping."""
    node: object = results
    for key in path.split("/"):
        assert isinstance(node, dict), f"{path}: {key!r} is looked up in {type(node).__name__}"
        if key not in node:
            return None
        node = node[key]
    assert node is None or isinstance(node, (int, float)), f"{path} is {node!r}, not a number"
    return None if node is None else float(node)


def _suites() -> list[str]:
    return list(SUITES)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("suite-samples")
    return {suite: target(suite, 2)(root / suite) for suite in SUITES}


@pytest.fixture(scope="module")
def runs(samples: dict[str, Path], tmp_path_factory) -> dict[str, Path]:
    register_model(BACKEND, Writer, capabilities={"match"}, weights="none")
    root = tmp_path_factory.mktemp("suite-runs")
    try:
        for suite, data in samples.items():
            assert main(["suite", "run", suite, "--data", str(data), "--model", BACKEND, "--out", str(root / suite),
                         "--no-progress"]) == 0, suite
    finally:
        MODELS._entries.pop(BACKEND, None)
        MODELS._help.pop(BACKEND, None)
    return {suite: root / suite for suite in SUITES}


@pytest.mark.parametrize("suite", _suites())
def test_a_suite_is_registered_where_the_commands_look_it_up(suite: str) -> None:
    from connote.datasets.catalog import DATASETS
    from connote.report.load import available_kinds
    from connote.tasks import TASKS

    matching, explaining = target(suite, 0), target(suite, 1)
    assert issubclass(matching, PairSuiteTask) and issubclass(explaining, SuiteExplainTask)
    assert matching.name == suite and TASKS.get(suite) is matching  # connote run SUITE is connote suite run
    assert explaining.suite is matching, "the MM-SHAP task must read the suite's own items"
    assert TASKS.get(explaining.name) is explaining
    assert suite in available_kinds(), "connote report cannot read the suite's runs"
    assert available_kinds()[suite].task() is matching
    assert suite in DATASETS, "connote datasets has no entry for the suite"
    assert callable(target(suite, 2))


@pytest.mark.parametrize("suite", _suites())
def test_the_sample_loads_with_the_suites_reader_and_the_catalogue_check(suite: str, samples: dict[str, Path]) -> None:
    from connote.datasets.catalog import check_copy

    data = samples[suite]
    assert data.exists()
    matching = target(suite, 0)(data, progress=False)
    assert matching.items and [it.error for it in matching.items if it.error] == []
    for it in matching.items:
        assert it.pairs and all(0 <= i < len(it.images) and 0 <= c < len(it.captions) for i, c in it.pairs), it
        assert all(Path(p).is_file() for p in it.images), it.item_id
        assert it.explain and all(0 <= k < len(it.pairs) for k, _, _ in it.explain), it.item_id
    explaining = target(suite, 1)(data, progress=False)
    assert explaining.pairs, "the sample has no pair to explain"
    group = explaining.group_by
    assert group and all(group in it.fields for it, _, _, _ in explaining.pairs), f"items lack {group!r}"
    folder = data if data.is_dir() else data.parent
    found = [f for f in check_copy(suite, folder).files if f.found_at is not None and f.path != "images/"]
    assert found, "the catalogue check finds none of the suite's files in its own sample"
    for f in found:
        assert f.status != "unreadable" and not f.problems, (f.path, f.messages, f.problems)
        assert not any("not on disk" in m for m in f.messages), (f.path, f.messages)
        assert sum(f.counts.values()) > 0, (f.path, f.counts)


@pytest.mark.parametrize("suite", _suites())
def test_a_run_holds_what_the_report_and_the_table_read(suite: str, runs: dict[str, Path]) -> None:
    from connote.report.load import available_kinds

    task = target(suite, 0)
    results = json.loads((runs[suite] / "results.json").read_text(encoding="utf-8"))
    assert results["task"] == suite and results["n_scored"] > 0 and results["n_errors"] == 0
    assert task.title and ":" in task.title, "the report titles the section with the title's part before ':'"
    assert task.headline and task.headline_label
    assert headline_value(results, task.headline) is not None, f"headline {task.headline} not in results.json"
    assert task.columns
    paths = [path for _, path in task.columns]
    written = {p: _walk(results, p) for p in paths}
    assert any(v is not None for v in written.values()), f"the run wrote none of the columns {paths}"
    wrong = {p: v for p, v in written.items() if v is not None and not (isinstance(v, float) and 0 <= v <= 1)}
    assert wrong == {}, "columns are fractions in [0, 1] (the report prints them as percentages)"
    for name, values, source in task.PUBLISHED:
        assert source and set(values) <= set(paths), f"published row {name!r} has values outside the columns"
    header, rows = task.table(results)
    assert header and rows and all(len(r) == len(header) for r in rows)
    kind = available_kinds()[suite]
    run = kind.recognise(runs[suite])
    assert run is not None and run.kind == suite
    section = kind.section([run])
    shown = section.tables[0].values[0]
    assert {p: shown[p] for p in paths} == written, "the report's table shows other values than the run wrote"
