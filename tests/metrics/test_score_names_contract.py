"""Every registered score name keeps the score-name contract (registry-wide, as ``test_contract.py`` for metrics).

The table is :func:`connote.metrics.registry.score_names`: the generic rows and every plugin's ``SCORE_NAMES``.
Each row must name a metric that exists (a registered metric of :data:`connote.metrics.METRICS`, or a
reference-free story metric of :data:`connote.vist.storyeval.STORY_METRICS`), every spelling of it (engine key,
printed name, aliases) must find that row and no other, and the metric it names, computed here on a small corpus
with the offline stand-ins, must produce a score under the row's engine key. The other way round, every corpus
score a registered metric produces must have a row (a score the tables could not name).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connote.metrics import METRICS, compute_scores
from connote.metrics.registry import ScoreName, display_name, lookup, score_keys, score_names
from connote.vist.storyeval import STORY_METRICS
from tests.metrics.test_contract import CASES, CORPUS, Stand


def _rows() -> list[ScoreName]:
    return list(score_names())


def _metrics() -> list[str]:
    return sorted({row.metric for row in score_names()})


def test_every_row_names_a_metric_that_exists() -> None:
    registered, story = set(METRICS.names()), set(STORY_METRICS)
    assert not registered & story, "a metric name is both a registered metric and a story metric"
    unknown = [(row.key, row.metric) for row in _rows() if row.metric not in registered | story]
    assert unknown == [], f"score names whose metric is neither registered nor a story metric: {unknown}"


def test_every_metric_has_a_score_name() -> None:
    """A registered metric or a story metric no row names could never be printed by its name."""
    named = {row.metric for row in _rows()}
    assert sorted((set(METRICS.names()) | set(STORY_METRICS)) - named) == []


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r.key)
def test_every_spelling_finds_its_own_row(row: ScoreName) -> None:
    assert row.display and row.scale, row
    for spelling in (row.key, row.display, *row.aliases):
        found = lookup(spelling)
        assert found is not None and found.key == row.key, f"{spelling!r} finds {found} instead of {row.key}"
    assert display_name(row.key) == row.display
    assert score_keys(row.display) == (row.key, *row.aliases)


def test_no_two_rows_share_a_key() -> None:
    keys = [row.key for row in _rows()]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []


@pytest.fixture(scope="module")
def stand(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Stand:
    return Stand(tiny_bert, tmp_path_factory.mktemp("score-names"))


def _story_scores(metric: str) -> set[str]:
    """The score names a story metric writes, on two stories of the sample's kind (colour stand-ins)."""
    from connote.vist.stats import load_spacy
    from connote.vist.storyeval import StoryScorer
    from tests.vist.test_storyeval import ColourEncoder, photos

    ims = photos()
    scorer = StoryScorer([metric], encoder=ColourEncoder(), photo=ims.__getitem__, nlp=load_spacy())
    res = scorer.score({"a": (["red", "green"], "the red ball was on the floor . the green tree stood tall ."),
                        "b": (["blue", "red"], "the blue sky was clear . the red car came by . we went home .")})
    assert not any(res.notes.values()), res.notes
    return {name for row in res.per_story.values() for name in row}


@pytest.mark.parametrize("metric", _metrics())
def test_the_metric_a_row_names_produces_its_score(metric: str, stand: Stand) -> None:
    """Computed on a small corpus, the metric scores under every engine key the table gives it; a registered
    metric's every corpus score has a row."""
    wanted = {row.key for row in _rows() if row.metric == metric}
    if metric in STORY_METRICS:
        produced = _story_scores(metric)
    else:
        hyps, refs = CORPUS
        produced = set(compute_scores(hyps, refs, [metric], per_item=False, **CASES[metric].settings(stand)).scores)
        unnamed = sorted(k for k in produced if lookup(k) is None or lookup(k).metric != metric)
        assert unnamed == [], f"{metric} produces scores no row of the table names for it: {unnamed}"
    assert sorted(wanted - produced) == [], f"{metric} produced {sorted(produced)}"
