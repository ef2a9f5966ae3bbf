"""A tiny offline video-metaphor set made from photos that installed packages ship.

Six two-second clips (a slow zoom or pan over a scikit-image / scikit-learn / matplotlib photo, written
with PyAV), each with three metaphor captions written for connote in VMC's template ("the X is as P as
the Y"). Three clips form the training split and three the test split; each test clip moves over one of
the training photos in another way, so the offline nearest-caption generator has something to find.
Files are in the formats ``connote vmc`` reads: ``videos/<id>.mp4``, the caption table ``vmc.csv``
(``unique_id, annotator_1..3``), ``train.txt`` / ``test.txt`` and ``test-videos.csv`` (a ``video_id,
path`` manifest of the test clips).

It exists to show the pipeline end to end offline; it is far too small to say anything about models.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from PIL import Image

from connote.core.registry import require
from connote.media.sample import _skimage, _sklearn

SIZE = (128, 96)
FRAMES = 12
FPS = 6

# video id, photo, motion, three captions
CLIPS = [
    ("vmc-sample-01", "rocket", "zoom-in", [
        "the rocket is as bold as a dream", "the launch is as loud as a promise",
        "the rocket is as proud as a lion"]),
    ("vmc-sample-02", "coffee", "zoom-in", [
        "the coffee is as warm as a hug", "the cup is as comforting as a friend",
        "the coffee is as gentle as a morning song"]),
    ("vmc-sample-03", "temple", "pan-right", [
        "the temple is as old as memory", "the building is as calm as a mountain",
        "the temple is as patient as time"]),
    ("vmc-sample-04", "rocket", "pan-right", [
        "the rocket is as brave as an explorer", "the launch pad is as tense as a held breath",
        "the rocket is as eager as a child"]),
    ("vmc-sample-05", "coffee", "zoom-out", [
        "the coffee is as welcoming as home", "the cup is as soft as a blanket",
        "the drink is as kind as a smile"]),
    ("vmc-sample-06", "temple", "zoom-out", [
        "the temple is as quiet as a library", "the old building is as wise as a grandparent",
        "the temple is as steady as a rock"]),
]
TRAIN = ["vmc-sample-01", "vmc-sample-02", "vmc-sample-03"]
TEST = ["vmc-sample-04", "vmc-sample-05", "vmc-sample-06"]
PHOTOS = {"rocket": _skimage("rocket"), "coffee": _skimage("coffee"), "temple": _sklearn("china.jpg")}


def _crops(width: int, height: int, motion: str) -> list[tuple[int, int, int, int]]:
    """One crop box per frame: a 4:3 window that zooms in or out by a third, or pans left to right."""
    ch = min(height, width * 3 // 4)
    cw = ch * 4 // 3
    boxes = []
    for i in range(FRAMES):
        t = i / (FRAMES - 1)
        if motion == "pan-right":
            w, h = cw * 3 // 4, ch * 3 // 4
            x, y = int(t * (width - w)), (height - h) // 2
        else:
            scale = 1 - (t if motion == "zoom-in" else 1 - t) / 3
            w, h = int(cw * scale), int(ch * scale)
            x, y = (width - w) // 2, (height - h) // 2
        boxes.append((x, y, x + w, y + h))
    return boxes


def write_clip(path: Path, photo: Image.Image, motion: str) -> Path:
    """Write a two-second clip moving over ``photo`` (``zoom-in``, ``zoom-out`` or ``pan-right``)."""
    av = require("av", "video")
    codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        for box in _crops(*photo.size, motion):
            arr = np.asarray(photo.crop(box).resize(SIZE, Image.Resampling.BILINEAR), dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def write_sample_vmc(folder: str | Path) -> dict[str, Path]:
    """Write the sample clips, caption table and splits into ``folder``; returns their paths by name."""
    folder = Path(folder)
    videos = folder / "videos"
    videos.mkdir(parents=True, exist_ok=True)
    photos: dict[str, Image.Image] = {}  # loaded only for a clip to write (the photo loaders import scikit-image)
    for vid, photo, motion, _ in CLIPS:
        path = videos / f"{vid}.mp4"
        if not path.exists():
            if photo not in photos:
                photos[photo] = PHOTOS[photo]()
            write_clip(path, photos[photo], motion)
    paths = {"videos": videos, "captions": folder / "vmc.csv", "train": folder / "train.txt",
             "test": folder / "test.txt", "test_videos": folder / "test-videos.csv"}
    with paths["captions"].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["unique_id", "annotator_1", "annotator_2", "annotator_3"])
        for vid, _, _, captions in CLIPS:
            writer.writerow([vid, *captions])
    paths["train"].write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    paths["test"].write_text("\n".join(TEST) + "\n", encoding="utf-8")
    with paths["test_videos"].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["video_id", "path"])
        for vid in TEST:
            writer.writerow([vid, f"videos/{vid}.mp4"])
    return paths


def sample_caption_spec(paths: dict[str, Path]) -> str:
    """The offline generator ``vmc caption`` uses on the sample: the nearest training clip's caption."""
    return f"nearest:{paths['captions']}?videos={paths['videos']}&split={paths['train']}"
