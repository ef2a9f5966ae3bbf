"""VIST *re-telling* (paper §3): other workers write a story for a storyboard already chosen and ordered
in the storytelling stage, one sentence per photo, at least 15 words. Three workers per storyboard.

Source (``--from``): an official SIS JSON (each distinct photo sequence of its stories becomes one
storyboard: the output of ``connote collect import`` on a storytelling study works) or a JSON list of
``{"album_id", "photo_ids": [5 ids]}``. Photos as for storytelling (``--images``). Import writes the new
stories in the official SIS layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import PLUGIN, MediaFolder, Study, example_block, safe_name, write_project
from connote.collect.vist_storytelling import (
    MIN_WORDS,
    SCHEMA,
    STORY_PHOTOS,
    find_photo,
    load_vist,
    story_scheme,
    write_sis,
)
from connote.errors import InputError, ItemError

NAME = "vist-retelling"

INSTRUCTIONS = (
    f"<p>You will see {STORY_PHOTOS} photos that another person chose from an album and put in story order. "
    f"<b>Write a story</b> for them: <b>one sentence on each card</b>, in the order shown, at least {MIN_WORDS} "
    "words in all. Write about what happens, as if you were sharing the event with friends. If the photos "
    "cannot be told as a story at all, tick the box under the storyboard and press Next.</p>"
    "<p>Some items are attention checks that tell you what to do; please follow them.</p>"
    + example_block("Worked example",
                    "Storyboard: a birthday cake; children around a table; a boy blowing out candles; presents "
                    "being opened; everyone asleep on the sofa.<br><i>Today was Sam's seventh birthday. All his "
                    "friends came over for the party. He blew out every candle in one breath. Then came the best "
                    "part, the presents. By evening everyone was worn out.</i>")
)


def _storyboards(source: Path) -> tuple[list[tuple[str, list[str]]], dict[str, Any]]:
    raw = json.loads(source.read_text(encoding="utf-8"))
    if isinstance(raw, list):
        boards = []
        for n, entry in enumerate(raw):
            if not isinstance(entry, dict) or not isinstance(entry.get("photo_ids"), list):
                raise InputError(f"entry {n}: expected {{\"album_id\", \"photo_ids\": [...]}}", path=source)
            boards.append((str(entry.get("album_id", "")), [str(p) for p in entry["photo_ids"]]))
        return boards, {"images": {}, "albums": {}}
    vist, meta = load_vist(source)
    seen: dict[tuple[str, ...], str] = {}
    for story in vist.stories:
        seen.setdefault(story.photo_ids, story.album_id)
    return [(aid, list(ids)) for ids, aid in seen.items()], meta


def make(source: str | Path, out: str | Path, *, images: str | Path | None = None, per_item: int = 3,
         completion: str | None = None, login: str = "username") -> Path:
    """Write the re-telling study: one item per storyboard whose photos are all available."""
    source = Path(source)
    folder = Path(images) if images else source.parent / "images"
    boards, meta = _storyboards(source)
    study = Study(name=NAME, title="Write a story for five photos in order", instructions=INSTRUCTIONS,
                  schemes=[story_scheme("fixed", "Your story: one sentence for each photo, in this order", True)],
                  display_fields=[{"key": "text", "type": "text", "label": "Storyboard"}],
                  per_item=per_item, plugins=[PLUGIN], options={"source": str(source.resolve())})
    media = MediaFolder(study)
    for n, (aid, ids) in enumerate(boards, start=1):
        if len(ids) != STORY_PHOTOS:
            study.left_out.append(f"storyboard {n} (album {aid}): {len(ids)} photos, expected {STORY_PHOTOS}")
            continue
        paths = [find_photo(folder, pid) for pid in ids]
        missing = [pid for pid, p in zip(ids, paths) if p is None]
        if missing:
            study.left_out.append(f"storyboard {n} (album {aid}): no image file for photo(s) {', '.join(missing)} "
                                  f"in {folder}")
            continue
        iid = f"board-{n}-{safe_name(aid, 40)}"
        try:
            photos = [{"id": pid, "url": media.add(p, f"{aid}-{pid}")} for pid, p in zip(ids, paths)]
        except ItemError as exc:
            study.left_out.append(f"storyboard {n} (album {aid}): {exc}")
            continue
        study.items.append({"id": iid, "text": f"Album \"{(meta['albums'].get(aid) or {}).get('title') or aid}\": "
                                               f"write one sentence per photo", "photos": photos})
        study.sources[iid] = {"album_id": aid, "photos": ids, "album": meta["albums"].get(aid, {"id": aid}),
                              "images": [meta["images"][p] for p in ids if p in meta["images"]]}
    if study.items:
        study.attention.append({"id": "attention-1", "photos": study.items[0]["photos"],
                                "expected_answer": {SCHEMA: "skip"},
                                "text": "ATTENTION CHECK: do not write a story here. Tick the box under the "
                                        "storyboard and press Next."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    order = text(answer, SCHEMA, "order")
    if order == "skip":
        return True
    sentences = [text(answer, SCHEMA, f"sentence_{k}") for k in range(1, STORY_PHOTOS + 1)]
    return bool(order) and all(sentences) and sum(len(s.split()) for s in sentences) >= MIN_WORDS


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The new stories as an official SIS JSON file (storylets in the storyboard's order)."""
    from connote.vist.data import read_official

    collected = collect(folder, manifest, is_complete)
    stories, skipped = [], {}
    for iid in manifest["items"]:
        src = manifest["sources"][iid]
        for worker, answer in sorted(collected.by_item[iid].items()):
            if text(answer, SCHEMA, "order") == "skip":
                skipped.setdefault(iid, []).append(worker)
                continue
            stories.append({"item": iid, "album_id": src["album_id"], "worker": worker, "photos": src["photos"],
                            "sentences": [text(answer, SCHEMA, f"sentence_{k}")
                                          for k in range(1, STORY_PHOTOS + 1)]})
    write_sis(out, stories, manifest["sources"], manifest["options"]["source"])
    read_official(out)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={"stories": len(stories), "skipped": skipped})
    return finish(report, collected)
