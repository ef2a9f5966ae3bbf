"""VMC synthetic-caption check (appendix A.5.2): two annotators label each synthetic metaphor caption of an image
for fluency and creativity, yes or no (the paper: 98.7 % fluent, 97.8 % creative).

The layout is the VMC evaluation study's (:mod:`connote.vmc.studies.evaluation`): one yes/no radio question per
criterion, the same fluency and creativity wording, an attention check; here the medium is the image and the
default is two annotators per item. The source is a ``connote vmc synth`` run folder (its ``metaphors.json``
and the image folder its ``results.json`` records) or a ``metaphors.json`` with ``--images``. One item per kept
caption, id the synth row's id.

Import writes ``labels.csv`` (``item_id, rater, criterion, label``: what ``connote agreement`` reads),
``captions.csv`` (item, image, caption, source caption) and ``synth_check.json``: per criterion the share of
judgements saying yes (the paper's figures) with its 95 % Wilson interval, and the share of captions that every
annotator found fluent / creative.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, choice, finish
from connote.collect.project import MediaFolder, Study, example_block, radio, safe_name, write_project
from connote.collect.quality import Question
from connote.core.errors import InputError
from connote.core.jsonio import read_json
from connote.runs.store import results_path
from connote.vmc.studies.evaluation import CRITERIA as EVALUATION_CRITERIA
from connote.vmc.studies.evaluation import YES_NO, attention_item, import_yes_no

NAME = "vmc-synth-check"
CRITERIA = {c: EVALUATION_CRITERIA[c] for c in ("fluency", "creativity")}
QUESTIONS = tuple(Question(c, YES_NO) for c in CRITERIA)

INSTRUCTIONS = (
    "<p>Look at the image and read the metaphor caption a language model wrote for it. Answer two yes/no "
    "questions about the caption.</p><ul>"
    "<li><b>Fluency</b>: the caption reads naturally, is grammatical, and follows the form "
    "\"<i>primary concept</i> is as <i>property</i> as <i>secondary concept</i>\".</li>"
    "<li><b>Creativity</b>: the comparison is creative, not an obvious one.</li></ul>"
    "<p>Some items are attention checks that tell you what to answer; please follow them.</p>"
    + example_block("Worked example",
                    "Image: a clock on a tower.<br>\"The clock is as punctual as a train\": fluency yes, creativity "
                    "yes.<br>\"The clock is as round as a clock\": fluency yes, creativity no (an obvious "
                    "comparison).<br>\"Clock punctual as train is\": fluency no.")
)


def read_table(source: str | Path, images: str | Path | None) -> tuple[list[dict[str, Any]], Path]:
    """The kept rows of a synth run (or its ``metaphors.json``) and their image folder."""
    source = Path(source)
    table = source / "metaphors.json" if source.is_dir() else source
    rows = read_json(table, what="synth table (metaphors.json of `connote vmc synth`)")
    if not isinstance(rows, list):
        raise InputError("expected a JSON list of {id, image, caption} records", path=table)
    if images is None:
        run = results_path(table.parent)
        recorded = read_json(run).get("images") if run.is_file() else None
        if not recorded:
            raise InputError("the synth run records no image folder: give --images", path=source)
        images = recorded
    return rows, Path(images)


def make(source: str | Path, out: str | Path, *, images: str | Path | None = None, per_item: int = 2,
         completion: str | None = None, login: str = "username") -> Path:
    """Write the check study: one item per synthetic caption whose image exists."""
    rows, folder = read_table(source, images)
    study = Study(name=NAME, title="Rate synthetic metaphor captions of images", instructions=INSTRUCTIONS,
                  schemes=[radio(c, d, YES_NO, keys=False) for c, d in CRITERIA.items()],
                  display_fields=[{"key": "image", "type": "image", "label": "Image",
                                   "display_options": {"max_height": 360}},
                                  {"key": "text", "type": "text", "label": "Caption"}],
                  per_item=per_item, options={"images": str(folder.resolve()), "table": str(Path(source).resolve())})
    media = MediaFolder(study)
    seen: set[str] = set()
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or not row.get("caption") or not row.get("image"):
            study.left_out.append(f"record {n}: no image or caption")
            continue
        iid = safe_name(str(row.get("id", n)))
        while iid in seen:
            iid += "_"
        seen.add(iid)
        url = media.admit(folder / str(row["image"]), safe_name(Path(str(row["image"])).stem), what=iid)
        if url is None:
            continue
        study.items.append({"id": iid, "text": str(row["caption"]), "image": url})
        study.sources[iid] = {"image": str(row["image"]), "caption": str(row["caption"]),
                              "source_caption": str(row.get("source_caption") or "")}
    if study.items:
        study.attention.append(attention_item("image", study.items[0]["image"]))
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator answered both questions."""
    return all(choice(answer, c) in YES_NO for c in CRITERIA)


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """Write ``labels.csv``, ``captions.csv`` and ``synth_check.json`` into ``out``."""
    from connote.metrics.statistics import accuracy_interval as wilson

    report, collected = import_yes_no(folder, manifest, out, NAME, CRITERIA, ("image", "caption", "source_caption"))
    shares: dict[str, Any] = {}
    answered = {iid: by for iid, by in collected.by_item.items() if by}
    for c in CRITERIA:
        votes = [choice(a, c) == "yes" for by in answered.values() for a in by.values()]
        unanimous = [all(choice(a, c) == "yes" for a in by.values()) for by in answered.values()]
        k, n = sum(votes), len(votes)
        shares[c] = {"yes_share": round(k / n, 6) if n else None, "yes": k, "judgements": n,
                     "interval": wilson(k, n), "all_annotators_yes_share":
                         round(sum(unanimous) / len(unanimous), 6) if unanimous else None,
                     "captions": len(unanimous)}
    (out / "synth_check.json").write_text(json.dumps(shares, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    report.outputs.append(str(out / "synth_check.json"))
    report.extra["synth_check"] = shares
    return finish(report, collected)
