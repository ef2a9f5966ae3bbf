"""VIST *descriptions of images in sequence* (DIS, paper §3): "we use the storyboard and story cards of our
storytelling interface to display a photo sequence, with MS COCO instructions adapted for sequences";
3 workers per sequence. Each worker writes one description per card (each at least 8 words, COCO's
rule; the text varied, as in every HIT of the paper).

Source (``--data``): the first stage's SIS file(s), as for DII: per album the photo sequence with stories
from a majority of its workers (``vist_descriptions.majority_sequences``); photos from ``--images``
(default: ``images/`` next to the first JSON). Import writes the DIS tier in the official layout
(``descriptions-in-sequence``, one "story" of descriptions per worker and sequence) that ``connote vist``
reads; the VIST page released SIS and DII only, so this layout is SIS's with the DIS tier name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.collect.answers import Answer, ImportReport, collect, finish, text
from connote.collect.project import PLUGIN, MediaFolder, Study, example_block, safe_name, write_project
from connote.core.errors import InputError, ItemError
from connote.vist.studies.descriptions import majority_sequences
from connote.vist.studies.storytelling import (
    MIN_WORDS,
    SCHEMA,
    STORY_PHOTOS,
    find_photo,
    refused_answers,
    split_skips,
    story_of,
    story_problems,
    story_scheme,
    write_sis,
)

NAME = "vist-descriptions-in-sequence"
DIS_TIER = "descriptions-in-sequence"
MIN_WORDS_EACH = 8  # MS COCO: "The sentence should contain at least 8 words."

INSTRUCTIONS = (
    "<p>You will see a sequence of photos from one album, in order, each on a card. <b>Describe each photo in "
    "one sentence</b> on its card (the MS COCO captioning instructions, adapted for a sequence):</p><ul>"
    "<li>Describe all the important parts of the scene in the photo.</li>"
    "<li>You see the photos together: you may refer to what the other photos show (\"the same man\", \"the "
    "house\"), but describe what this photo shows; do not tell a story.</li>"
    "<li>Do not start the sentence with \"There is\".</li>"
    "<li>Do not describe unimportant details.</li>"
    "<li>Do not describe things that might have happened in the future or past.</li>"
    "<li>Do not describe what a person might say.</li>"
    "<li>Do not give people proper names.</li>"
    f"<li>Each sentence should contain at least {MIN_WORDS_EACH} words, and no two sentences the same.</li></ul>"
    "<p>If the photos do not load, tick the box under the cards and press Next. Some items are attention "
    "checks that tell you what to do; please follow them.</p>"
    + example_block("Worked example", "A sequence of five photos of a house with a ball stuck on its roof.<br>"
                                      "<i>A man is standing in the grass in front of the house kicking a soccer "
                                      "ball.</i> / <i>A soccer ball is over the roof of the same house by the "
                                      "red door.</i> / ...")
)


def scheme(most: int) -> dict[str, Any]:
    return story_scheme("fixed", "Your descriptions: one sentence for each photo, in this order", True,
                        max_photos=most, min_words_each=MIN_WORDS_EACH,
                        skip_label="The photos do not load: skip this sequence",
                        done="Descriptions complete",
                        help="The photos below are a sequence from one album. Describe each photo in one sentence "
                             f"on its card (at least {MIN_WORDS_EACH} words each); describe, do not tell a story.")


def make(source: str | Path | list[str | Path], out: str | Path, *, images: str | Path | None = None,
         per_item: int = 3, completion: str | None = None, login: str = "username") -> Path:
    """Write the DIS study: one item per majority sequence of the first stage whose photos are available."""
    sources = [Path(p) for p in (source if isinstance(source, list) else [source])]
    for path in sources:
        if not path.is_file():
            raise InputError("expected an SIS JSON file (a storytelling or re-telling import)", path=path)
    folder = Path(images) if images else sources[0].parent / "images"
    sequences, left_out = majority_sequences(sources)
    study = Study(name=NAME, title="Describe each photo of a sequence in one sentence", instructions=INSTRUCTIONS,
                  schemes=[], display_fields=[{"key": "text", "type": "text", "label": "Sequence"}],
                  per_item=per_item, plugins=[PLUGIN],
                  options={"source": str(sources[0].resolve()), "sources": [str(p.resolve()) for p in sources]})
    study.left_out.extend(left_out)
    media = MediaFolder(study)
    for n, seq in enumerate(sequences, start=1):
        aid, ids = seq["album_id"], seq["photos"]
        paths = [find_photo(folder, pid) for pid in ids]
        missing = [pid for pid, p in zip(ids, paths) if p is None]
        if missing:
            study.left_out.append(f"album {aid}: no image file for photo(s) {', '.join(missing)} in {folder}")
            continue
        iid = f"sequence-{n}-{safe_name(aid, 40)}"
        title = seq["album"].get("title") or aid
        try:
            photos = [{"id": pid, "url": media.add(p, f"{aid}-{pid}")} for pid, p in zip(ids, paths)]
        except ItemError as exc:  # the media gate: not an image, a link, or too large
            study.left_out.append(f"album {aid}: {exc}")
            continue
        study.items.append({"id": iid, "text": f"Album \"{title}\": {len(ids)} photos in sequence; describe each",
                            "photos": photos})
        study.sources[iid] = {"album_id": aid, "photos": ids, "album": seq["album"], "images": seq["images"]}
    most = max((len(s["photos"]) for s in study.sources.values()), default=STORY_PHOTOS)
    study.schemes = [scheme(most)]
    if study.items:
        study.attention.append({"id": "attention-1", "photos": study.items[0]["photos"],
                                "expected_answer": {SCHEMA: "skip"},
                                "text": "ATTENTION CHECK: do not describe these photos. Tick the box under the "
                                        "cards and press Next."})
    return write_project(study, out, completion=completion, login=login)


def problems(answer: Answer, photos: list[str] | None = None) -> list[str]:
    """Why an answer is not a complete set of descriptions (of the sequence ``photos`` when given)."""
    if text(answer, SCHEMA, "order") == "skip":
        return []
    found = story_problems(answer, photos, min_words=MIN_WORDS, min_each=MIN_WORDS_EACH)
    if photos is not None and story_of(answer)[0] != photos:
        found.insert(0, "the cards are not the sequence's photos in its order")
    return found


def is_complete(answer: Answer) -> bool:
    """Whether one annotator's answer to an item is finished (what import and status count)."""
    return bool(text(answer, SCHEMA, "order")) and not problems(answer)


def import_answers(folder: Path, manifest: dict[str, Any], out: Path) -> ImportReport:
    """The descriptions as a DIS file in the official layout (one group per worker and sequence)."""
    from connote.vist.data import read_official

    sources = manifest["sources"]
    collected = collect(folder, manifest, is_complete)
    answered, skipped = split_skips(manifest, collected, by="item")
    groups = []
    for iid, src, worker, answer in answered:
        if not problems(answer, src["photos"]):  # else refused below
            ids, sentences = story_of(answer)
            groups.append({"item": iid, "album_id": src["album_id"], "worker": worker, "photos": ids,
                           "sentences": sentences})
    write_sis(out, groups, sources, manifest["options"]["source"], prefix="dis", tier=DIS_TIER)
    read_official(out)
    refused = refused_answers(folder, manifest, lambda iid, a: problems(a, sources[iid]["photos"]), collected)
    report = ImportReport(study=NAME, outputs=[str(out)], extra={
        "descriptions": sum(len(g["sentences"]) for g in groups), "sequences_described": len(groups),
        "skipped": skipped, "refused": refused})
    return finish(report, collected)

