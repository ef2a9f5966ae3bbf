"""CV-Probes *votes*: one image, one caption, "match" or "no match", three annotators per pair.

The answers become the manifest's ``human_votes`` column ("1;1;0", 1 = match, annotators in name
order): the Human row of the paper's Table 4 and the human side of Table 5's correlations.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, choice, collect, finish, write_labels
from connote.collect.project import MediaFolder, Study, example_block, radio, write_project
from connote.collect.quality import Question
from connote.core.errors import ItemError
from connote.cv_probes.manifest import read_probe_manifest
from connote.media.images import is_url

NAME = "probes-votes"
SCHEMA = "match"
LABELS = ("match", "no match")
#: The categorical question alpha, gold items and aggregation read.
QUESTIONS = (Question(SCHEMA, LABELS),)

INSTRUCTIONS = (
    "<p>You will see one photo and one short caption. Decide whether the caption <b>matches</b> the photo: "
    "would a person looking at this photo agree that the caption describes what is happening in it? "
    "Some captions describe what people are visibly doing (\"a woman sits on a bench\"); others describe "
    "what they are doing in a social sense (\"a woman begs for money\"). Judge the caption as a whole, using "
    "what you can see and what you know about the world. There are no trick questions; answer with your "
    "first careful judgement. Keys 1 and 2 select the answers.</p>"
    "<p>Some items are attention checks that tell you which answer to choose; please follow them.</p>"
    + example_block("Worked example",
                    "Photo: a woman in ragged clothes sits on a pavement holding out a paper cup to people "
                    "walking past.<br>Caption \"woman begs for money\" &rarr; <b>match</b>.<br>Caption \"woman "
                    "drinks coffee\" &rarr; <b>no match</b> (she holds the cup out; she is not drinking).")
)


def read_rows(path: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The manifest's header and raw rows by ``item_id``, as written (to write them back unchanged)."""
    from connote.core.jsonio import read_jsonl, read_text, text_lines

    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):  # strict: the bad line and column are named
        rows = [r for _, r in read_jsonl(path, what="manifest") if isinstance(r, dict)]
        header: list[str] = []
        for r in rows:
            header += [k for k in r if k not in header]
    else:
        reader = csv.DictReader(text_lines(read_text(path, what="manifest"), keepends=True))
        rows = [r for r in reader if any(v not in (None, "") for v in r.values())]
        header = list(reader.fieldnames or [])
    return header, {str(r.get("item_id", "")).strip(): r for r in rows}


def probe_items(source: Path, captions: str, media: MediaFolder, left_out: list[str]) -> list[Any]:
    """Readable manifest items whose image exists; the others are named in ``left_out``."""
    kept = []
    for item in read_probe_manifest(source, captions=captions):
        if item.error:
            left_out.append(f"{item.item_id}: {item.error}")
        elif is_url(item.image):
            left_out.append(f"{item.item_id}: image is a URL ({item.image}); studies serve local files only")
        elif not Path(item.image).is_file():
            left_out.append(f"{item.item_id}: image not found: {item.image}")
        else:
            try:
                media.add(Path(item.image))
            except ItemError as exc:
                left_out.append(f"{item.item_id}: {exc}")
                continue
            kept.append(item)
    return kept


def make(source: str | Path, out: str | Path, *, per_item: int = 3, captions: str = "simplified",
         completion: str | None = None, login: str = "username") -> Path:
    """Write the votes study for every readable pair of the manifest ``source``."""
    source = Path(source)
    study = Study(name=NAME, title="Does the caption match the photo?", instructions=INSTRUCTIONS,
                  schemes=[radio(SCHEMA, "Does the caption match the photo?", LABELS)],
                  display_fields=[{"key": "image", "type": "image", "label": "Photo",
                                   "display_options": {"max_height": 380, "resizable": False}},
                                  {"key": "text", "type": "text", "label": "Caption"}],
                  per_item=per_item, options={"captions": captions, "source": str(source.resolve())})
    media = MediaFolder(study)
    header, raw = read_rows(source)
    study.options["columns"] = header
    for item in probe_items(source, captions, media, study.left_out):
        study.items.append({"id": item.item_id, "text": item.text(captions), "image": media.add(Path(item.image))})
        study.sources[item.item_id] = {"row": raw.get(item.item_id, {}), "image": item.image}
    if study.items:
        picture = study.items[0]["image"]
        for n, want in enumerate(reversed(LABELS), start=1):
            study.attention.append({
                "id": f"attention-{n}", "image": picture, "expected_answer": {SCHEMA: want},
                "text": f"ATTENTION CHECK: whatever the photo shows, answer \"{want}\" for this item."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return choice(answer, SCHEMA) in LABELS


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """Write the manifest with ``human_votes`` filled (+ ``<out>.labels.csv`` for ``connote agreement``)."""
    collected = collect(folder, manifest, is_complete)
    header = list(manifest["options"].get("columns") or [])
    for col in ("item_id", "image", "human_votes"):
        if col not in header:
            header.append(col)
    rows, labels = [], []
    gold = list((manifest.get("quality") or {}).get("gold") or {})  # known answers, not voted on: rows kept
    for iid in [*manifest["items"], *gold]:
        src = manifest["sources"][iid]
        row = {k: ("" if v is None else v) for k, v in dict(src["row"]).items()}
        row["item_id"] = iid
        image = Path(src["image"])
        # keep the image readable from the new manifest's folder
        row["image"] = os.path.relpath(image, out.resolve().parent) if image.is_absolute() else str(image)
        by = collected.by_item.get(iid, {})
        votes = [1 if choice(a, SCHEMA) == "match" else 0 for _, a in sorted(by.items())]
        if votes:
            row["human_votes"] = ";".join(map(str, votes))
        for rater, a in by.items():
            labels.append((iid, rater, SCHEMA, "1" if choice(a, SCHEMA) == "match" else "0"))
        rows.append(row)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".jsonl":
        from connote.runs.store import write_jsonl

        write_jsonl(out, ({**row, "human_votes": [int(v) for v in row["human_votes"].split(";")]
                           if row.get("human_votes") else None} for row in rows))
    else:
        with open(out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    labels_path = out.with_name(out.stem + ".labels.csv")
    report = ImportReport(study=NAME, outputs=[str(out), str(labels_path)])
    report.agreement = write_labels(labels_path, labels)
    read_probe_manifest(out)  # what we wrote must be readable by connote's own reader
    return finish(report, collected)

