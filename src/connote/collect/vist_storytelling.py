"""VIST *storytelling* (paper §3, Figure 3): an album in time order; the worker picks five photos,
puts them in order on a storyboard and writes one sentence per photo (at least 15 words in all), or
skips an album that is not storyable. Two workers per album, as in the paper.

Source: an official VIST JSON (``train.story-in-sequence.json`` or any file with ``images`` and
``albums``); photos are files named ``<photo id>.<ext>`` in ``--images`` (default: ``images/`` next to
the JSON). Import writes the stories in the official SIS layout (storylets in the worker's photo order)
that ``connote vist`` reads; skipped albums are listed.

Potato has no scheme for "choose k of the item's photos, order them, write one sentence each"; connote's
plugin ``connote-collect`` adds it (``connote.collect.plugin``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import PLUGIN, MediaFolder, Study, example_block, write_project
from connote.errors import InputError, ItemError

NAME = "vist-storytelling"
SCHEMA = "story"
STORY_PHOTOS = 5
MIN_WORDS = 15
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".webp")
SIS_TIER = "story-in-sequence"

INSTRUCTIONS = (
    "<p>You will see a photo album, its photos in the order they were taken. <b>Tell a story</b> about it: "
    f"click <b>{STORY_PHOTOS} photos</b> to put them on the storyboard, arrange them in the order of your "
    "story with the arrows, and write <b>one sentence on each card</b>. Together the sentences must make a "
    f"story of at least {MIN_WORDS} words. Write about what happens, as if you were sharing the event with "
    "friends; you need not describe everything in a photo. If an album cannot be told as a story (for "
    "example, a collection of coins), tick <i>This album is not storyable</i> and press Next.</p>"
    "<p>Some albums are attention checks that tell you what to do; please follow them.</p>"
    + example_block("Worked example",
                    "An album of a beach day with 14 photos. Chosen and ordered: the car packed with towels; "
                    "the family on the sand; the kids building a sandcastle; a wave washing the castle away; "
                    "the sunset.<br><i>We packed the car early for our trip to the beach. The whole family "
                    "found a spot near the water. The kids spent hours on their sandcastle. Then a big wave "
                    "took it all away! We stayed to watch the sun go down.</i> (49 words)")
)


def find_photo(folder: Path, photo_id: str) -> Path | None:
    """``<folder>/<photo id>.<ext>``; ids with path characters never match a file outside ``folder``."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", photo_id) or photo_id.startswith("."):
        return None
    for ext in IMAGE_EXTENSIONS:
        path = folder / f"{photo_id}{ext}"
        if path.is_file():
            return path
    return None


def load_vist(source: Path) -> tuple[Any, dict[str, Any]]:
    """The parsed VIST file (connote's reader) and its raw ``images``/``albums`` entries by id."""
    from connote.vist.data import read_official

    vist = read_official(source)
    raw = json.loads(source.read_text(encoding="utf-8"))
    images = {str(i.get("id")): i for i in raw.get("images") or [] if isinstance(i, dict)}
    albums = {str(a.get("id")): a for a in raw.get("albums") or [] if isinstance(a, dict)}
    return vist, {"images": images, "albums": albums}


def story_scheme(mode: str, description: str, allow_skip: bool) -> dict[str, Any]:
    return {"annotation_type": "connote_story", "name": SCHEMA, "description": description, "mode": mode,
            "photos": STORY_PHOTOS, "min_words": MIN_WORDS, "allow_skip": allow_skip}


def make(source: str | Path, out: str | Path, *, images: str | Path | None = None, albums: int | None = None,
         per_item: int = 2, completion: str | None = None, login: str = "username") -> Path:
    """Write the storytelling study: one item per album with at least five available photos."""
    source = Path(source)
    folder = Path(images) if images else source.parent / "images"
    vist, raw = load_vist(source)
    study = Study(name=NAME, title="Tell a story with five photos of an album", instructions=INSTRUCTIONS,
                  schemes=[story_scheme("choose", "Your story: choose 5 photos, order them, one sentence each",
                                        True)],
                  display_fields=[{"key": "text", "type": "text", "label": "Album"}],
                  per_item=per_item, plugins=[PLUGIN], options={"source": str(source.resolve())})
    media = MediaFolder(study)
    for aid, album in vist.albums.items():
        if albums is not None and len(study.items) >= albums:
            break
        photos = []
        for pid in album.photo_ids:
            path = find_photo(folder, pid)
            if path is None:
                study.left_out.append(f"album {aid}: photo {pid}: no image file {folder}/{pid}.*")
            else:
                try:
                    photos.append({"id": pid, "url": media.add(path, f"{aid}-{pid}")})
                except ItemError as exc:
                    study.left_out.append(f"album {aid}: photo {pid}: {exc}")
        if len(photos) < STORY_PHOTOS:
            study.left_out.append(f"album {aid}: only {len(photos)} of its photos found; a story needs "
                                  f"{STORY_PHOTOS}")
            continue
        title = album.title or aid
        iid = f"album-{aid}"
        study.items.append({"id": iid, "text": f"Album \"{title}\": {len(photos)} photos in the order they were "
                                               f"taken", "photos": photos})
        study.sources[iid] = {"album_id": aid, "photos": [p["id"] for p in photos],
                              "album": raw["albums"].get(aid, {"id": aid}),
                              "images": [raw["images"][p["id"]] for p in photos if p["id"] in raw["images"]]}
    if not study.items and not study.left_out:
        raise InputError("no albums in the file", path=source)
    if study.items:
        first = study.items[0]
        study.attention.append({"id": "attention-1", "photos": first["photos"], "expected_answer": {SCHEMA: "skip"},
                                "text": "ATTENTION CHECK: do not write a story for this album. Tick \"This album "
                                        "is not storyable\" and press Next."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    order = text(answer, SCHEMA, "order")
    if order == "skip":
        return True
    ids = [p for p in order.split(",") if p]
    sentences = [text(answer, SCHEMA, f"sentence_{k}") for k in range(1, len(ids) + 1)]
    return len(ids) == STORY_PHOTOS and all(sentences) and sum(len(s.split()) for s in sentences) >= MIN_WORDS


def tokenize(sentence: str) -> str:
    """VIST's ``text`` field style: lower case, punctuation split off (``original_text`` keeps the words)."""
    return " ".join(re.findall(r"[\w']+|[^\w\s]", sentence.lower()))


def write_sis(out: Path, stories: list[dict[str, Any]], sources: dict[str, Any], source_file: str) -> int:
    """Write stories (``album_id, worker, photos, sentences``) as an official SIS file; returns storylets."""
    images: dict[str, Any] = {}
    albums: dict[str, Any] = {}
    annotations = []
    for n, story in enumerate(stories, start=1):
        src = sources[story["item"]]
        albums.setdefault(story["album_id"], src["album"])
        for img in src["images"]:
            images.setdefault(str(img.get("id")), img)
        story_id = f"collected-{n}"
        for k, (pid, sentence) in enumerate(zip(story["photos"], story["sentences"])):
            annotations.append([{
                "album_id": story["album_id"], "photo_flickr_id": pid, "story_id": story_id,
                "storylet_id": f"{story_id}-{k + 1}", "text": tokenize(sentence), "original_text": sentence,
                "tier": SIS_TIER, "worker_arranged_photo_order": k, "worker_id": story["worker"], "setting": "",
            }])
    doc = {"info": {"description": "stories collected with connote collect", "source": Path(source_file).name},
           "type": SIS_TIER, "images": [images[k] for k in sorted(images)],
           "albums": [albums[k] for k in sorted(albums)], "annotations": annotations}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(annotations)


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The stories as an official SIS JSON file; skipped albums are listed (two skips discard an album)."""
    from connote.vist.data import read_official

    collected = collect(folder, manifest, is_complete)
    stories, skipped = [], {}
    for iid in manifest["items"]:
        src = manifest["sources"][iid]
        for worker, answer in sorted(collected.by_item[iid].items()):
            order = text(answer, SCHEMA, "order")
            if order == "skip":
                skipped.setdefault(src["album_id"], []).append(worker)
                continue
            ids = order.split(",")
            stories.append({"item": iid, "album_id": src["album_id"], "worker": worker, "photos": ids,
                            "sentences": [text(answer, SCHEMA, f"sentence_{k}") for k in range(1, len(ids) + 1)]})
    write_sis(out, stories, manifest["sources"], manifest["options"]["source"])
    read_official(out)  # connote's own reader must take what we wrote
    report = ImportReport(study=NAME, outputs=[str(out)], extra={
        "stories": len(stories), "skipped_albums": skipped,
        # the paper discards an album that two workers skipped
        "discarded_albums": sorted(a for a, who in skipped.items() if len(who) >= 2)})
    return finish(report, collected)
