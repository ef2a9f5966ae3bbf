"""VIST *descriptions in isolation* (DII, paper §3): one caption per photo, seen on its own, with the MS COCO
captioning instructions the paper reused. Three workers per photo.

Source (``--data``): the first stage's SIS file(s), as the paper ran it ("for the photo sequences with
stories from a majority of workers in the first task"): per album, the photo sequence with stories from
more than half of the album's story writers (Figure 2's "preferred photo sequence"; give the re-telling
import, which holds both stages' stories, or several SIS files), one item per photo of those sequences,
photos from ``--images`` (default: ``images/`` next to the first JSON). Or a folder of photos; the photo
id is then the file name without extension and the album id the folder's name. Import writes the official
DII layout (``descriptions-in-isolation``) that ``connote vist`` reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import MediaFolder, Study, example_block, safe_name, textbox, write_project
from connote.core.errors import InputError
from connote.vist.studies.storytelling import IMAGE_EXTENSIONS, find_photo, load_vist, tokenize

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


def majority_sequences(sources: list[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per album of the SIS files ``sources`` (in their order), the sequence with stories from a majority
    of the album's workers: ``{album_id, photos, album, images}`` (the raw ``albums`` entry and the album's
    ``images`` entries); and
    why the other albums have none. A story found in several files (same album, worker, photos and text)
    counts once, so the storytelling import and the re-telling import can be given together."""
    from connote.vist.studies.retelling import preferred

    stories: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    raw_albums: dict[str, Any] = {}
    raw_images: dict[str, Any] = {}
    for source in sources:
        vist, raw = load_vist(source)
        for story in vist.stories:
            worker = story.storylets[0].worker_id or f"{source.name}:{story.id}"
            key = (worker, story.photo_ids, story.text)
            stories.setdefault(story.album_id, {}).setdefault(key, {"worker": worker, "photos": story.photo_ids})
        for aid, album in raw["albums"].items():
            raw_albums.setdefault(aid, album)
        for pid, image in raw["images"].items():
            raw_images.setdefault(pid, image)
    chosen, left_out = [], []
    for aid, by_key in stories.items():
        best, counts = preferred(list(by_key.values()))
        if best is None:
            workers = len({s["worker"] for s in by_key.values()})
            left_out.append(f"album {aid}: no photo sequence has stories from a majority of its {workers} "
                            f"worker(s) (workers per sequence: {', '.join(str(n) for n in counts.values())})")
            continue
        album_images = [i for i in raw_images.values() if str(i.get("album_id")) == aid]
        chosen.append({"album_id": aid, "photos": list(best), "album": raw_albums.get(aid, {"id": aid}),
                       "images": album_images or [raw_images[p] for p in best if p in raw_images]})
    return chosen, left_out


def make(source: str | Path | list[str | Path], out: str | Path, *, images: str | Path | None = None,
         per_item: int = 3, completion: str | None = None, login: str = "username") -> Path:
    """Write the DII study: one item per photo of the first stage's majority sequences, or per photo file in
    a folder ``source``."""
    sources = [Path(p) for p in (source if isinstance(source, list) else [source])]
    if len(sources) == 1 and sources[0].is_dir():
        return _make_from_folder(sources[0], out, per_item=per_item, completion=completion, login=login)
    for path in sources:
        if not path.is_file():
            raise InputError("expected an SIS JSON file (a storytelling or re-telling import) or a folder of "
                             "photos", path=path)
    folder = Path(images) if images else sources[0].parent / "images"
    sequences, left_out = majority_sequences(sources)
    study = _study(per_item, {"source": str(sources[0].resolve()), "sources": [str(p.resolve()) for p in sources]})
    study.left_out.extend(left_out)
    media = MediaFolder(study)
    study.options["albums"] = {seq["album_id"]: {"album": seq["album"], "images": seq["images"]} for seq in sequences}
    for seq in sequences:
        for order, pid in enumerate(seq["photos"]):
            path = find_photo(folder, pid)
            iid = f"photo-{safe_name(pid)}"
            if path is None:
                study.left_out.append(f"album {seq['album_id']}: photo {pid}: no image file {folder}/{pid}.*")
                continue
            if iid in study.sources:
                continue  # the same photo in another album's sequence: described once
            url = media.admit(path, safe_name(pid), what=f"album {seq['album_id']}: photo {pid}")
            if url is None:
                continue
            study.items.append({"id": iid, "text": "Describe this photo.", "image": url})
            study.sources[iid] = {"photo_id": pid, "album_id": seq["album_id"], "order": order}
    return _finish(study, out, completion, login)


def _study(per_item: int, options: dict[str, Any]) -> Study:
    return Study(name=NAME, title="Describe the photo in one sentence", instructions=INSTRUCTIONS,
                 schemes=[textbox(SCHEMA, "Your one-sentence description of the photo", min_chars=MIN_CHARS)],
                 display_fields=[{"key": "image", "type": "image", "label": "Photo",
                                  "display_options": {"max_height": 400, "resizable": False}}],
                 per_item=per_item, options=options)


def _finish(study: Study, out: str | Path, completion: str | None, login: str) -> Path:
    if study.items:
        study.attention.append({"id": "attention-1", "image": study.items[0]["image"],
                                "expected_answer": {SCHEMA: CHECK_TEXT},
                                "text": f"ATTENTION CHECK: instead of a description, type exactly: {CHECK_TEXT}"})
    return write_project(study, out, completion=completion, login=login)


def _make_from_folder(source: Path, out: str | Path, *, per_item: int, completion: str | None,
                      login: str) -> Path:
    """One item per photo file in the folder ``source``; the album id is the folder's name."""
    study = _study(per_item, {"source": str(source.resolve()), "album_id": safe_name(source.name)})
    media = MediaFolder(study)
    for path in sorted(source.iterdir()):
        if path.suffix.lower() not in IMAGE_EXTENSIONS:
            continue
        if not path.is_file() or path.stat().st_size == 0:
            study.left_out.append(f"{path.name}: not a readable image file")
            continue
        photo_id = safe_name(path.stem)
        media.add_item({"id": f"photo-{photo_id}", "text": "Describe this photo."},
                       {"photo_id": photo_id, "file": path.name}, path, media="image", what=path.name, hint=photo_id)
    return _finish(study, out, completion, login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return len(text(answer, SCHEMA)) >= MIN_CHARS


def album_tables(manifest: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``images`` and ``albums`` entries (by id) of the albums a study made from SIS files describes."""
    images: dict[str, Any] = {}
    albums: dict[str, Any] = {}
    for aid, tables in sorted((manifest["options"].get("albums") or {}).items()):
        albums[aid] = tables["album"]
        for image in tables["images"]:
            images.setdefault(str(image.get("id")), image)
    return images, albums


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The descriptions as an official DII JSON file (one annotation per photo and worker)."""
    from connote.vist.data import read_official

    collected = collect(folder, manifest, is_complete)
    sources = manifest["sources"]
    folder_album = manifest["options"].get("album_id")
    images, albums = album_tables(manifest)
    annotations = []
    for n, iid in enumerate(manifest["items"]):
        src = sources[iid]
        pid = src["photo_id"]
        album = src.get("album_id") or folder_album
        images.setdefault(pid, {"id": pid, "album_id": album})
        albums.setdefault(album, {"id": album, "title": album})
        for worker, answer in sorted(collected.by_item[iid].items()):
            sentence = text(answer, SCHEMA)
            annotations.append([{"album_id": album, "photo_flickr_id": pid,
                                 "photo_order_in_story": src.get("order", n),
                                 "story_id": f"dii-{pid}", "storylet_id": f"dii-{pid}-{worker}",
                                 "text": tokenize(sentence), "original_text": sentence, "tier": DII_TIER,
                                 "worker_id": worker, "setting": ""}])
    if folder_album is not None:
        albums[folder_album]["photos"] = len(images)
    doc = {"info": {"description": "descriptions collected with connote collect"}, "type": DII_TIER,
           "images": list(images.values()), "albums": list(albums.values()), "annotations": annotations}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    read_official(out)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={"descriptions": len(annotations)})
    return finish(report, collected)
