"""CV-Probes *validation*: two images (an SG and a PG one) and one caption; does it apply to both,
only one of them, or neither? Three annotators per triplet (paper §3, "Human validation").

Triplets come from a probe manifest. An SG image is paired with the PG image whose SG caption has the
same verb (the dataset's design: the PG image looks alike but the SG verb does not apply), then the
remaining SG and PG images are paired in manifest order; an image left without a partner is named and
left out. Every caption of the pair's two images makes one triplet. Its presumed answer counts the images
the caption applies to: from the manifest's ``label`` where the caption is on that image, otherwise a PG
caption (what is visible) is presumed to apply to the look-alike image and an SG caption is not.

The paper's rule: a triplet where at least two annotators chose another answer than the presumed one is
sent back for caption repair (``needs_repair`` = 1).
"""

from __future__ import annotations

import csv
import hashlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, choice, collect, finish, write_labels
from connote.collect.project import MediaFolder, Study, example_block, radio, write_project
from connote.collect.quality import Question
from connote.core.errors import ItemError
from connote.cv_probes.studies.votes import probe_items

NAME = "probes-validation"
SCHEMA = "applies"
LABELS = ("both", "only one", "neither")
#: The answer counts the images the caption applies to (2, 1, 0): an ordinal scale for alpha.
QUESTIONS = (Question(SCHEMA, ("neither", "only one", "both"), level="ordinal"),)
REPAIR_AT = 2  # annotators disagreeing with the presumed answer (the paper's rule)
COLUMNS = ["triplet_id", "caption", "caption_kind", "verb", "image_1", "image_2", "sg_image", "pg_image",
           "source_item", "presumed", "answers", "raters", "disagree", "needs_repair"]

INSTRUCTIONS = (
    "<p>You will see <b>two images</b> and <b>one caption</b>. Decide whether the caption applies to "
    "<b>both</b> images, to <b>only one</b> of them, or to <b>neither</b>. A caption applies to an image when "
    "a person looking at the image would agree that it describes what is happening there, using what is "
    "visible and ordinary knowledge of people and the world. Keys 1&ndash;3 select the answers.</p>"
    "<p>Some items are attention checks that tell you which answer to choose; please follow them.</p>"
    + example_block("Worked example",
                    "Image 1: a woman in worn clothes sits on a pavement holding out a paper cup to passers-by. "
                    "Image 2: a woman sits on a park bench drinking from a paper cup.<br>"
                    "\"woman begs for money\" &rarr; <b>only one</b>. \"woman sits holding a cup\" &rarr; "
                    "<b>both</b>. \"woman rides a horse\" &rarr; <b>neither</b>.")
)


def _pairs(items: list[Any], left_out: list[str]) -> list[tuple[str, str]]:
    """(SG image, PG image) pairs: same SG verb first, then manifest order."""
    kind: dict[str, str] = {}
    sg_verb: dict[str, str] = {}
    for it in items:
        kind.setdefault(it.image, it.image_kind)
        if it.caption_kind == "SG" and it.verb:
            sg_verb.setdefault(it.image, it.verb.lower())
    sg = [im for im, k in kind.items() if k == "SG"]
    pg = [im for im, k in kind.items() if k == "PG"]
    pairs = []
    for a in list(sg):
        match = next((b for b in pg if sg_verb.get(b) and sg_verb.get(b) == sg_verb.get(a)), None)
        if match:
            pairs.append((a, match))
            sg.remove(a)
            pg.remove(match)
    pairs += list(zip(sg, pg))
    for im in sg[len(pg):] + pg[len(sg):]:
        left_out.append(f"{Path(im).name}: {kind[im]} image without a partner image for a triplet")
    return pairs


def _presumed(applies: list[bool]) -> str:
    return {2: "both", 1: "only one", 0: "neither"}[sum(applies)]


def make(source: str | Path, out: str | Path, *, per_item: int = 3, captions: str = "simplified",
         completion: str | None = None, login: str = "username") -> Path:
    """Write the validation study: one item per (caption, SG image, PG image) triplet."""
    source = Path(source)
    study = Study(name=NAME, title="Does the caption apply to both images, one, or neither?",
                  instructions=INSTRUCTIONS,
                  schemes=[radio(SCHEMA, "Does the caption apply to both images, only one of them, or neither?",
                                 LABELS)],
                  display_fields=[{"key": "images", "type": "gallery", "label": "The two images",
                                   "display_options": {"layout": "horizontal", "thumbnail_size": 300, "max_height": 480,
                                                       "show_captions": True, "resizable": False}},
                                  {"key": "text", "type": "text", "label": "Caption"}],
                  per_item=per_item, options={"captions": captions, "source": str(source.resolve())})
    media = MediaFolder(study)
    items = probe_items(source, captions, media, study.left_out)
    by_image: dict[str, list[Any]] = defaultdict(list)
    for it in items:
        by_image[it.image].append(it)
    for n, (sg, pg) in enumerate(_pairs(items, study.left_out), start=1):
        seen: set[str] = set()
        for it in by_image[sg] + by_image[pg]:
            text = it.text(captions)
            if text in seen:
                continue
            seen.add(text)
            applies = []
            for image in (sg, pg):
                on = [x for x in by_image[image] if x.text(captions) == text]
                applies.append(bool(on[0].label) if on else it.caption_kind == "PG")
            # which image is shown first is fixed per triplet but not always the SG one
            tid = f"t{n:03d}-{it.item_id}"
            flip = int(hashlib.sha1(tid.encode()).hexdigest(), 16) % 2 == 1
            shown = [pg, sg] if flip else [sg, pg]
            try:
                shown_media = [{"url": media.add(Path(im)), "caption": f"Image {k}"}
                               for k, im in enumerate(shown, start=1)]
            except ItemError as exc:
                study.left_out.append(f"{tid}: {exc}")
                continue
            study.items.append({"id": tid, "text": text, "images": shown_media})
            study.sources[tid] = {"caption": text, "caption_kind": it.caption_kind, "verb": it.verb or "",
                                  "sg_image": sg, "pg_image": pg, "image_1": shown[0], "image_2": shown[1],
                                  "source_item": it.item_id, "presumed": _presumed(applies)}
    if study.items:
        pair = study.items[0]["images"]
        study.attention.append({"id": "attention-1", "images": pair, "expected_answer": {SCHEMA: "neither"},
                                "text": "ATTENTION CHECK: whatever the images show, answer \"neither\" here."})
        study.attention.append({"id": "attention-2", "images": pair, "expected_answer": {SCHEMA: "both"},
                                "text": "ATTENTION CHECK: whatever the images show, answer \"both\" here."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return choice(answer, SCHEMA) in LABELS


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """One row per triplet with the answers and the caption-repair flag (+ ``<out>.labels.csv``)."""
    collected = collect(folder, manifest, is_complete)
    per_item = int(manifest["per_item"])
    rows, labels = [], []
    repair = 0
    for tid in manifest["items"]:
        src = manifest["sources"][tid]
        by = sorted(collected.by_item.get(tid, {}).items())
        answers = [choice(a, SCHEMA) or "" for _, a in by]
        disagree = sum(1 for a in answers if a != src["presumed"])
        # the rule needs every annotator's answer unless two already disagree
        decided = len(answers) >= per_item or disagree >= REPAIR_AT
        flag = (1 if disagree >= REPAIR_AT else 0) if decided else ""
        repair += flag == 1
        rows.append({**{k: src[k] for k in ("caption", "caption_kind", "verb", "sg_image", "pg_image",
                                             "image_1", "image_2", "source_item", "presumed")},
                     "triplet_id": tid, "answers": ";".join(answers), "raters": ";".join(r for r, _ in by),
                     "disagree": disagree, "needs_repair": flag})
        labels += [(tid, rater, SCHEMA, choice(a, SCHEMA) or "") for rater, a in by]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    labels_path = out.with_name(out.stem + ".labels.csv")
    report = ImportReport(study=NAME, outputs=[str(out), str(labels_path)], extra={"needs_repair": repair})
    report.agreement = write_labels(labels_path, labels)
    return finish(report, collected)
