"""A small real probe set built from photos that installed packages ship.

The photos come from scikit-image, scikit-learn and matplotlib; the captions were written for
connote. Each photo gets one socially grounded (SG) caption, whose verb needs social or world
knowledge, and one physically grounded (PG) caption that only describes what is visible. Photos
whose SG caption truly applies are SG images; photos where it does not (a cat is pictured but is
not begging) are PG images, so PG image x SG caption pairs are the non-matching ones. There are
no human votes: correlations stay empty for this set.

``write_sample_probes(folder)`` writes the images and ``probes.csv``; nothing is downloaded.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path

from PIL import Image

from connote.core.registry import require


def _cached(source: str, name: str, load: Callable[[], Image.Image]) -> Callable[[], Image.Image]:
    """``load`` behind a one-time cache: the photo's pixels as a lossless PNG under connote's cache
    (``<root>/sample-photos/``), so that writing a sample later imports neither scikit-learn nor scikit-image
    (about a second of a sample run's start). A photo is its pixels only (a source file's metadata, such as the
    comment in matplotlib's JPEG, is dropped), so every file written from it is the same, cached or not."""
    def cached() -> Image.Image:
        from connote.core.cachedir import cache_root

        path = cache_root() / "sample-photos" / f"{source}-{name}.png"
        try:
            with Image.open(path) as im:
                image = im.convert("RGB")
            image.info.clear()
            return image
        except (OSError, ValueError):  # not cached yet, or unreadable: load from the package, cache again
            pass
        image = load()
        image.info.clear()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            image.save(tmp, format="PNG")
            os.replace(tmp, path)
        except OSError:  # a read-only cache: load from the package every time
            pass
        return image
    return cached


def _skimage(name: str) -> Callable[[], Image.Image]:
    def load() -> Image.Image:
        data = require("skimage.data", "offline")
        arr = getattr(data, name)()
        if isinstance(arr, tuple):  # stereo pairs: take the left view
            arr = arr[0]
        return Image.fromarray(arr).convert("RGB")
    return _cached("skimage", name, load)


def _sklearn(name: str) -> Callable[[], Image.Image]:
    def load() -> Image.Image:
        datasets = require("sklearn.datasets", "offline")
        return Image.fromarray(datasets.load_sample_image(name)).convert("RGB")
    return _cached("sklearn", name, load)


def _matplotlib(name: str) -> Callable[[], Image.Image]:
    def load() -> Image.Image:
        import matplotlib.cbook as cbook

        with cbook.get_sample_data(name) as f:
            return Image.open(f).convert("RGB")
    return _cached("matplotlib", name, load)


# (image id, loader, image kind, SG caption, SG simplified, SG verb, PG caption, PG simplified, PG verb)
SAMPLE = [
    ("astronaut", _skimage("astronaut"), "SG",
     "An astronaut represents her country in an official portrait.", "astronaut represents country", "represents",
     "A woman in a spacesuit smiles in front of a flag.", "woman smiles at camera", "smiles"),
    ("grace_hopper", _matplotlib("grace_hopper.jpg"), "SG",
     "An officer serves in the navy.", "officer serves navy", "serves",
     "A woman wears a uniform with a cap.", "woman wears uniform", "wears"),
    ("camera", _skimage("camera"), "SG",
     "A photographer works on a photo shoot in a park.", "photographer works on shoot", "works",
     "A man stands behind a camera on a tripod.", "man stands behind camera", "stands"),
    ("rocket", _skimage("rocket"), "SG",
     "Engineers prepare a rocket for its launch.", "engineers prepare rocket", "prepare",
     "A rocket stands on a launch pad.", "rocket stands on pad", "stands"),
    ("chelsea", _skimage("chelsea"), "PG",
     "A cat begs its owner for food.", "cat begs for food", "begs",
     "A cat lies on the floor and looks to the side.", "cat lies on floor", "lies"),
    ("coffee", _skimage("coffee"), "PG",
     "A waiter serves a customer an espresso.", "waiter serves espresso", "serves",
     "A cup of coffee stands on a saucer.", "cup stands on saucer", "stands"),
    ("motorcycle", _skimage("stereo_motorcycle"), "PG",
     "A biker races a motorcycle on a track.", "biker races motorcycle", "races",
     "A motorcycle is parked inside a room.", "motorcycle is parked", "parked"),
    ("china", _sklearn("china.jpg"), "PG",
     "Monks pray in a temple.", "monks pray in temple", "pray",
     "A building with a curved roof stands among trees.", "building stands among trees", "stands"),
    ("flower", _sklearn("flower.jpg"), "PG",
     "A florist sells flowers at a market.", "florist sells flowers", "sells",
     "A pink flower blooms in the sun.", "flower blooms", "blooms"),
]

COLUMNS = ["item_id", "image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb",
           "human_votes", "label"]


def write_sample_probes(folder: str | Path) -> Path:
    """Write the sample images and ``probes.csv`` into ``folder``; returns the manifest path."""
    folder = Path(folder)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for (name, load, kind, sg, sg_s, sg_v, pg, pg_s, pg_v) in SAMPLE:
        path = folder / "images" / f"{name}.jpg"
        if not path.exists():
            load().save(path, quality=92)
        for caption_kind, text, simple, verb in (("SG", sg, sg_s, sg_v), ("PG", pg, pg_s, pg_v)):
            rows.append({"item_id": f"{name}-{caption_kind.lower()}", "image": f"images/{name}.jpg",
                         "image_kind": kind, "caption": text, "caption_simplified": simple,
                         "caption_kind": caption_kind, "verb": verb, "human_votes": "", "label": ""})
    manifest = folder / "probes.csv"
    with open(manifest, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return manifest
