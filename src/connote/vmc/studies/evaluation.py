"""VMC *evaluation* (paper §7.2 and appendices A.6-A.7): four binary labels per generated caption.

Fluency (natural, grammatical, and following the template), creativity, primary-concept consistency and
consistency with the whole video; three annotators. Sources are caption runs (``connote vmc caption``
folders, read from their ``captions.jsonl``: ``video_id, text``; or such a JSONL file itself) and the folder
of their videos. One item per (video, run) pair, with id ``<video>_<run>``.

Import writes ``labels.csv`` (``item_id, rater, criterion, label``: what ``connote agreement`` reads, so the
reported pairwise Cohen's and Fleiss' kappa are that command's), ``captions.csv`` (item, video, run,
caption) and, where per-caption ACD is known (``--scores``, or the scores ``connote vmc score`` stored
in the runs with ACS/ACD, ``scores/vmc-<key>.json``), the ACD-creativity correlation of appendix A.6: Pearson's r
between each judgement's binary creativity label and the caption's ACD (the paper's, r = 0.403), and,
as a second named variant, between ACD and the share of annotators who found the caption creative.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, Collected, ImportReport, choice, collect, finish, write_labels
from connote.collect.project import MediaFolder, Study, example_block, radio, safe_name, write_project
from connote.collect.quality import Question
from connote.core.errors import InputError
from connote.core.jsonio import read_json

NAME = "vmc-evaluation"
YES_NO = ("yes", "no")
CRITERIA = {
    "fluency": "Fluency: is the caption natural and grammatical, and does it follow the template "
               "\"<primary> is as <property> as <secondary>\"?",
    "creativity": "Creativity: is the metaphor in the caption creative?",
    "primary_concept_consistency": "Primary concept: does the caption name the video's primary concept correctly?",
    "consistency": "Consistency: is the caption consistent with the whole video (both concepts and how they "
                   "are related)?",
}
#: The categorical questions alpha, gold items and aggregation read: the four yes/no criteria.
QUESTIONS = tuple(Question(c, YES_NO) for c in CRITERIA)

INSTRUCTIONS = (
    "<p>Watch the video, read the caption a system wrote for its metaphor, and answer four yes/no questions "
    "about the caption.</p><ul>"
    "<li><b>Fluency</b>: the caption reads naturally, is grammatical, and follows the form "
    "\"<i>primary concept</i> is as <i>property</i> as <i>secondary concept</i>\".</li>"
    "<li><b>Creativity</b>: the comparison is creative, not an obvious one.</li>"
    "<li><b>Primary concept</b>: the caption names the video's primary concept (what the advert is about) "
    "correctly.</li>"
    "<li><b>Consistency</b>: the caption fits the whole video: both concepts and their relation.</li></ul>"
    "<p>Some items are attention checks that tell you what to answer; please follow them.</p>"
    + example_block("Worked example",
                    "Video: an advert for broadband; a cheetah runs while a download bar fills.<br>"
                    "\"The internet is as fast as a cheetah\": fluency yes, creativity yes, primary concept "
                    "yes, consistency yes.<br>\"The car is as fast as a jeep\": fluency yes, creativity no "
                    "(an obvious comparison), primary concept no, consistency no.")
)


def read_captions(run: Path) -> dict[str, str]:
    """``video_id -> caption`` from a run folder's ``captions.jsonl`` (or that file)."""
    path = run / "captions.jsonl" if run.is_dir() else run
    if not path.is_file():
        raise InputError("no captions.jsonl (expected a `connote vmc caption` run folder)", path=run)
    from connote.core.jsonio import read_jsonl

    out: dict[str, str] = {}
    for lineno, row in read_jsonl(path, what="captions file"):
        if not isinstance(row, dict):
            raise InputError("expected a JSON object", path=path, line=lineno)
        vid = str(row.get("video_id") or row.get("question_id") or "")
        if not vid:
            raise InputError("missing video_id", path=path, line=lineno)
        out[vid] = str(row.get("text") or "").strip()
    return out


def make(runs: list[str | Path], videos: str | Path, out: str | Path, *, per_item: int = 3,
         completion: str | None = None, login: str = "username") -> Path:
    """Write the evaluation study: one item per (video, run) caption whose video exists."""
    from connote.vmc.data import find_videos

    videos = Path(videos)
    files = find_videos(videos)
    study = Study(name=NAME, title="Rate metaphor captions of videos", instructions=INSTRUCTIONS,
                  schemes=[radio(c, d, YES_NO, keys=False) for c, d in CRITERIA.items()],
                  display_fields=[{"key": "video", "type": "video", "label": "Video",
                                   "display_options": {"max_height": 360, "resizable": False}},
                                  {"key": "text", "type": "text", "label": "Caption"}],
                  per_item=per_item, options={"videos": str(videos.resolve()), "runs": {}})
    media = MediaFolder(study)
    names: dict[str, str] = {}
    for run in map(Path, runs):
        name = safe_name(run.name if run.is_dir() else run.stem, 40)
        while name in names:
            name += "_"
        names[name] = str(run.resolve())
        for vid, caption in read_captions(run).items():
            if vid not in files:
                study.left_out.append(f"{name}/{vid}: no video file {vid}.* in {videos}")
                continue
            if not caption:
                study.left_out.append(f"{name}/{vid}: empty caption")
                continue
            iid = f"{safe_name(vid)}_{name}"
            url = media.admit(files[vid], safe_name(vid), what=f"{name}/{vid}")
            if url is None:
                continue
            study.items.append({"id": iid, "text": caption, "video": url})
            study.sources[iid] = {"video_id": vid, "run": name, "caption": caption}
    study.options["runs"] = names
    if study.items:
        study.attention.append(attention_item("video", study.items[0]["video"]))
    return write_project(study, out, completion=completion, login=login)


def attention_item(media: str, url: str) -> dict[str, Any]:
    """The attention check of the VMC yes/no studies: the first item's ``media`` (video or image) with an
    instruction to answer "no" to fluency and creativity."""
    return {"id": "attention-1", media: url, "expected_answer": {"fluency": "no", "creativity": "no"},
            "text": "ATTENTION CHECK: answer \"no\" to fluency and to creativity here."}


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return all(choice(answer, c) in YES_NO for c in CRITERIA)


def _pearson(x: list[float], y: list[float]) -> dict[str, Any]:
    from scipy.stats import pearsonr

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return {"r": None, "p": None, "n": len(x)}
    r, p = pearsonr(x, y)
    return {"r": None if math.isnan(r) else round(float(r), 6), "p": float(p), "n": len(x)}


def _acd(manifest: dict[str, Any], scores: list[Path] | None) -> dict[str, dict[str, float]]:
    """run name -> video -> ACD: from the given scores files (``per_video[vid]["ACD"]``), else from each run
    folder's most recent stored scores with ACD (``scores/vmc-*.json`` of ``connote vmc score``)."""
    from connote.vmc.scoring import acd_values, per_video_acd

    found: dict[str, dict[str, float]] = {}
    runs = manifest["options"]["runs"]
    for name, p in runs.items():
        if Path(p).is_dir():
            values, _ = per_video_acd(p)
            if values:
                found[name] = values
    for path in scores or []:
        # a run's scores.json or scores/vmc-<key>.json: the run is the file's folder or the one above
        folders = (path.resolve().parent, path.resolve().parent.parent)
        name = next((n for n, p in runs.items() if Path(p) in folders), path.resolve().parent.name)
        if not path.is_file():
            continue
        obj = read_json(path)
        values = acd_values(obj) if isinstance(obj, dict) else {}
        if values:
            found[name] = values
    return found


def import_yes_no(folder: Path, manifest: dict[str, Any], out: Path, study: str, criteria: Mapping[str, str],
                  columns: Sequence[str]) -> tuple[ImportReport, Collected]:
    """The complete answers of a yes/no study: ``labels.csv`` (one 1/0 row per judgement and criterion, with the
    agreement ``connote agreement`` reports) and ``captions.csv`` (``item_id`` + the items' source ``columns``)."""
    collected = collect(folder, manifest, lambda a: all(choice(a, c) in YES_NO for c in criteria))
    out.mkdir(parents=True, exist_ok=True)
    labels = [(iid, rater, c, "1" if choice(a, c) == "yes" else "0")
              for iid, by in collected.by_item.items() for rater, a in by.items() for c in criteria]
    with open(out / "captions.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["item_id", *columns])
        writer.writerows([iid, *(manifest["sources"][iid][k] for k in columns)] for iid in manifest["items"])
    report = ImportReport(study=study, outputs=[str(out / "labels.csv"), str(out / "captions.csv")])
    report.agreement = write_labels(out / "labels.csv", labels)
    return report, collected


def import_answers(folder: Path, manifest: dict[str, Any], out: Path,
                   scores: list[Path] | None = None) -> ImportReport:
    """Write ``labels.csv`` and ``captions.csv`` into ``out`` and report kappa and the ACD correlation."""
    report, collected = import_yes_no(folder, manifest, out, NAME, CRITERIA, ("video_id", "run", "caption"))
    acd = _acd(manifest, scores)
    if acd:
        per_label_x, per_label_y, mean_x, mean_y = [], [], [], []
        for iid, by in sorted(collected.by_item.items()):
            src = manifest["sources"][iid]
            value = acd.get(src["run"], {}).get(src["video_id"])
            if value is None or not by:
                continue
            votes = [1.0 if choice(a, "creativity") == "yes" else 0.0 for _, a in sorted(by.items())]
            per_label_x += [value] * len(votes)
            per_label_y += votes
            mean_x.append(value)
            mean_y.append(sum(votes) / len(votes))
        corr = {"per_judgement": _pearson(per_label_x, per_label_y), "per_caption_mean": _pearson(mean_x, mean_y),
                "default": "per_judgement"}
        (out / "acd_creativity.json").write_text(json.dumps(corr, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        report.outputs.append(str(out / "acd_creativity.json"))
        report.extra["acd_creativity"] = corr
    return finish(report, collected)
