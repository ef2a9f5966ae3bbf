"""Reading sampled video frames with PyAV.

Sampling rules
--------------
A strategy names *positions*: fractions ``p`` in ``[0, 1)`` of the video's duration, grouped into
clips (one group unless the strategy is ``clips``):

* ``uniform`` (``k`` frames): the centre of each of ``k`` equal parts, ``p_i = (i + 1/2) / k``.
* ``segments`` (the paper's 6 frames): the video is cut into start, middle and end thirds and two
  frames are taken in temporal order from each third, at 1/3 and 2/3 of it:
  ``p = (3j + m) / 9`` for third ``j = 0, 1, 2`` and ``m = 1, 2``.
* ``clips`` (GIT-LLaVA-X, ``k`` clips): the video is cut into ``k`` equal clips and the
  ``segments`` rule is applied inside each clip (``per_clip`` = 6 frames; other values use the
  ``uniform`` rule inside the clip). Each clip is one group of frames.

A position becomes a frame index through the frames' presentation timestamps: the index of the
last frame whose timestamp is at or before ``start + p * duration``, where ``duration`` runs from
the first frame's timestamp to the end of the last frame. Timestamps are compared in exact integer
arithmetic, so for a constant-frame-rate video with ``n`` frames the index is exactly
``floor(p * n)`` (:func:`frame_indices`); for a variable frame rate the positions stay uniform in
*time*, not in frame count. Indices count decoded frames in presentation order from 0.

Short videos (the repeat rule): when a video has fewer frames than asked, the same formula gives
repeated indices, so frames are repeated in temporal order (a 1-frame video gives that frame
``k`` times, a 3-frame video sampled with ``uniform`` k=6 gives ``0 0 1 1 2 2``). Nothing is padded
with black frames.

Rotation: a display-matrix rotation (phone videos) is applied, so images are upright; the
rotation is recorded in :class:`VideoInfo`. Unreadable, empty, truncated or audio-only files
raise :class:`connote.core.errors.ItemError` naming the file, so a run records the item and goes on.

Random frames (``sampling="random"``): the rule of the public VMC code's video encoder, by frame count: for
``segments``, with ``gap = n // 3``, ``k // 3`` frames drawn uniformly (with replacement, in the order drawn)
from each of ``[0, gap)``, ``[gap + 1, 2 gap)`` and ``[2 gap + 1, n)`` (its intervals, the frame at each
boundary excluded as there); for ``clips``, with ``gap = n // k``, ``per_clip`` frames drawn from each
``[c gap, (c + 1) gap)``; ``uniform`` draws ``k`` from ``[0, n)``. An empty interval (a very short video) gives
its lower bound, clamped to the last frame. The draw is seeded: ``numpy.random.default_rng([seed, draw,
video key])`` with ``video key`` from the file's name, so a run is repeatable; training passes the epoch as
``draw`` (re-drawn every epoch, as the public code's unseeded draws are), evaluation a fixed one per run.

Images become still videos for stage-1 pretraining with :func:`still_video` (the image repeated
``k`` times).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from connote.core.errors import ItemError
from connote.core.registry import require

Strategy = Literal["uniform", "segments", "clips"]
STRATEGIES: tuple[str, ...] = ("uniform", "segments", "clips")
SAMPLINGS: tuple[str, ...] = ("fixed", "random")


@dataclass
class VideoInfo:
    """What was learnt about a video while reading it."""

    path: str
    n_frames: int
    duration_s: float
    fps: float
    width: int
    height: int
    rotation: int = 0
    variable_frame_rate: bool = False


@dataclass
class SampledFrames:
    """Frames sampled from one video: ``clips[c]`` lists indices, ``images[c]`` the PIL images."""

    path: str
    strategy: str
    clips: list[list[int]]
    images: list[list[Image.Image]]
    info: VideoInfo
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def indices(self) -> list[int]:
        """All sampled frame indices, clip after clip."""
        return [i for clip in self.clips for i in clip]

    @property
    def frames(self) -> list[Image.Image]:
        """All sampled images, clip after clip."""
        return [im for clip in self.images for im in clip]


def frame_positions(strategy: str, k: int = 6, per_clip: int = 6) -> list[list[Fraction]]:
    """Positions (fractions of the duration) for ``strategy``, grouped by clip; see module docs."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown frame sampling strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    if k < 1 or per_clip < 1:
        raise ValueError("k and per_clip must be at least 1")
    if strategy == "uniform":
        return [[Fraction(2 * i + 1, 2 * k) for i in range(k)]]
    if strategy == "segments":
        return [_segments()]
    inner = _segments() if per_clip == 6 else [Fraction(2 * i + 1, 2 * per_clip) for i in range(per_clip)]
    return [[(c + p) / k for p in inner] for c in range(k)]


def _segments() -> list[Fraction]:
    return [Fraction(3 * j + m, 9) for j in range(3) for m in (1, 2)]


def frame_indices(n_frames: int, strategy: str, k: int = 6, per_clip: int = 6) -> list[list[int]]:
    """Frame indices for a constant-frame-rate video of ``n_frames`` frames (``floor(p * n)``).

    >>> frame_indices(250, "uniform", k=4)
    [[31, 93, 156, 218]]
    >>> frame_indices(3, "uniform", k=6)
    [[0, 0, 1, 1, 2, 2]]
    """
    if n_frames < 1:
        raise ValueError("a video needs at least one frame")
    return [[min(n_frames - 1, int(p * n_frames)) for p in clip]
            for clip in frame_positions(strategy, k, per_clip)]


def random_frame_indices(n_frames: int, strategy: str, k: int = 6, per_clip: int = 6, *, seed: int = 0,
                         draw: int = 0, key: str = "") -> list[list[int]]:
    """Random frame indices by the public VMC encoder's rule (see the module docs), seeded.

    >>> random_frame_indices(300, "segments", seed=0, key="v") == random_frame_indices(300, "segments", seed=0, key="v")
    True
    >>> all(0 <= i < 100 for i in random_frame_indices(300, "segments", seed=0, key="v")[0][:2])
    True
    """
    import hashlib

    import numpy as np

    if strategy not in STRATEGIES:
        raise ValueError(f"unknown frame sampling strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    if n_frames < 1:
        raise ValueError("a video needs at least one frame")
    word = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "little")
    rng = np.random.default_rng([int(seed), int(draw), word])
    n = n_frames

    def draw_from(low: int, high: int, count: int) -> list[int]:
        if high <= low:
            return [min(low, n - 1)] * count
        return [int(i) for i in rng.integers(low, high, size=count)]

    if strategy == "uniform":
        return [draw_from(0, n, k)]
    if strategy == "segments":
        gap, each = n // 3, 6 // 3
        return [draw_from(0, gap, each) + draw_from(gap + 1, 2 * gap, each) + draw_from(2 * gap + 1, n, each)]
    gap = n // k
    return [draw_from(gap * c, gap * (c + 1), per_clip) for c in range(k)]


def _indices_from_pts(pts: Sequence[int], end: int, positions: list[list[Fraction]]) -> list[list[int]]:
    """Map positions to frame indices using sorted presentation timestamps and the end time."""
    import bisect

    start = pts[0]
    span = end - start
    out = []
    for clip in positions:
        idx = []
        for p in clip:
            # last frame with (pts - start) <= p * span, in exact rational arithmetic
            target = start + p * span
            i = bisect.bisect_right(pts, target) - 1
            idx.append(max(0, min(len(pts) - 1, i)))
        out.append(idx)
    return out


def _open(path: Path) -> Any:
    av = require("av", "video")
    if not path.exists():
        raise ItemError(f"{path}: video file not found")
    if not path.is_file():  # a FIFO would block the decoder, /dev/zero never ends
        raise ItemError(f"{path}: not a regular file (a FIFO, a device or a folder)")
    if path.stat().st_size == 0:
        raise ItemError(f"{path}: empty file")
    try:
        container = av.open(str(path))
    except Exception as exc:  # av raises many error types (InvalidDataError, OSError...)
        raise ItemError(f"{path}: unreadable video ({type(exc).__name__}: {exc})") from exc
    if not container.streams.video:
        kinds = ", ".join(sorted({s.type for s in container.streams})) or "no streams"
        container.close()
        raise ItemError(f"{path}: no video stream (found {kinds})")
    return container


def _scan(container: Any, path: Path) -> tuple[list[int], int, int]:
    """Presentation timestamps of all video packets (no decoding), the end time, the last duration."""
    stream = container.streams.video[0]
    pts: list[int] = []
    durations: list[int] = []
    try:
        for packet in container.demux(stream):
            if packet.pts is None:
                continue
            pts.append(int(packet.pts))
            durations.append(int(packet.duration or 0))
    except Exception as exc:
        raise ItemError(f"{path}: unreadable video data ({type(exc).__name__}: {exc})") from exc
    if not pts:
        raise ItemError(f"{path}: the video stream has no frames")
    order = sorted(range(len(pts)), key=pts.__getitem__)
    pts = [pts[i] for i in order]
    durations = [durations[i] for i in order]
    deltas = [b - a for a, b in zip(pts, pts[1:]) if b > a]
    last = durations[-1] or (sorted(deltas)[len(deltas) // 2] if deltas else 1)
    return pts, pts[-1] + last, last


def probe(path: str | Path) -> VideoInfo:
    """Frame count, duration, rate, size and rotation of a video without decoding it."""
    path = Path(path)
    container = _open(path)
    try:
        return _info(container, path, *_scan(container, path)[:2])
    finally:
        container.close()


def _info(container: Any, path: Path, pts: list[int], end: int, rotation: int = 0) -> VideoInfo:
    stream = container.streams.video[0]
    tb = stream.time_base or Fraction(1, 1)
    duration = float((end - pts[0]) * tb)
    deltas = {b - a for a, b in zip(pts, pts[1:])}
    width, height = stream.codec_context.width, stream.codec_context.height
    if rotation % 180:
        width, height = height, width
    return VideoInfo(path=str(path), n_frames=len(pts), duration_s=duration,
                     fps=len(pts) / duration if duration > 0 else 0.0, width=width, height=height,
                     rotation=rotation, variable_frame_rate=len(deltas) > 1)


def read_frames(path: str | Path, strategy: str = "segments", k: int = 6, per_clip: int = 6,
                size: int | None = None, *, sampling: str = "fixed", seed: int = 0, draw: int = 0) -> SampledFrames:
    """Sample frames from the video at ``path`` (see the module docs for the rules).

    ``k`` is the number of frames for ``uniform`` and the number of clips for ``clips``
    (ignored by ``segments``); ``size`` optionally resizes the shorter side. ``sampling="random"`` draws the
    frames as the public VMC encoder does, seeded by ``seed``, ``draw`` (e.g. the epoch) and the file's name.
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"unknown frame sampling {sampling!r}; valid: {', '.join(SAMPLINGS)}")
    path = Path(path)
    positions = frame_positions(strategy, k, per_clip)
    container = _open(path)
    try:
        pts, end, _ = _scan(container, path)
        if sampling == "random":
            clips = random_frame_indices(len(pts), strategy, k, per_clip, seed=seed, draw=draw, key=path.name)
        else:
            clips = _indices_from_pts(pts, end, positions)
        wanted = sorted({i for clip in clips for i in clip})
        decoded: dict[int, Image.Image] | None = None
        rotation = 0
        n = len(pts)
        if n > SEEK_MIN_FRAMES and n > 4 * len(wanted):
            got = _decode_seeking(container, pts, wanted, size)
            if got is not None:
                decoded, rotation = got
        if decoded is None:
            decoded, rotation, n = _decode_sequential(container, path, wanted, size)
        missing = [i for i in wanted if i not in decoded]
        if missing:
            raise ItemError(f"{path}: video is truncated: decoded {n} of {len(pts)} frames "
                            f"(frame {missing[0]} missing)")
        info = _info(container, path, pts, end, rotation)
    finally:
        container.close()
    return SampledFrames(path=str(path), strategy=strategy, clips=clips,
                         images=[[decoded[i] for i in clip] for clip in clips], info=info,
                         options={"k": k, "per_clip": per_clip, "size": size, "sampling": sampling,
                                  **({"seed": seed, "draw": draw} if sampling == "random" else {})})


SEEK_MIN_FRAMES = 64
"""Videos longer than this (and 4x longer than the frames wanted) are read by seeking."""
SEEK_GAP = 48
"""Wanted frames closer than this are reached by decoding on rather than seeking again."""


def _decode_sequential(container: Any, path: Path, wanted: list[int],
                       size: int | None) -> tuple[dict[int, Image.Image], int, int]:
    """Decode from the start up to the last wanted frame; frames counted in presentation order."""
    wanted_set = set(wanted)
    decoded: dict[int, Image.Image] = {}
    rotation = 0
    container.seek(0)
    n = 0
    try:
        for frame in container.decode(video=0):
            if n in wanted_set:
                rotation = int(getattr(frame, "rotation", 0) or 0)
                decoded[n] = _upright(frame.to_image(), rotation, size)
            n += 1
            if n > wanted[-1]:
                break
    except Exception as exc:
        raise ItemError(f"{path}: video is truncated or corrupt after {n} decoded frames "
                        f"({type(exc).__name__}: {exc})") from exc
    return decoded, rotation, n


def _decode_seeking(container: Any, pts: list[int], wanted: list[int],
                    size: int | None) -> tuple[dict[int, Image.Image], int] | None:
    """Seek to the keyframe before each run of wanted frames and decode on, matching frames by
    timestamp. Returns None (the caller decodes sequentially) when timestamps do not line up."""
    stream = container.streams.video[0]
    index = {p: i for i, p in enumerate(pts)}
    if len(index) != len(pts):
        return None
    runs: list[list[int]] = []
    for i in wanted:
        if runs and i - runs[-1][-1] <= SEEK_GAP:
            runs[-1].append(i)
        else:
            runs.append([i])
    decoded: dict[int, Image.Image] = {}
    rotation = 0
    try:
        for run in runs:
            want = set(run)
            container.seek(pts[run[0]], stream=stream, backward=True, any_frame=False)
            for frame in container.decode(stream):
                if frame.pts is None:
                    return None
                i = index.get(frame.pts)
                if i in want and i not in decoded:
                    rotation = int(getattr(frame, "rotation", 0) or 0)
                    decoded[i] = _upright(frame.to_image(), rotation, size)
                if frame.pts >= pts[run[-1]]:
                    break
            if not want <= decoded.keys():
                return None
    except Exception:
        return None
    return decoded, rotation


def _upright(image: Image.Image, rotation: int, size: int | None) -> Image.Image:
    if rotation % 360:
        image = image.rotate(rotation, expand=True)  # PyAV and PIL both count counter-clockwise
    if size:
        w, h = image.size
        scale = size / min(w, h)
        image = image.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BICUBIC)
    return image.convert("RGB")


def still_video(image: Image.Image | str | Path, k: int = 6) -> list[Image.Image]:
    """An image as a still video of ``k`` identical frames (stage-1 pretraining input)."""
    if not isinstance(image, Image.Image):
        try:
            with Image.open(image) as im:
                image = im.convert("RGB")
        except Exception as exc:
            raise ItemError(f"{image}: unreadable image ({type(exc).__name__}: {exc})") from exc
    return [image.copy() for _ in range(k)]
