"""VIST *storytelling* (paper §3, Figure 3): an album in time order; the worker picks at least five
photos, puts them in order on a storyboard and writes one sentence per photo (varied text of at least 15
words in all), or skips an album that is not storyable. Two workers per album, as in the paper.

Source: an official VIST JSON (``train.story-in-sequence.json`` or any file with ``images`` and
``albums``); photos are files named ``<photo id>.<ext>`` in ``--images`` (default: ``images/`` next to
the JSON). Import writes the stories in the official SIS layout (storylets in the worker's photo order,
as many as the worker chose) that ``connote vist`` reads; skipped albums are listed, and an album two
workers skipped is discarded (the paper's rule): none of its stories is written.

"Varied text" (the paper's quality control, no rule given) is connote's: no two sentences the same
(case and punctuation ignored) and at least ``MIN_DISTINCT`` different words; the page refuses such a
story and import refuses it again (an answer posted around the page is listed, not written).

Potato has no scheme for "choose k of the item's photos, order them, write one sentence each"; connote's
plugin ``connote-collect`` adds it (``connote.collect.plugin``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, Collected, ImportReport, collect, finish, text
from connote.collect.project import PLUGIN, MediaFolder, Study, example_block, write_project
from connote.collect.quality import Question
from connote.core.errors import InputError, ItemError

NAME = "vist-storytelling"
SCHEMA = "story"
STORY_PHOTOS = 5  # "pick at least five photos"
MIN_WORDS = 15  # "varied text at least 15 words long"
MIN_DISTINCT = 10  # connote's reading of "varied": two thirds of the 15 words are different words
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".webp")
SIS_TIER = "story-in-sequence"
#: The categorical judgement in a storytelling answer: is the album storyable (a story) or not (a skip)?
QUESTIONS = (Question("storyable", ("yes", "no"), radio=False),)

INSTRUCTIONS = (
    "<p>You will see a photo album, its photos in the order they were taken. <b>Tell a story</b> about it: "
    f"click <b>at least {STORY_PHOTOS} photos</b> to put them on the storyboard, arrange them in the order of "
    "your story with the arrows, and write <b>one sentence on each card</b>. Together the sentences must make a "
    f"story of at least {MIN_WORDS} words, each sentence different. Write about what happens, as if you were "
    "sharing the event with friends; you need not describe everything in a photo. If an album cannot be told "
    "as a story (for example, a collection of coins), tick <i>This album is not storyable</i> and press Next.</p>"
    "<p>Some albums are attention checks that tell you what to do; please follow them.</p>"
    + example_block("Worked example",
                    "An album of a beach day with 14 photos. Chosen and ordered: the car packed with towels; "
                    "the family on the sand; the kids building a sandcastle; a wave washing the castle away; "
                    "the sunset.<br><i>We packed the car early for our trip to the beach. The whole family "
                    "found a spot near the water. The kids spent hours on their sandcastle. Then a big wave "
                    "took it all away! We stayed to watch the sun go down.</i> (49 words)")
)


def find_photo(folder: Path, photo_id: str) -> Path | None:
    """A photo a study shows: its file in ``folder`` (:func:`connote.media.photos.find_image`, the formats a browser
    shows); None where there is none. Ids with path characters never match a file outside ``folder``."""
    from connote.media.photos import find_image

    try:
        return find_image(folder, photo_id, extensions=IMAGE_EXTENSIONS)
    except ItemError:
        return None


def load_vist(source: Path) -> tuple[Any, dict[str, Any]]:
    """The parsed VIST file (connote's reader) and its raw ``images``/``albums`` entries by id."""
    from connote.vist.data import load_json, read_official

    vist = read_official(source)
    raw, _ = load_json(source)
    images = {str(i.get("id")): i for i in raw.get("images") or [] if isinstance(i, dict)}
    albums = {str(a.get("id")): a for a in raw.get("albums") or [] if isinstance(a, dict)}
    return vist, {"images": images, "albums": albums}


def story_scheme(mode: str, description: str, allow_skip: bool, *, max_photos: int = STORY_PHOTOS,
                 **extra: Any) -> dict[str, Any]:
    """The plugin's storyboard scheme with the paper's quality controls (``extra``: other plugin options)."""
    return {"annotation_type": "connote_story", "name": SCHEMA, "description": description, "mode": mode,
            "photos": STORY_PHOTOS, "max_photos": max(max_photos, STORY_PHOTOS), "min_words": MIN_WORDS,
            "min_distinct": MIN_DISTINCT, "allow_skip": allow_skip, **extra}


def words(sentence: str) -> list[str]:
    """The words of a sentence as the page counts them: tokens with a letter or digit, lower-cased, other
    characters dropped (so ``Then,`` and ``then`` are one word)."""
    return [re.sub(r"[^a-z0-9]", "", w.lower()) for w in sentence.split() if re.search(r"[A-Za-z0-9]", w)]


def text_problems(sentences: list[str], *, min_words: int = MIN_WORDS, min_each: int = 1,
                  min_distinct: int = MIN_DISTINCT) -> list[str]:
    """What keeps ``sentences`` from being a complete, varied text (the page's own check, in the same words):
    an empty card, a card under ``min_each`` words, fewer than ``min_words`` in all, two cards saying the
    same, fewer than ``min_distinct`` different words. Empty: the text is acceptable."""
    problems, seen, total, distinct = [], {}, 0, set()
    for k, sentence in enumerate(sentences, start=1):
        ws = words(sentence)
        total += len(ws)
        distinct.update(w for w in ws if w)
        key = " ".join(w for w in ws if w)
        if not ws:
            problems.append(f"card {k} has no sentence")
        elif len(ws) < min_each:
            problems.append(f"card {k} has {len(ws)} words; each needs at least {min_each}")
        if key and key in seen:
            problems.append(f"cards {seen[key]} and {k} say the same; write a different sentence")
        elif key:
            seen[key] = k
    if total < min_words:
        problems.append(f"the text has {total} words; it needs at least {min_words}")
    elif len(distinct) < min_distinct:
        problems.append(f"the text repeats itself: it uses {len(distinct)} different words; use at least "
                        f"{min_distinct}")
    return problems


def story_of(answer: Answer, count: int | None = None) -> tuple[list[str], list[str]]:
    """The photo ids (``order``) and the sentences of one storyboard answer (``count`` cards when given)."""
    ids = [p for p in text(answer, SCHEMA, "order").split(",") if p]
    n = len(ids) if count is None else count
    return ids, [text(answer, SCHEMA, f"sentence_{k}") for k in range(1, n + 1)]


def story_problems(answer: Answer, photos: list[str] | None = None, **rules: int) -> list[str]:
    """Why a storyboard answer is not a complete story ([] when it is, or when it is a skip): at least
    ``STORY_PHOTOS`` different photos (of ``photos`` when given) and :func:`text_problems` ``rules``."""
    if text(answer, SCHEMA, "order") == "skip":
        return []
    ids, sentences = story_of(answer)
    problems = []
    if len(ids) < STORY_PHOTOS:
        problems.append(f"{len(ids)} photos on the storyboard; a story needs at least {STORY_PHOTOS}")
    if len(set(ids)) != len(ids):
        problems.append("a photo is on the storyboard twice")
    if photos is not None and set(ids) - set(photos):
        problems.append(f"photo(s) {', '.join(sorted(set(ids) - set(photos)))} are not in the album")
    return problems + (text_problems(sentences, **rules) if ids else [])


def refused_answers(folder: Path, manifest: dict[str, Any], problems_of: Any, collected: Collected) -> list[str]:
    """Answers that claim to be finished (an ``order`` is saved, which the page sets only for a complete
    story) but fail ``problems_of(item id, answer)`` at import: posted around the page; listed, not written.
    Annotators already excluded by an attention check are not listed again."""
    from connote.collect.answers import read_annotators

    refused = []
    items = set(manifest["items"])
    for name, ann in read_annotators(folder).items():
        if name in collected.screening.excluded:
            continue
        for iid, answer in sorted(ann.answers.items()):
            if iid in items and text(answer, SCHEMA, "order"):
                why = problems_of(iid, answer)
                if why:
                    refused.append(f"{name} on {iid}: {'; '.join(why)}")
    return refused


def make(source: str | Path, out: str | Path, *, images: str | Path | None = None, albums: int | None = None,
         per_item: int = 2, completion: str | None = None, login: str = "username") -> Path:
    """Write the storytelling study: one item per album with at least five available photos."""
    source = Path(source)
    folder = Path(images) if images else source.parent / "images"
    vist, raw = load_vist(source)
    study = Study(name=NAME, title="Tell a story with five or more photos of an album", instructions=INSTRUCTIONS,
                  schemes=[],
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
            elif (url := media.admit(path, f"{aid}-{pid}", what=f"album {aid}: photo {pid}")) is not None:
                photos.append({"id": pid, "url": url})
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
    most = max((len(i["photos"]) for i in study.items), default=STORY_PHOTOS)
    study.schemes = [story_scheme("choose", f"Your story: choose at least {STORY_PHOTOS} photos, order them, "
                                  "one sentence each", True, max_photos=most)]
    if study.items:
        first = study.items[0]
        study.attention.append({"id": "attention-1", "photos": first["photos"], "expected_answer": {SCHEMA: "skip"},
                                "text": "ATTENTION CHECK: do not write a story for this album. Tick \"This album "
                                        "is not storyable\" and press Next."})
    return write_project(study, out, completion=completion, login=login)


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count): a skip, or a
    story of at least five photos whose text passes :func:`text_problems`."""
    return bool(text(answer, SCHEMA, "order")) and not story_problems(answer)


def judgements(answer: Answer) -> dict[str, str]:
    """The categorical judgement of a complete answer (alpha and aggregation read it): storyable yes / no."""
    order = text(answer, SCHEMA, "order")
    return {"storyable": "no" if order == "skip" else "yes"} if order else {}


def tokenize(sentence: str) -> str:
    """VIST's ``text`` field style: lower case, punctuation split off (``original_text`` keeps the words)."""
    return " ".join(re.findall(r"[\w']+|[^\w\s]", sentence.lower()))


def write_sis(out: Path, stories: list[dict[str, Any]], sources: dict[str, Any], source_file: str, *,
              prefix: str = "collected", tier: str = SIS_TIER) -> int:
    """Write stories (``item, album_id, worker, photos, sentences``, optionally their own ``prefix`` of the
    story id) as an official SIS file (or, with ``tier="descriptions-in-sequence"``, DIS: the same layout);
    returns the number of storylets."""
    images: dict[str, Any] = {}
    albums: dict[str, Any] = {}
    annotations = []
    numbers: dict[str, int] = {}
    for story in stories:
        src = sources[story["item"]]
        albums.setdefault(story["album_id"], src["album"])
        for img in src["images"]:
            images.setdefault(str(img.get("id")), img)
        kind = story.get("prefix", prefix)
        numbers[kind] = numbers.get(kind, 0) + 1
        story_id = f"{kind}-{numbers[kind]}"
        for k, (pid, sentence) in enumerate(zip(story["photos"], story["sentences"])):
            annotations.append([{
                "album_id": story["album_id"], "photo_flickr_id": pid, "story_id": story_id,
                "storylet_id": f"{story_id}-{k + 1}", "text": tokenize(sentence), "original_text": sentence,
                "tier": tier, "worker_arranged_photo_order": k, "worker_id": story["worker"], "setting": "",
            }])
    what = "stories" if tier == SIS_TIER else "descriptions"
    doc = {"info": {"description": f"{what} collected with connote collect", "source": Path(source_file).name},
           "type": tier, "images": [images[k] for k in sorted(images)],
           "albums": [albums[k] for k in sorted(albums)], "annotations": annotations}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(annotations)


def split_skips(manifest: dict[str, Any], collected: Collected,
                by: str = "album_id") -> tuple[list[tuple[str, dict[str, Any], str, Answer]], dict[str, list[str]]]:
    """The complete answers that are not skips, as ``(item, source, worker, answer)`` in item and worker
    order, and who skipped, by the source's album id (``by="item"``: by item id)."""
    answered, skipped = [], {}
    for iid in manifest["items"]:
        src = manifest["sources"][iid]
        for worker, answer in sorted(collected.by_item[iid].items()):
            if text(answer, SCHEMA, "order") == "skip":
                skipped.setdefault(iid if by == "item" else src[by], []).append(worker)
            else:
                answered.append((iid, src, worker, answer))
    return answered, skipped


def discard_skipped(stories: list[dict[str, Any]], skipped: dict[str, list[str]]) -> tuple[list[dict[str, Any]],
                                                                                          list[str]]:
    """The paper's rule, "albums skipped by two workers are discarded": the stories of the other albums,
    and the discarded album ids."""
    discarded = sorted(a for a, who in skipped.items() if len(who) >= 2)
    return [s for s in stories if s["album_id"] not in discarded], discarded


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The stories as an official SIS JSON file, each with the photos the worker chose in the worker's order;
    skipped albums are listed, and an album two workers skipped is discarded (none of its stories written)."""
    from connote.vist.data import read_official

    sources = manifest["sources"]
    collected = collect(folder, manifest, is_complete)
    answered, skipped = split_skips(manifest, collected)
    stories = []
    for iid, src, worker, answer in answered:
        if story_problems(answer, src["photos"]):  # a photo of another album: refused below
            continue
        ids, sentences = story_of(answer)
        stories.append({"item": iid, "album_id": src["album_id"], "worker": worker, "photos": ids,
                        "sentences": sentences})
    stories, discarded = discard_skipped(stories, skipped)
    write_sis(out, stories, sources, manifest["options"]["source"], prefix="storytelling")
    read_official(out)  # connote's own reader must take what we wrote
    refused = refused_answers(folder, manifest, lambda iid, a: story_problems(a, sources[iid]["photos"]), collected)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={
        "stories": len(stories), "photos_per_story": _lengths(stories), "skipped_albums": skipped,
        "discarded_albums": discarded, "refused": refused})
    return finish(report, collected)


def _lengths(stories: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[int, int] = {}
    for story in stories:
        counts[len(story["photos"])] = counts.get(len(story["photos"]), 0) + 1
    return {str(k): counts[k] for k in sorted(counts)}
