"""A tiny offline storytelling set from photos that installed packages ship.

Three training albums and three test albums of five photos each (scikit-image, scikit-learn and
matplotlib photos), with stories written for connote in VIST's normalised style (lower case,
tokenised, ``[female]``-style placeholders). Files are written in the official formats, so every
``connote vist`` / ``connote vist`` command runs on them: ``train.story-in-sequence.json``,
``test.story-in-sequence.json`` (two stories per test sequence, the gold for scoring),
``test-template.json`` (challenge template), ``images/<photo id>.jpg``, and ``sample-ratings.csv`` /
``sample-preferences.csv`` (one rating per test story and the preference within each sequence, given by the
sample's author: the layouts ``vist correlate`` reads, not a human study).

It exists to show the pipeline end to end offline; it is far too small to say anything about models.
"""

from __future__ import annotations

import json
from pathlib import Path

from connote.media.sample import _matplotlib, _skimage, _sklearn

PHOTOS = {
    "rocket": _skimage("rocket"), "astronaut": _skimage("astronaut"), "hubble": _skimage("hubble_deep_field"),
    "moon": _skimage("moon"), "camera": _skimage("camera"), "coffee": _skimage("coffee"),
    "cat": _skimage("chelsea"), "flower": _sklearn("flower.jpg"), "coins": _skimage("coins"),
    "hopper": _matplotlib("grace_hopper.jpg"), "motorcycle": _skimage("stereo_motorcycle"),
    "temple": _sklearn("china.jpg"), "grass": _skimage("grass"), "gravel": _skimage("gravel"),
    "brick": _skimage("brick"),
}

# album id, title, [(photo, storylet)] x 5 -- the training stories
TRAIN = [
    ("900001", "space center", [
        ("rocket", "we went to the space center to see the rocket before the launch ."),
        ("astronaut", "we even got to meet an astronaut , and she was very friendly ."),
        ("hubble", "inside they showed us pictures of galaxies far away ."),
        ("moon", "there was also a huge photo of the moon and its craters ."),
        ("camera", "[male] took pictures of everything all day long ."),
    ]),
    ("900002", "a morning at grandma's", [
        ("coffee", "the morning started with a good cup of coffee ."),
        ("cat", "the cat was already waiting for breakfast ."),
        ("flower", "grandma showed us the flowers in her garden ."),
        ("coins", "she also showed us her collection of old coins ."),
        ("hopper", "and we found an old photo of her in uniform . she looked so proud ."),
    ]),
    ("900003", "road trip", [
        ("motorcycle", "[male] finally fixed his motorcycle and we were ready to go ."),
        ("temple", "our first stop was an old temple in the hills ."),
        ("grass", "we had a picnic on the grass next to the road ."),
        ("gravel", "the last part of the road was all gravel ."),
        ("brick", "we ended the day at a little brick house by the lake ."),
    ]),
]

# the test albums reuse the photos in another order with other people's stories (two per sequence)
TEST = [
    ("910001", "visit to the museum of space", ["astronaut", "rocket", "moon", "hubble", "camera"], [
        ["the astronaut welcomed everyone to the museum .", "a real rocket stood in the main hall .",
         "we learned how people walked on the moon .", "the pictures of the stars were beautiful .",
         "i took a photo to remember the day ."],
        ["we met a real astronaut today !", "then we looked at the big rocket .", "the moon looked so close .",
         "there are so many galaxies out there .", "my brother brought his camera ."],
    ]),
    ("910002", "sunday with the family", ["cat", "coffee", "flower", "hopper", "coins"], [
        ["our cat woke us up early .", "mom made coffee for everyone .", "the garden was full of flowers .",
         "we looked at old family photos .", "grandpa told us about his coin collection ."],
        ["the cat wanted to play .", "we sat down with our coffee .", "the flowers were in bloom .",
         "grandma was a navy officer when she was young .", "we counted the old coins together ."],
    ]),
    ("910003", "riding to the lake", ["motorcycle", "temple", "brick", "grass", "gravel"], [
        ["the motorcycle ran great all day .", "we passed an old temple on the way .",
         "we stopped at a brick house for lunch .", "we rested on the grass .",
         "the road to the lake was gravel ."],
        ["[male] loves his motorcycle .", "the temple was very old .", "the house was made of red brick .",
         "the grass was soft and green .", "the gravel road was hard to ride on ."],
    ]),
]


# one rating per test story (story ids 1-6, in TEST's order), on the VIST paper's 1-5 agreement with "If these were
# my photos, I would like using a story like this to share my experience with my friends"; given by the author of
# the sample when writing it: an illustration of the ratings layout, not a human study (one rater, six stories)
RATINGS = {"1": 4, "2": 3, "3": 4, "4": 5, "5": 3, "6": 2}


def _photo_id(album: str, k: int) -> str:
    return f"{album}{k:02d}"


def _sis(albums: list[tuple[str, str, list[str], list[list[str]]]]) -> dict:
    images, album_rows, annotations = [], [], []
    story = 0
    for album_id, title, photos, stories in albums:
        ids = [_photo_id(album_id, k) for k in range(len(photos))]
        for k, (pid, name) in enumerate(zip(ids, photos)):
            images.append({"id": pid, "album_id": album_id, "datetaken": f"2024-05-0{1 + k % 9} 10:00:00",
                           "license": "4", "url_o": f"images/{pid}.jpg", "title": name, "tags": name})
        album_rows.append({"id": album_id, "title": title, "description": "", "photos": len(ids),
                           "vist_label": title})
        for texts in stories:
            story += 1
            for k, (pid, text) in enumerate(zip(ids, texts)):
                annotations.append([{
                    "album_id": album_id, "photo_flickr_id": pid, "story_id": str(story),
                    "storylet_id": str(story * 10 + k), "text": text, "original_text": text,
                    "tier": "story-in-sequence", "worker_arranged_photo_order": k, "worker_id": "connote",
                    "setting": "first-2-pick-and-tell"}])
    return {"images": images, "albums": album_rows, "annotations": annotations, "type": "story-in-sequence",
            "info": {"description": "connote offline sample (packaged photos)"}}


def sample_paths(folder: str | Path) -> dict[str, Path]:
    """The paths of the sample's files in ``folder`` by name (what :func:`write_sample_vist` writes there)."""
    folder = Path(folder)
    return {"train": folder / "train.story-in-sequence.json", "test": folder / "test.story-in-sequence.json",
            "template": folder / "test-template.json", "images": folder / "images",
            "ratings": folder / "sample-ratings.csv", "preferences": folder / "sample-preferences.csv"}


def write_sample_vist(folder: str | Path) -> dict[str, Path]:
    """Write the sample files and photos into ``folder``; returns their paths by name."""
    folder = Path(folder)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    train = [(a, t, [p for p, _ in rows], [[s for _, s in rows]]) for a, t, rows in TRAIN]
    for album_id, _title, photos, _ in train + TEST:
        for k, name in enumerate(photos):
            path = folder / "images" / f"{_photo_id(album_id, k)}.jpg"
            if not path.exists():
                PHOTOS[name]().save(path, quality=90)
    paths = sample_paths(folder)
    paths["train"].write_text(json.dumps(_sis(train), indent=1), encoding="utf-8")
    paths["test"].write_text(json.dumps(_sis(TEST), indent=1), encoding="utf-8")
    template = {"team_name": "", "evaluation_info": {"additional_description": "connote sample template"},
                "output_stories": [{"album_id": a, "photo_sequence": [_photo_id(a, k) for k in range(len(p))],
                                    "story_text_normalized": ""} for a, _t, p, _s in TEST]}
    paths["template"].write_text(json.dumps(template, indent=1), encoding="utf-8")
    paths["ratings"].write_text("story_id,rating,rater\n" + "".join(f"{k},{v},sample-author\n"
                                                                   for k, v in RATINGS.items()), encoding="utf-8")
    paths["preferences"] = folder / "sample-preferences.csv"
    pairs = [("1", "2"), ("3", "4"), ("5", "6")]  # the two stories of each test sequence
    paths["preferences"].write_text("story_a,story_b,preferred,rater\n" + "".join(
        f"{a},{b},{'a' if RATINGS[a] > RATINGS[b] else 'b'},sample-author\n" for a, b in pairs), encoding="utf-8")
    return paths


def sample_retrieval_spec(paths: dict[str, Path]) -> str:
    """The generator spec that ``vist demo`` and ``vist generate`` (without data) use on the sample.

    The offline retrieval baseline over the sample's training stories, indexed by their photos (the test
    albums reuse the training photos, so the image index finds the story of the same photos), without an
    on-disk index cache (embedding 15 photos takes seconds).
    """
    return f"retrieval?train={paths['train']}&index_by=image&images={paths['images']}&cache=none"
