"""Judges against a loopback OpenAI-compatible server: cached calls, prompt invalidation, parse failures, 429s."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from connote.cli import main  # noqa: E402
from connote.models.registry import load_model  # noqa: E402
from connote.tasks.judge import JudgeInput, run_judges  # noqa: E402
from connote.vist.rubrics import SHARE, parse_pairwise, parse_share  # noqa: E402
from connote.vist.sample import write_sample_vist  # noqa: E402
from connote.vmc.rubrics import VMC_A7, parse_a7  # noqa: E402
from tests.support.openai_server import Server, send_json, status  # noqa: E402

STORIES = {"s1": "the red ball rolled . we laughed .", "s2": "a long day at the beach . the sun was hot .",
           "s3": "nothing to say ."}


def answer_by_prompt(server: Server, fn):
    """A reply whose answer text is ``fn(prompt text)`` (the server runs one request at a time here)."""

    def reply(h) -> None:
        body = server.requests[-1]["body"]
        prompt = next(c["text"] for c in body["messages"][0]["content"] if c["type"] == "text")
        send_json(h, {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [
            {"index": 0, "message": {"role": "assistant", "content": fn(prompt)}, "finish_reason": "stop"}]})

    return reply


def judge_answer(prompt: str) -> str:
    if "share my experience" in prompt:
        if "nothing to say" in prompt:
            return "I would rather not rate this."  # malformed: no 1-5 rating
        return "4" if "red ball" in prompt else "Rating: 2"
    return '{"fluency": "yes", "primary_concept_consistency": "no", "consistency": "no", "creativity": "yes"}'


def spec(server: Server, **extra: str) -> str:
    opts = {"base_url": server.url, "concurrency": "1", "backoff": "0.01", "deadline": "10", **extra}
    return "openai:judge-model?" + "&".join(f"{k}={v}" for k, v in opts.items())


def items() -> list[JudgeInput]:
    return [JudgeInput(k, v) for k, v in STORIES.items()]


def test_cache_hits_prompt_invalidation_and_parse_failures(serve, tmp_path: Path) -> None:
    server = serve([])
    server.replies.append(answer_by_prompt(server, judge_answer))
    model = load_model(spec(server))
    out = tmp_path / "judge"
    scores, summary = run_judges(model, items(), [SHARE, VMC_A7], out, progress=False)
    assert len(server.requests) == 6 and summary["computed"] == 6
    assert scores["s1"]["share[openai:judge-model]"] == 4.0 and scores["s2"]["share[openai:judge-model]"] == 2.0
    assert scores["s1"]["creativity[openai:judge-model]"] == 1.0
    assert scores["s1"]["consistency[openai:judge-model]"] == 0.0
    # the malformed answer is recorded with its item, without a score
    assert "share[openai:judge-model]" not in scores.get("s3", {})
    assert "expected a rating 1-5" in summary["failures"]["share:s3"]
    rows = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    bad = next(r for r in rows if r["item_id"] == "share:s3")
    assert bad["answer"] == "I would rather not rate this." and bad["error"] is None and bad["scores"] is None
    assert json.loads((out / "results.json").read_text())["rubrics"]["share"]["n_parse_failed"] == 1
    assert not (out / "judge.json").exists()  # the results file every task writes (judge.json before 2026-12)
    assert server.requests[0]["body"]["temperature"] == 0 and "seed" not in server.requests[0]["body"]

    # a rerun costs nothing: every call (the parse failure too) comes from the store
    again, summary = run_judges(load_model(spec(server)), items(), [SHARE, VMC_A7], out, progress=False)
    assert len(server.requests) == 6 and summary["computed"] == 0 and summary["resumed"] == 6 and again == scores

    # a changed prompt recomputes its own rubric only
    stricter = dataclasses.replace(SHARE, template=SHARE.template + "\nBe strict.")
    _, summary = run_judges(load_model(spec(server)), items(), [stricter, VMC_A7], out, progress=False)
    assert summary["computed"] == 3 and summary["resumed"] == 3
    new = server.requests[6:]
    assert len(new) == 3 and all("Be strict." in r["body"]["messages"][0]["content"][0]["text"] for r in new)

    # temperature and seed are part of the judge: another run, in the request and in the signature
    _, summary = run_judges(load_model(spec(server)), items()[:1], [SHARE], out, temperature=0.7, seed=3,
                            progress=False)
    assert summary["computed"] == 1
    assert server.requests[-1]["body"]["temperature"] == 0.7 and server.requests[-1]["body"]["seed"] == 3
    assert "temperature:0.7|seed:3" in summary["signatures"]["share"]
    assert f"rubric:share@v{SHARE.version}#{SHARE.prompt_sha()}" in summary["signatures"]["share"]


def test_429_storm_is_retried_within_the_deadline(serve, tmp_path: Path) -> None:
    server = serve([])
    storm = [status(429, {"Retry-After": "0.05"})] * 4
    server.replies.extend([*storm, answer_by_prompt(server, judge_answer)])
    t0 = time.monotonic()
    scores, summary = run_judges(load_model(spec(server, max_retries="5", deadline="5")), items()[:1], [SHARE],
                                 tmp_path / "j", progress=False)
    assert time.monotonic() - t0 < 5
    assert len(server.requests) == 5 and scores["s1"]["share[openai:judge-model]"] == 4.0
    assert not summary["failures"]


def test_a_storm_past_the_retries_is_an_item_error_retried_on_rerun(serve, tmp_path: Path) -> None:
    server = serve([status(429, {"Retry-After": "0.01"})])
    out = tmp_path / "j"
    scores, summary = run_judges(load_model(spec(server, max_retries="2")), items()[:2], [SHARE], out,
                                 progress=False)
    assert not scores and set(summary["failures"]) == {"share:s1", "share:s2"}
    assert all("429" in v or "HTTP" in v or "API" in v for v in summary["failures"].values())
    n = len(server.requests)
    server.replies[:] = [answer_by_prompt(server, judge_answer)]  # the server recovers
    scores, summary = run_judges(load_model(spec(server, max_retries="2")), items()[:2], [SHARE], out,
                                 progress=False)
    assert summary["computed"] == 2 and len(server.requests) == n + 2 and scores["s2"]["share[openai:judge-model]"] == 2


RATINGS = {"4": 4, "**4**": 4, "4.": 4, "4 - agree": 4, "4 (agree)": 4, "Rating: 2": 2, "Score: 4": 4,
           "On a scale of 1-5, I would rate this story a 4.": 4, "I'd give it 3 out of 5.": 3, "Rating: 4/5": 4,
           "My answer is 5": 5, "I would rate it a 2 on a scale of 1 to 5": 2,
           "**3**\n\nThe story follows the photos, but 5 of its sentences repeat.": 3}
NOT_RATINGS = ("5 5 5 we went to the park .",  # a judge echoing a story that begins with numbers
               "5 friends went to the beach .", "On a scale of 1-5 this is good.", "I would rather not rate this.",
               "rating: 2 or maybe rating: 4", "3.5", "6")


def test_the_share_rating_is_the_one_that_answers_the_question() -> None:
    """Issue 39, item 3: not the first integer anywhere (the scale's 1, an echoed story's 5), but the rating in the
    answer format the rubric asks for; anything else is a parse error, never a score."""
    from connote.tasks.judge import ParseError

    assert {a: parse_share(a)["share"] for a in RATINGS} == RATINGS
    for answer in NOT_RATINGS:
        with pytest.raises(ParseError):
            parse_share(answer)


def test_the_pairwise_choice_is_the_letter_that_answers() -> None:
    """Item 3's rule for the pairwise rubric (v2): the first "A" or "B" of any sentence was read as the choice, so an
    echoed story ("A man went ...") preferred story A; the letter must answer the question."""
    from connote.tasks.judge import ParseError

    answers = {"A": 1.0, "b.": 0.0, "**A**": 1.0, "(B)": 0.0, "A is better": 1.0, "Story B": 0.0,
               "B because it is grounded": 0.0, "Answer: B": 0.0, "My answer is Story A.": 1.0, "I prefer B.": 0.0}
    assert {a: parse_pairwise(a)["prefer_a"] for a in answers} == answers
    for answer in ("A man went to the park .", "A dog . A cat .", "Both are fine", "B-movie plots are fun ."):
        with pytest.raises(ParseError):
            parse_pairwise(answer)


def test_parsers() -> None:
    assert parse_share("  5") == {"share": 5.0}
    assert parse_pairwise("B. Story B is better") == {"prefer_a": 0.0}
    assert parse_pairwise("Story A") == {"prefer_a": 1.0}
    assert parse_a7("fluency: yes\nprimary concept consistency: no\nconsistency: no\ncreativity: yes")["fluency"] == 1
    from connote.tasks.judge import ParseError

    for bad, fn in (("6", parse_share), ("3.5", parse_share), ("neither", parse_pairwise),
                    ('{"fluency": "yes"}', parse_a7)):
        with pytest.raises(ParseError):
            fn(bad)


@pytest.mark.slow
def test_vist_correlate_with_a_judge_and_pairwise_preferences(serve, tmp_path: Path, capsys) -> None:
    paths = write_sample_vist(tmp_path / "sample")
    server = serve([])
    stories = {a[0]["story_id"]: [] for a in json.loads(paths["test"].read_text())["annotations"]}

    def by_story(prompt: str) -> str:  # a judge that likes long stories (rating 1-5 from the length)
        if "Story A:" in prompt:
            a, b = prompt.split("Story A:")[1].split("Story B:")
            return "A" if len(a) > len(b.split("Which")[0]) else "B"
        story = prompt.split("Story:")[1].split("How strongly")[0]
        return str(min(5, max(1, len(story) // 40)))

    server.replies.append(answer_by_prompt(server, by_story))
    judge = spec(server)
    args = ["vist", "correlate", str(paths["ratings"]), "--stories", str(paths["test"]), "--metrics", "none",
            "--judge", judge, "--judge-out", str(tmp_path / "judges"), "--images", str(paths["images"]),
            "--n-boot", "50", "--no-progress", "--json"]
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["correlations"]["share[openai:judge-model]"]["n"] == len(stories) == 6
    assert len(server.requests) == 6
    assert sum(c["type"] == "image_url" for c in server.requests[0]["body"]["messages"][0]["content"]) == 5
    assert main(args) == 0 and len(server.requests) == 6  # cached
    capsys.readouterr()
    pair_args = ["vist", "correlate", str(paths["preferences"]), "--stories", str(paths["test"]), "--metrics",
                 "none", "--story-metrics", "rovist_nr", "--judge", judge, "--judge-out", str(tmp_path / "judges"),
                 "--n-boot", "0", "--no-progress"]
    assert main(pair_args) == 0
    out = capsys.readouterr().out
    assert "pairwise preferences" in out and "prefer_a[openai:judge-model]" in out and "RoViST-NR" in out
    assert len(server.requests) == 9  # three pairs, asked once each


@pytest.mark.slow
def test_a_judge_that_judged_nothing_is_said_and_is_not_exit_0(serve, tmp_path: Path, capsys) -> None:
    """Issue 39, item 10: every judge call fails (the server answers 500): the judge's row used to vanish with exit
    0; now the command says n = 0 and why, and exits 1 (with other metrics beside it) or says nothing was judged."""
    paths = write_sample_vist(tmp_path / "sample")
    server = serve([status(500)])
    base = ["vist", "correlate", str(paths["ratings"]), "--stories", str(paths["test"]), "--judge",
            spec(server, max_retries="0"), "--judge-out", str(tmp_path / "judges"), "--n-boot", "0", "--no-progress"]
    assert main([*base, "--metrics", "smoothed_bleu", "--json"]) == 1
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert set(res["correlations"]) == {"smoothed-BLEU"} and "n = 0: none of 6 judgement(s)" in captured.err
    assert "HTTP 500" in res["unjudged"][spec(server, max_retries="0")] and "no row in the correlations" in captured.err
    assert main([*base, "--metrics", "none"]) == 1  # the judge was all there was: nothing was judged
    err = capsys.readouterr().err
    assert "error: nothing to correlate: nothing was judged" in err and "Traceback" not in err


def test_metaphor_correlate_with_an_a7_judge(serve, tmp_path: Path, capsys) -> None:
    import csv

    folder = tmp_path / "import"
    folder.mkdir()
    captions = {f"v{i}_run": ("the car is as fast as a cheetah" if i % 2 else "the car is as fast as a jeep")
                for i in range(6)}
    with open(folder / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "rater", "criterion", "label"])
        for k, iid in enumerate(captions):
            for r in "abc":
                w.writerow([iid, r, "creativity", 1 if ("cheetah" in captions[iid]) != (r == "c" and k < 2) else 0])
    with open(folder / "captions.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "video_id", "run", "caption"])
        for iid, cap in captions.items():
            w.writerow([iid, iid.split("_")[0], "run", cap])
    server = serve([])

    def a7(prompt: str) -> str:  # creative when the comparison is not another car
        creative = "yes" if "cheetah" in prompt else "no"
        return json.dumps({"fluency": "yes", "primary_concept_consistency": "yes", "consistency": "yes",
                           "creativity": creative})

    server.replies.append(answer_by_prompt(server, a7))
    args = ["metaphor", "correlate", str(folder), "--judge", spec(server), "--judge-out", str(tmp_path / "j"),
            "--criteria", "creativity", "--n-boot", "50", "--json", "--no-progress"]
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    row = res["criteria"]["creativity"]["correlations"]["creativity[openai:judge-model]"]
    shares = [1 - 1 / 3 * (k < 2) if k % 2 else 1 / 3 * (k < 2) for k in range(6)]
    judge = [float(k % 2) for k in range(6)]
    from scipy import stats

    assert row["n"] == 6 and row["pearson"] == pytest.approx(stats.pearsonr(judge, shares).statistic)
    assert "rubric:vmc-a7@v1" in res["signatures"]["vmc-a7[" + spec(server) + "]"]
    assert len(server.requests) == 6 and main(args) == 0 and len(server.requests) == 6


@pytest.mark.slow
def test_a_chat_vlm_backend_as_judge(tmp_path: Path) -> None:
    """Any registered generation backend judges: a tiny random LLaVA answers nonsense, recorded per item."""
    from PIL import Image

    from tests.support import tiny_models

    folder = tiny_models.tiny_llava(tmp_path / "llava")
    model = load_model(f"hf-vlm:{folder}?max_new_tokens=4")
    photos = tmp_path / "photos"
    photos.mkdir()
    for pid, rgb in (("p1", (255, 0, 0)), ("p2", (0, 0, 255))):
        Image.new("RGB", (32, 32), rgb).save(photos / f"{pid}.png")
    its = [JudgeInput("s1", "the red ball rolled .", None, ("p1", "p2"))]
    scores, summary = run_judges(model, its, [SHARE], tmp_path / "j", image_dir=photos, progress=False)
    row = json.loads((tmp_path / "j" / "judgements.jsonl").read_text().splitlines()[0])
    assert row["error"] is None and isinstance(row["answer"], str)
    assert (row["scores"] is None) == (row["parse_error"] is not None)  # parsed, or its failure recorded
    again = run_judges(load_model(f"hf-vlm:{folder}?max_new_tokens=4"), its, [SHARE], tmp_path / "j",
                       image_dir=photos, progress=False)[1]
    assert again["computed"] == 0 and again["resumed"] == 1
    assert summary["signatures"]["share"].startswith("judge|model:hf-vlm:")
