"""Contracts over the two registries of human and judge judgements (issue 37, item 5: a contract test over every
registry), each looping over what the plugins register:

* every judge rubric (:data:`connote.tasks.judge.RUBRICS`): registered under its own name, versioned, of a kind
  the judge task knows; its prompt renders an item of its kind with nothing else to fill in; an answer in the
  format the prompt asks for is read as finite scores, and an answer that is not (empty, a refusal, the prompt
  echoed back) is a ``ParseError`` — kept as the item's parse failure, never another exception that would fail
  the batch;
* every kind of human-judgement file (:data:`connote.metrics.correlation.RATINGS`): says what it expects, tells
  its own files from a folder or a file of other columns without raising, and the catch-all kinds are tried
  last, so each paper's sample file is read as its own kind.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from connote.core.registry import import_target
from connote.metrics.correlation import RATINGS, RatingsFormat, ratings_kind
from connote.tasks.judge import RUBRICS, ParseError, Rubric, read_answer, rubric

KINDS = ("story", "story-pair", "caption")  # what JudgeTask gives a rubric (a story, two stories, a caption)
#: The shapes of answer the rubrics' prompts ask for: a number on a scale, a letter, or the JSON the prompt shows.
SHAPES = ("1", "2", "3", "4", "5", "A", "B")
NOT_ANSWERS = ("", "I cannot judge this.", "As an AI model I have no opinion on stories or captions.")


def _prompt(r: Rubric) -> str:
    return r.template.format(text="TEXT-ONE", text_b="TEXT-TWO")


@pytest.mark.parametrize("name", RUBRICS.names())
def test_a_rubric_is_registered_under_its_name_and_renders_an_item_of_its_kind(name: str) -> None:
    r = rubric(name)
    assert isinstance(r, Rubric) and r.name == name
    assert isinstance(r.version, int) and r.version >= 1 and r.kind in KINDS and r.max_new_tokens >= 1
    prompt = _prompt(r)  # a placeholder other than {text} / {text_b} would raise KeyError here
    assert "TEXT-ONE" in prompt and ("TEXT-TWO" in prompt) == (r.kind == "story-pair")
    assert r.tag() == f"{name}@v{r.version}#{r.prompt_sha()}" and r.key()["rubric"] == name


@pytest.mark.parametrize("name", RUBRICS.names())
def test_a_rubric_reads_the_answer_its_prompt_asks_for_and_refuses_others(name: str) -> None:
    r = rubric(name)
    prompt = _prompt(r)
    shown = re.findall(r"\{.*?\}", prompt)  # a JSON answer the prompt shows as its example
    read = []
    for answer in (*SHAPES, *shown):
        try:
            scores = r.parse(answer)
        except ParseError:
            continue
        assert isinstance(scores, dict) and scores, (answer, scores)
        assert all(isinstance(v, float) and math.isfinite(v) for v in scores.values()), (answer, scores)
        read.append(answer)
    assert read, f"rubric {name}: none of {SHAPES + tuple(shown)} is read as an answer"
    for answer in NOT_ANSWERS:
        with pytest.raises(ParseError):
            read_answer(r, prompt, answer)
    # a judge that repeats the prompt (its scale, its example answer) has not answered; what follows is its answer
    with pytest.raises(ParseError):
        read_answer(r, prompt, prompt)
    assert read_answer(r, prompt, f"{prompt}\n{read[-1]}") == r.parse(read[-1])


def test_a_scales_legend_is_not_a_rating() -> None:
    """Found by the contract: the share question's legend ("Answer with one number: 1 = strongly disagree, ...")
    was read as the rating 1 when a judge repeated it, and beside a rating made two ratings (none)."""
    share = rubric("share")
    legend = "Answer with one number: 1 = strongly disagree, 2 = disagree, 3 = neutral, 4 = agree, 5 = strongly agree."
    with pytest.raises(ParseError):
        share.parse(legend)
    assert share.parse(f"{legend}\nMy rating: 4") == {"share": 4.0}
    assert share.parse("4 = agree") == {"share": 4.0}  # a reply that starts with its rating and label


def test_every_rubric_has_its_own_tag() -> None:
    tags = [rubric(n).tag() for n in RUBRICS.names()]
    assert len(set(tags)) == len(tags) and len(tags) >= 3  # the papers' share, pairwise and vmc-a7 at least


def _formats() -> list[tuple[str, RatingsFormat]]:
    return [(name, import_target(target)) for name, target in RATINGS.items()]


@pytest.mark.parametrize("name", list(RATINGS))
def test_a_ratings_kind_says_what_it_expects_and_never_raises_on_other_input(name: str, tmp_path: Path) -> None:
    fmt = import_target(RATINGS[name])
    assert isinstance(fmt, RatingsFormat) and fmt.expects.strip()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert fmt.recognise(empty, None) is False  # an empty folder is nobody's judgements
    assert isinstance(fmt.recognise(tmp_path / "x.csv", {"video", "caption"}), bool)


def test_catch_all_kinds_are_tried_last_and_each_paper_sample_is_read_as_its_own_kind(tmp_path: Path) -> None:
    from connote.vist.sample import write_sample_vist

    names = [name for name, _ in _formats()]
    catch_alls = [name for name, fmt in _formats() if fmt.catch_all]
    assert catch_alls and names, names
    paths = write_sample_vist(tmp_path / "vist")
    assert ratings_kind(paths["preferences"]) == "pairwise"
    assert ratings_kind(paths["ratings"]) == "vist"
    labels = tmp_path / "study"
    labels.mkdir()
    (labels / "labels.csv").write_text("item_id,rater,criterion,label\nv1,a,fluency,1\n", encoding="utf-8")
    assert ratings_kind(labels) == ratings_kind(labels / "labels.csv") == "vmc-labels"
    # a CSV that only a catch-all takes goes to it, however the formats are declared
    other = tmp_path / "other.csv"
    other.write_text("story_id,rating\n1,3\n", encoding="utf-8")
    assert ratings_kind(other) in catch_alls
