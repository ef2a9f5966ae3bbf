"""VIST *descriptions in isolation* (DII, paper §3): one caption per photo, seen on its own, with the MS COCO
captioning instructions the paper reused. Three workers per photo.

Source (``--from``): a folder of photos; the photo id is the file name without extension and the album id
is the folder's name. Import writes the official DII layout (``descriptions-in-isolation``) that
``connote vist`` reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import MediaFolder, Study, example_block, safe_name, textbox, write_project
from connote.collect.vist_storytelling import IMAGE_EXTENSIONS, tokenize
from connote.errors import InputError, ItemError

NAME = "vist-descriptions"
SCHEMA = "description"
MIN_CHARS = 25
DII_TIER = "descriptions-in-isolation"
CHECK_TEXT = "I am paying attention to this task"

INSTRUCTIONS = (
    "<p>Describe the photo in <b>one sentence</b> (the MS COCO captioning instructions):</p><ul>"
    "<li>Describe all the important parts of the scene.</li>"
    "<li>Do not start the sentence with \"There is\".</li>"
    "<li>Do not describe unimportant details.</li>"
    "<li>Do not describe things that might have happened in the future or past.</li>"
    "<li>Do not describe what a person might say.</li>"
    "<li>Do not give people proper names.</li>"
    "<li>The sentence should contain at least 8 words.</li></ul>"
    "<p>Some items are attention checks that tell you what to type; please follow them.</p>"
    + example_block("Worked example", "A photo of a street market.<br><i>A woman in a red coat buys apples from a "
                                      "fruit stall on a busy street.</i>")
)


def make(source: str | Path, out: str | Path, *, per_item: int = 3, completion: str | None = None,
         login: str = "username") -> Path:
    """Write the DII study: one item per photo file in ``source``."""
    source = Path(source)
    if not source.is_dir():
        raise InputError("expected a folder of photos", path=source)
    study = Study(name=NAME, title="Describe the photo in one sentence", instructions=INSTRUCTIONS,
                  schemes=[textbox(SCHEMA, "Your one-sentence description of the photo", min_chars=MIN_CHARS)],
                  display_fields=[{"key": "image", "type": "image", "label": "Photo",
                                   "display_options": {"max_height": 400, "resizable": False}}],
                  per_item=per_item, options={"source": str(source.resolve()), "album_id": safe_name(source.name)})
    media = MediaFolder(study)
    for path in sorted(source.iterdir()):
        if path.suffix.lower() not in IMAGE_EXTENSIONS:
            continue
        if not path.is_file() or path.stat().st_size == 0:
            study.left_out.append(f"{path.name}: not a readable image file")
            continue
        photo_id = safe_name(path.stem)
        iid = f"photo-{photo_id}"
        if iid in study.sources:
            study.left_out.append(f"{path.name}: another file already has photo id {photo_id!r}")
            continue
        try:
            url = media.add(path, photo_id)
        except ItemError as exc:
            study.left_out.append(f"{path.name}: {exc}")
            continue
        study.items.append({"id": iid, "text": "Describe this photo.", "image": url})
        study.sources[iid] = {"photo_id": photo_id, "file": path.name}
    if study.items:
        study.attention.append({"id": "attention-1", "image": study.items[0]["image"],
                                "expected_answer": {SCHEMA: CHECK_TEXT},
                                "text": f"ATTENTION CHECK: instead of a description, type exactly: {CHECK_TEXT}"})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return len(text(answer, SCHEMA)) >= MIN_CHARS


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The descriptions as an official DII JSON file (one annotation per photo and worker)."""
    from connote.vist.data import read_official

    collected = collect(folder, manifest, is_complete)
    album = manifest["options"]["album_id"]
    photos = [manifest["sources"][iid]["photo_id"] for iid in manifest["items"]]
    annotations = []
    for order, iid in enumerate(manifest["items"]):
        pid = manifest["sources"][iid]["photo_id"]
        for worker, answer in sorted(collected.by_item[iid].items()):
            sentence = text(answer, SCHEMA)
            annotations.append([{"album_id": album, "photo_flickr_id": pid, "photo_order_in_story": order,
                                 "story_id": f"dii-{pid}", "storylet_id": f"dii-{pid}-{worker}",
                                 "text": tokenize(sentence), "original_text": sentence, "tier": DII_TIER,
                                 "worker_id": worker, "setting": ""}])
    doc = {"info": {"description": "descriptions collected with connote collect"}, "type": DII_TIER,
           "images": [{"id": p, "album_id": album} for p in photos],
           "albums": [{"id": album, "title": album, "photos": len(photos)}], "annotations": annotations}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    read_official(out)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={"descriptions": len(annotations)})
    return finish(report, collected)
