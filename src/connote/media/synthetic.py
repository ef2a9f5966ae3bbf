"""Small synthetic videos written with PyAV: test fixtures and demos (e.g. colour-coded clips).

``write_video`` writes one solid-colour frame per entry, optionally with explicit millisecond
timestamps (variable frame rate) and a display rotation; ``write_audio_only`` writes a file
with only an audio stream.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from connote.core.registry import require


def write_video(path: Path, levels: list[int], *, size: tuple[int, int] = (64, 48), fps: int = 10,
                pts: list[int] | None = None, rotation: int = 0, codec: str = "libx264",
                colours: list[tuple[int, int, int]] | None = None) -> Path:
    """Write one frame per grey ``level`` (or per RGB colour); ``pts`` in ms for variable rates."""
    av = require("av", "video")
    if codec == "libx264" and "libx264" not in av.codecs_available:
        codec = "mpeg4"  # PyAV builds without x264
    w, h = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "1", "preset": "ultrafast"}
        if pts is not None:
            stream.time_base = Fraction(1, 1000)
            stream.codec_context.time_base = Fraction(1, 1000)
        if rotation:
            stream.set_display_rotation(rotation)
        frames = colours if colours is not None else [(v, v, v) for v in levels]
        for i, colour in enumerate(frames):
            arr = np.empty((h, w, 3), np.uint8)
            arr[:] = colour
            frame = av.VideoFrame.from_ndarray(arr, format="rgb24")
            if pts is not None:
                frame.pts = pts[i]
                frame.time_base = Fraction(1, 1000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def write_audio_only(path: Path) -> Path:
    """A file with one short silent AAC audio stream and no video."""
    av = require("av", "video")
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        samples = np.zeros((1, 1024), np.float32)
        for _ in range(5):
            frame = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono")
            frame.sample_rate = 16000
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path
