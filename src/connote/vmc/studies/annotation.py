"""VMC *annotation* (paper §3.1 and appendix A.1): for each video, questions a-h, three annotators per video.

a) is there a visual metaphor (yes/no); b) is the audio needed to understand it (yes/no); c) where in the
video (start and end, seconds); d) primary concept; e) secondary concept; f) their common property;
g) the one-line caption "<primary> is as <property> as <secondary>"; h) a free description of the video.
Questions b-h appear once a) is answered "yes" (Potato's ``display_logic``).

Import keeps the videos that every annotator marked metaphoric (the paper's rule) and writes, into the
``--out`` folder, the files ``connote vmc`` reads: ``captions.csv`` (``unique_id, annotator_1..N``,
the g) captions), plus ``concepts.csv`` (d, e, f, b, h per annotator), ``segments.csv`` (c), and
``labels.csv`` (a and b per annotator, the format ``connote agreement`` reads).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, choice, collect, finish, text, write_labels
from connote.collect.project import MediaFolder, Study, example_block, radio, safe_name, textbox, write_project
from connote.collect.quality import Question

NAME = "vmc-annotation"
YES_NO = ("yes", "no")
SHOW_IF_METAPHOR = {"display_logic": {"show_when": [{"schema": "metaphor", "operator": "equals", "value": "yes"}]}}
TEXT_QUESTIONS = ("primary_concept", "secondary_concept", "property", "caption", "description")
#: The categorical questions alpha, gold items and aggregation read (b only where a is "yes").
QUESTIONS = (Question("metaphor", YES_NO), Question("audio_needed", YES_NO))

INSTRUCTIONS = (
    "<p>Watch the video (with sound), then answer the questions. A <b>visual metaphor</b> shows one thing "
    "(the <i>primary concept</i>, usually the product or idea) as or next to something else (the "
    "<i>secondary concept</i>) so that a property of the second is carried over to the first.</p><ol type=\"a\">"
    "<li>Does this video contain a visual metaphor?</li>"
    "<li>Is the audio of the video required to understand the metaphor?</li>"
    "<li>What part of the video contains the metaphor? (start and end, in seconds)</li>"
    "<li>What is the primary concept in this video?</li><li>What is the secondary concept in this video?</li>"
    "<li>What is the common property of both concepts?</li>"
    "<li>Give a one-line description of the form \"<i>primary concept</i> is as <i>property</i> as "
    "<i>secondary concept</i>\".</li><li>A free-form description of the video.</li></ol>"
    "<p>Questions b&ndash;h appear when you answer \"yes\" to a. Do not use brand or person names in the "
    "concepts: use common words (\"the drink\", not the brand; \"the football player\", not his name).</p>"
    "<p>Some items are attention checks that tell you what to answer; please follow them.</p>"
    + example_block("Worked example",
                    "An advert shows a broadband router, then a cheetah sprinting across the savanna.<br>"
                    "a) yes; b) no; c) 4 to 11; d) the internet connection; e) a cheetah; f) fast; "
                    "g) <i>The internet connection is as fast as a cheetah</i>; h) A router is shown on a desk, "
                    "then a cheetah runs after its prey while a download bar fills up.")
)


def schemes() -> list[dict[str, Any]]:
    return [
        radio("metaphor", "a) Does this video contain a visual metaphor?", YES_NO),
        radio("audio_needed", "b) Is the audio of the video required to understand the metaphor?", YES_NO,
              **SHOW_IF_METAPHOR),
        textbox("metaphor_time", "c) What part of the video contains the metaphor? Start and end, in seconds",
                labels=["start", "end"], rows=1, **SHOW_IF_METAPHOR),
        textbox("primary_concept", "d) What is the primary concept in this video?", rows=1, min_chars=2,
                **SHOW_IF_METAPHOR),
        textbox("secondary_concept", "e) What is the secondary concept in this video?", rows=1, min_chars=2,
                **SHOW_IF_METAPHOR),
        textbox("property", "f) What is the common property of both concepts?", rows=1, min_chars=2,
                **SHOW_IF_METAPHOR),
        textbox("caption", "g) One line: <primary concept> is as <property> as <secondary concept>", rows=1,
                min_chars=12, placeholder="The ... is as ... as ...", **SHOW_IF_METAPHOR),
        textbox("description", "h) A free-form description of the video", rows=3, min_chars=20,
                **SHOW_IF_METAPHOR),
    ]


def make(videos: str | Path, out: str | Path, *, per_item: int = 3, completion: str | None = None,
         login: str = "username") -> Path:
    """Write the annotation study: one item per video file in ``videos``."""
    from connote.vmc.data import find_videos

    videos = Path(videos)
    study = Study(name=NAME, title="Visual metaphors in videos", instructions=INSTRUCTIONS, schemes=schemes(),
                  display_fields=[{"key": "video", "type": "video", "label": "Video",
                                   "display_options": {"max_height": 360, "resizable": False}},
                                  {"key": "text", "type": "text", "label": "Task"}],
                  per_item=per_item, options={"videos": str(videos.resolve())})
    media = MediaFolder(study)
    for vid, path in find_videos(videos).items():
        if path.stat().st_size == 0:
            study.left_out.append(f"{path.name}: empty video file")
            continue
        media.add_item({"id": safe_name(vid), "text": "Watch the video, then answer the questions below."},
                       {"unique_id": vid, "file": path.name}, path, media="video", what=path.name)
    if study.items:
        study.attention.append({"id": "attention-1", "video": study.items[0]["video"],
                                "expected_answer": {"metaphor": "no"},
                                "text": "ATTENTION CHECK: whatever the video shows, answer \"no\" to question a."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    said = choice(answer, "metaphor")
    if said == "no":
        return True
    if said != "yes" or choice(answer, "audio_needed") not in YES_NO:
        return False
    return all(text(answer, q) for q in TEXT_QUESTIONS) and all(
        text(answer, "metaphor_time", lab) for lab in ("start", "end"))


def _seconds(value: str) -> str:
    try:
        return f"{float(value.replace(',', '.')):g}"
    except ValueError:
        return value


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """Write the VMC dataset files for the videos all annotators marked metaphoric."""
    from connote.vmc.data import read_caption_table
    from connote.vmc.template import follows_template

    collected = collect(folder, manifest, is_complete)
    per_item = int(manifest["per_item"])
    out.mkdir(parents=True, exist_ok=True)
    caption_rows, concept_rows, segment_rows, labels = [], [], [], []
    not_metaphoric, outside = [], []
    for iid in manifest["items"]:
        vid = manifest["sources"][iid]["unique_id"]
        by = sorted(collected.by_item[iid].items())
        for rater, a in by:
            labels.append((vid, rater, "metaphor", choice(a, "metaphor") or ""))
            if choice(a, "metaphor") == "yes":
                labels.append((vid, rater, "audio_needed", choice(a, "audio_needed") or ""))
        if len(by) < per_item:
            continue
        if not all(choice(a, "metaphor") == "yes" for _, a in by):
            not_metaphoric.append(vid)
            continue
        caption_rows.append([vid] + [text(a, "caption") for _, a in by])
        for rater, a in by:
            concept_rows.append([vid, rater, text(a, "primary_concept"), text(a, "secondary_concept"),
                                 text(a, "property"), choice(a, "audio_needed"), text(a, "description")])
            segment_rows.append([vid, rater, _seconds(text(a, "metaphor_time", "start")),
                                 _seconds(text(a, "metaphor_time", "end"))])
            if not follows_template(text(a, "caption")):
                outside.append(f"{vid} ({rater})")
    files = {
        "captions.csv": (["unique_id"] + [f"annotator_{k}" for k in range(1, per_item + 1)], caption_rows),
        "concepts.csv": (["unique_id", "annotator", "primary_concept", "secondary_concept", "property",
                          "audio_needed", "description"], concept_rows),
        "segments.csv": (["unique_id", "annotator", "start", "end"], segment_rows),
    }
    for name, (header, rows) in files.items():
        with open(out / name, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
    if caption_rows:
        read_caption_table(out / "captions.csv")
    report = ImportReport(study=NAME, outputs=[str(out / n) for n in [*files, "labels.csv"]], extra={
        "metaphoric_videos": len(caption_rows), "not_metaphoric_for_all": not_metaphoric,
        "captions_outside_template": outside})
    report.agreement = write_labels(out / "labels.csv", labels)
    return finish(report, collected)

