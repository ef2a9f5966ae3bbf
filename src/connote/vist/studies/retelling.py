"""VIST *re-telling* (paper §3, Figure 2): the album is shown in time order with the photo sequences the
storytelling stage made from it ("the two photo sequences already created in the first stage, which the
worker chooses from to write the story"); the worker chooses one and writes one sentence per photo, varied
text of at least 15 words. Three workers per album.

Source (``--data``): an official SIS JSON, normally the output of ``connote collect import`` on a
storytelling study: one item per album, offering that album's distinct photo sequences in the order of
its stories; or a JSON list of ``{"album_id", "photo_ids": [ids]}`` (one entry per sequence). Photos as
for storytelling (``--images``). Import writes one official SIS file with the album's first-stage stories
(the source's, ``storytelling-N``) and the new ones (``retelling-N``), so each album has its 2 + 3 stories
of the paper; each re-teller's choice is reported (``choices``: album -> worker -> sequence number), with
the sequence that has stories from a majority of the album's workers (``preferred``, Figure 2's
"preferred photo sequence", which the DII and DIS studies are made from). An album two re-tellers skipped
is discarded, as in the first stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import PLUGIN, MediaFolder, Study, example_block, safe_name, write_project
from connote.collect.quality import Question
from connote.core.errors import InputError
from connote.vist.studies.storytelling import (
    MIN_WORDS,
    SCHEMA,
    STORY_PHOTOS,
    discard_skipped,
    find_photo,
    load_vist,
    refused_answers,
    split_skips,
    story_of,
    story_problems,
    story_scheme,
    write_sis,
)

NAME = "vist-retelling"

INSTRUCTIONS = (
    "<p>You will see a photo album, its photos in the order they were taken, and under it the photo sequences "
    f"(at least {STORY_PHOTOS} photos each) that other people chose from it and put in story order. "
    "<b>Choose one sequence</b> and <b>write a story</b> for it: <b>one sentence on each card</b>, in the order "
    f"shown, at least {MIN_WORDS} words in all, each sentence different. Write about what happens, as if you "
    "were sharing the event with friends. If the photos cannot be told as a story at all, tick the box under "
    "the storyboard and press Next.</p>"
    "<p>Some items are attention checks that tell you what to do; please follow them.</p>"
    + example_block("Worked example",
                    "Two sequences of a birthday album; you choose the second. Its storyboard: a birthday cake; "
                    "children around a table; a boy blowing out candles; presents "
                    "being opened; everyone asleep on the sofa.<br><i>Today was Sam's seventh birthday. All his "
                    "friends came over for the party. He blew out every candle in one breath. Then came the best "
                    "part, the presents. By evening everyone was worn out.</i>")
)


def _albums(source: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per album (in the source's order): its photos in time order, its distinct sequences in the order of
    its stories, and its stories (``worker, photos, sentences``); and the raw ``images``/``albums``."""
    from connote.vist.data import load_json

    raw, _ = load_json(source)  # malformed JSON: an input error naming the line
    albums: dict[str, dict[str, Any]] = {}
    if isinstance(raw, list):
        for n, entry in enumerate(raw):
            if not isinstance(entry, dict) or not isinstance(entry.get("photo_ids"), list):
                raise InputError(f"entry {n}: expected {{\"album_id\", \"photo_ids\": [...]}}", path=source)
            album = albums.setdefault(str(entry.get("album_id", "")), {"photos": [], "sequences": [], "stories": []})
            ids = [str(p) for p in entry["photo_ids"]]
            album["sequences"].append(ids)
            album["photos"] += [p for p in ids if p not in album["photos"]]
        for album in albums.values():
            album["sequences"] = [list(s) for s in dict.fromkeys(tuple(s) for s in album["sequences"])]
        return albums, {"images": {}, "albums": {}}
    vist, meta = load_vist(source)
    for story in vist.stories:
        photos = vist.albums[story.album_id].photo_ids if story.album_id in vist.albums else []
        album = albums.setdefault(story.album_id, {"photos": list(photos) or list(story.photo_ids),
                                                   "sequences": [], "stories": []})
        if list(story.photo_ids) not in album["sequences"]:
            album["sequences"].append(list(story.photo_ids))
        album["stories"].append({"worker": story.storylets[0].worker_id or story.id,
                                 "photos": list(story.photo_ids),
                                 "sentences": [sl.original_text or sl.text for sl in story.storylets]})
    return albums, meta


def make(source: str | Path, out: str | Path, *, images: str | Path | None = None, per_item: int = 3,
         completion: str | None = None, login: str = "username") -> Path:
    """Write the re-telling study: one item per album with the first stage's sequences to choose from."""
    source = Path(source)
    folder = Path(images) if images else source.parent / "images"
    albums, meta = _albums(source)
    study = Study(name=NAME, title="Choose a photo sequence and write its story", instructions=INSTRUCTIONS,
                  schemes=[], display_fields=[{"key": "text", "type": "text", "label": "Album"}],
                  per_item=per_item, plugins=[PLUGIN], options={"source": str(source.resolve())})
    media = MediaFolder(study)
    for aid, album in albums.items():
        usable = []
        for n, ids in enumerate(album["sequences"], start=1):
            missing = [pid for pid in ids if find_photo(folder, pid) is None]
            if len(ids) < STORY_PHOTOS:
                study.left_out.append(f"album {aid}: sequence {n} has {len(ids)} photos; a story needs at least "
                                      f"{STORY_PHOTOS}")
            elif missing:
                study.left_out.append(f"album {aid}: sequence {n}: no image file for photo(s) {', '.join(missing)} "
                                      f"in {folder}")
            else:
                usable.append(ids)
        if not usable:
            study.left_out.append(f"album {aid}: no photo sequence to re-tell")
            continue
        photos = []
        for pid in album["photos"]:
            path = find_photo(folder, pid)
            url = None if path is None else media.admit(path, f"{aid}-{pid}", what=f"album {aid}: photo {pid}")
            if url is not None:
                photos.append({"id": pid, "url": url})
        iid = f"album-{safe_name(aid, 60)}"
        title = (meta["albums"].get(aid) or {}).get("title") or aid
        which = "its photo sequence" if len(usable) == 1 else f"one of its {len(usable)} photo sequences"
        study.items.append({"id": iid, "text": f"Album \"{title}\": {len(photos)} photos in the order they were "
                                               f"taken; tell {which}",
                            "photos": photos, "sequences": usable})
        shown = {p["id"] for p in photos}
        study.sources[iid] = {"album_id": aid, "photos": [p["id"] for p in photos], "sequences": usable,
                              "album": meta["albums"].get(aid, {"id": aid}),
                              "images": [meta["images"][p] for p in album["photos"] if p in meta["images"]
                                         and p in shown],
                              "stories": [s for s in album["stories"] if s["photos"] in usable]}
    most = max((len(s) for i in study.items for s in i["sequences"]), default=STORY_PHOTOS)
    study.schemes = [story_scheme("pick", "Your story: choose a photo sequence, then one sentence for each photo",
                                  True, max_photos=most)]
    if study.items:
        first = study.items[0]
        study.attention.append({"id": "attention-1", "photos": first["photos"], "sequences": first["sequences"],
                                "expected_answer": {SCHEMA: "skip"},
                                "text": "ATTENTION CHECK: do not write a story here. Tick the box under the "
                                        "storyboard and press Next."})
    return write_project(study, out, completion=completion, login=login)


#: The categorical judgement in a re-telling answer: which first-stage sequence was told (its number), or a skip.
QUESTIONS = (Question("sequence", None, radio=False),)


def judgements(answer: Answer) -> dict[str, str]:
    """The sequence a complete answer told (``"1"``, ``"2"``, ...) or ``"skip"`` (alpha and aggregation read it)."""
    if text(answer, SCHEMA, "order") == "skip":
        return {"sequence": "skip"}
    number = chosen(answer)
    return {"sequence": str(number)} if number is not None else {}


def chosen(answer: Answer) -> int | None:
    """The 1-based number of the sequence the re-teller chose (None: not recorded)."""
    value = text(answer, SCHEMA, "choice")
    return int(value) if value.isdigit() and int(value) > 0 else None


def retelling_problems(answer: Answer, sequences: list[list[str]]) -> list[str]:
    """Why a re-telling answer is not a story of one of ``sequences`` ([] for a complete story or a skip)."""
    if text(answer, SCHEMA, "order") == "skip":
        return []
    number = chosen(answer)
    if number is None or number > len(sequences):
        return [f"no sequence chosen (choice {text(answer, SCHEMA, 'choice')!r}, {len(sequences)} offered)"]
    ids, _ = story_of(answer)
    if ids != sequences[number - 1]:
        return [f"the storyboard is not sequence {number}"]
    return story_problems(answer, sequences[number - 1])


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count): a skip, or a
    chosen sequence with a complete, varied story."""
    order = text(answer, SCHEMA, "order")
    return order == "skip" or (bool(order) and chosen(answer) is not None and not story_problems(answer))


def preferred(stories: list[dict[str, Any]]) -> tuple[list[str] | None, dict[str, int]]:
    """The sequence with stories from a majority (more than half) of the workers who wrote stories for the
    album (None when no sequence has that), and the number of those workers per sequence."""
    workers: dict[tuple[str, ...], set[str]] = {}
    for story in stories:
        workers.setdefault(tuple(story["photos"]), set()).add(str(story["worker"]))
    everyone = set().union(*workers.values()) if workers else set()
    counts = {",".join(seq): len(who) for seq, who in workers.items()}
    best = [list(seq) for seq, who in workers.items() if 2 * len(who) > len(everyone)]
    return (best[0] if best else None), counts


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """One official SIS file: each album's first-stage stories and the new ones (storylets in the chosen
    sequence's order); choices, the preferred sequences, skips and discarded albums are reported."""
    from connote.vist.data import read_official

    sources = manifest["sources"]
    collected = collect(folder, manifest, is_complete)
    answered, skipped = split_skips(manifest, collected)
    retold, choices = [], {}
    for iid, src, worker, answer in answered:
        if retelling_problems(answer, src["sequences"]):
            continue  # refused below
        ids, sentences = story_of(answer)
        choices.setdefault(src["album_id"], {})[worker] = chosen(answer)
        retold.append({"item": iid, "album_id": src["album_id"], "worker": worker, "photos": ids,
                       "sentences": sentences, "prefix": "retelling"})
    first = [{"item": iid, "album_id": sources[iid]["album_id"], "prefix": "storytelling", **story}
             for iid in manifest["items"] for story in sources[iid].get("stories", [])]
    stories, discarded = discard_skipped(first + retold, skipped)
    write_sis(out, stories, sources, manifest["options"]["source"])
    read_official(out)
    by_album: dict[str, list[dict[str, Any]]] = {}
    for story in stories:
        by_album.setdefault(story["album_id"], []).append(story)
    preferred_sequences, workers_per_sequence = {}, {}
    for aid, album_stories in by_album.items():
        best, counts = preferred(album_stories)
        preferred_sequences[aid] = best
        workers_per_sequence[aid] = counts
    refused = refused_answers(folder, manifest, lambda iid, a: retelling_problems(a, sources[iid]["sequences"]),
                              collected)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={
        "stories": len(retold) - sum(1 for s in retold if s["album_id"] in discarded),
        "first_stage_stories": sum(1 for s in first if s["album_id"] not in discarded),
        "choices": choices, "preferred": preferred_sequences, "workers_per_sequence": workers_per_sequence,
        "skipped": skipped, "discarded_albums": discarded, "refused": refused})
    return finish(report, collected)
