"""`connote metaphor score` on the public evaluation's answer file equals the authors' notebook.

The reference below is written from `scripts/video/eval/analyze_captions.ipynb` (abisekrk/video-metaphor-captioning),
the notebook that scored Table 1: rows of `answers_*.jsonl` (one per sample), `text.split("\\n")[0]` as the
prediction, references = every `true_caption` of the row's video (`groupby('video_id')`), one pooled corpus of
all rows for pycocoevalcap's BLEU/ROUGE-L/CIDEr (`hypo[i] = [caption]`, `truth[i] = refs`), evaluate's
`bertscore` (= `bert_score.score` with the reference lists, no idf, no rescaling), and ACS/ACD from
`re.split(r'as \\w+ as')` with its rules. The same encoders serve both sides (the embedded all-MiniLM-L6-v2
for BERTScore, at its last layer, and for the concepts) since the notebook's deberta-xlarge-mnli and
all-mpnet-base-v2 are not available offline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from connote.cli import main

# three videos x three samples; every generation has a chatty second line (the chat baselines' habit) and the
# captions include the notebook split's tricky cases: a hyphenated property, "was ... as", a noun ending in
# "-as", two "as X as" phrases, no template at all
VIDEOS = {
    "v1": ["the rocket is as bold as a dream", "the launch is as loud as a promise",
           "the rocket is as proud as a lion"],
    "v2": ["the coffee is as warm as a hug", "the cup is as comforting as a friend", "the drink is as kind as a smile"],
    "v3": ["the temple is as old as memory", "the building is as calm as a mountain", "the temple is as quiet as time"],
}
GENERATIONS = {
    "v1": ["the rocket is as bold as a dream\nI hope this caption helps!",
           "the rocket was as fast as a comet and as bright as a star\nLet me know if you need more.",
           "a rocket flies into the sky\nThis video shows a launch."],
    "v2": ["the coffee is as warm-hearted as a hug\nThe metaphor compares coffee to a hug.",
           "bananas as sweet as the coffee\nSure! Here is another caption.",
           "the cup is as comforting as a friend\n"],
    "v3": ["the temple is as old as memory\nIt is a beautiful temple.",
           "it was as calm as a mountain\nThe temple looks calm.",
           "the building is as calm as the mountain\nThe end."],
}


def write_answers(path: Path) -> Path:
    rows = []
    for v, gens in GENERATIONS.items():
        for k, text in enumerate(gens):  # one row per sample, each with one of the video's true captions
            rows.append({"question_id": len(rows), "prompt": "What metaphor can best describe the video?",
                         "video_id": v, "true_caption": VIDEOS[v][k], "text": text, "model_id": "test"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def notebook_scores(answers: Path, minilm: str) -> dict[str, float]:
    """The notebook's cells 3-24, on the same encoders."""
    import bert_score
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from sentence_transformers import SentenceTransformer, util

    questions = [json.loads(q) for q in answers.read_text(encoding="utf-8").splitlines()]
    true_captions = [q["true_caption"] for q in questions]
    pred_captions = [q["text"].split("\n")[0] for q in questions]
    video_ids = [q["video_id"] for q in questions]
    by_video: dict[str, list[str]] = {}
    for v, t in zip(video_ids, true_captions):
        by_video.setdefault(v, []).append(t)
    reference_captions = [by_video[v] for v in video_ids]
    hypo = {i: [c] for i, c in enumerate(pred_captions)}
    truth = dict(enumerate(reference_captions))
    out = {"BLEU-4": Bleu(4).compute_score(truth, hypo, verbose=0)[0][3] * 100,
           "ROUGE-L": Rouge().compute_score(truth, hypo)[0] * 100,
           "CIDEr": Cider().compute_score(truth, hypo)[0] * 100}
    _, _, f1 = bert_score.score(pred_captions, reference_captions, model_type=minilm, num_layers=6, idf=False,
                                device="cpu", batch_size=64)
    f1 = f1.tolist()
    out["BERT-F1"] = sum(f1) / len(f1)
    model = SentenceTransformer(minilm, device="cpu")

    def similarity(sentence: str) -> float:
        parts = [part.strip() for part in re.split(r"as \w+ as", sentence) if part.strip()]
        if len(parts) < 2:
            return 1.0
        parts[0] = " ".join(parts[0].split()[:-1])  # the notebook drops the primary part's last word
        e1 = model.encode(parts[0], convert_to_tensor=True)
        e2 = model.encode(parts[1], convert_to_tensor=True)
        return float(util.cos_sim(e1, e2)[0][0])

    cs = [similarity(s) for s in pred_captions]
    out["ACS"] = sum(cs) / len(cs)
    out["ACD"] = sum((1 - c) * f for c, f in zip(cs, f1)) / len(cs)
    return out


@pytest.fixture(scope="module")
def minilm() -> str:
    from connote.media.embedded import minilm_path

    return minilm_path()


def _score(capsys, answers: Path, *extra: str) -> dict:
    assert main(["metaphor", "score", str(answers), "--bootstrap", "0", "--json", "--bertscore-model", "embedded",
                 "--concept-encoder", "embedded", *extra]) == 0
    (res,) = json.loads(capsys.readouterr().out)
    return res


def test_answer_file_scored_as_the_notebook(tmp_path: Path, minilm: str, capsys) -> None:
    answers = write_answers(tmp_path / "answers_t_0_2_test.jsonl")
    res = _score(capsys, answers)
    expected = notebook_scores(answers, minilm)
    table = {k: res["table"][k] for k in expected}
    assert table == pytest.approx(expected, abs=1e-5)
    assert res["settings"] == {"text": "first-line", "samples": "pooled", "n_samples": 3}
    assert res["n"] == 3  # per-video rows: three videos, each the mean of its three rows
    assert res["per_video"]["v1"]["captions"][0] == GENERATIONS["v1"][0]  # the raw generation is kept
    assert res["per_video"]["v1"]["scored"][0] == "the rocket is as bold as a dream"
    stored = json.loads(Path(res["stored"]).read_text(encoding="utf-8"))
    assert stored["signature"]["protocol"] == {"answers": answers.name, "samples": "pooled", "text": "first-line"}
    assert stored["signature"]["encoders"]["concept_split"] == "notebook"


@pytest.mark.slow
def test_the_other_behaviours_are_named_options_and_differ(tmp_path: Path, minilm: str, capsys) -> None:
    answers = write_answers(tmp_path / "answers.jsonl")
    default = _score(capsys, answers)["table"]
    whole = _score(capsys, answers, "--text", "whole")["table"]
    mean = _score(capsys, answers, "--samples", "mean")["table"]
    improved = _score(capsys, answers, "--concept-split", "improved")["table"]
    assert whole["BLEU-4"] < default["BLEU-4"] and whole["ROUGE-L"] < default["ROUGE-L"]  # chatty lines scored
    assert mean["CIDEr"] != pytest.approx(default["CIDEr"])  # per-sample corpora: other document frequencies
    assert mean["ROUGE-L"] == pytest.approx(default["ROUGE-L"])  # a mean either way
    assert improved["ACS"] != pytest.approx(default["ACS"])  # "warm-hearted", "was ... as", "bananas" split otherwise
    stored = sorted((tmp_path / "scores").glob("vmc-*.json"))
    assert len(stored) == 4  # each setting is in the key: no file replaced another


def test_bad_answer_rows_name_their_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "answers.jsonl"
    bad.write_text('{"video_id": "v1", "text": "a"}\n{"video_id": "v1"}\n', encoding="utf-8")
    assert main(["metaphor", "score", str(bad), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert "answers.jsonl" in err and "2" in err and "'text'" in err


def test_an_answer_file_with_a_separate_caption_table(tmp_path: Path, capsys) -> None:
    """``--refs TABLE`` beside an answer file scores the videos the file answered that the table has captions for
    (it stopped with ``TypeError: unhashable type: 'dict'`` building that set: the file's samples are mappings)."""
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"question_id": vid, "video_id": vid, "text": text, "true_caption": "x"})
                               + "\n" for vid, text in (("v1", "the sea is as blue as ice"), ("v1", "the sea is calm"),
                                                        ("v2", "the man is as strong as an ox"))), encoding="utf-8")
    refs = tmp_path / "refs.csv"
    refs.write_text("unique_id,annotator_1\nv1,the sea is as blue as the sky\nv3,a cat on a mat\n", encoding="utf-8")
    assert main(["metaphor", "score", str(answers), "--refs", str(refs), "--metrics", "bleu", "--bootstrap", "0",
                 "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["n"] == 1 and list(run["per_video"]) == ["v1"]  # v2 has no caption in the table, v3 no answer
