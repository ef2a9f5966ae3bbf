"""Random frames as the public VMC video encoder draws them: seeded, re-drawn per epoch, fixed per run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from connote.media.frames import random_frame_indices, read_frames
from connote.media.synthetic import write_video


def test_segments_draw_two_frames_in_each_public_interval() -> None:
    n = 90  # gap 30: [0, 30), [31, 60), [61, 90) as the public encoder's randint bounds
    for draw in range(50):
        (idx,) = random_frame_indices(n, "segments", seed=3, draw=draw, key="v.mp4")
        assert len(idx) == 6
        assert all(0 <= i < 30 for i in idx[:2]) and all(31 <= i < 60 for i in idx[2:4])
        assert all(61 <= i < 90 for i in idx[4:])
    # seeded: the same seed, draw and video give the same frames; another draw (epoch) or video others
    a = random_frame_indices(n, "segments", seed=3, draw=0, key="v.mp4")
    assert a == random_frame_indices(n, "segments", seed=3, draw=0, key="v.mp4")
    assert a != random_frame_indices(n, "segments", seed=3, draw=1, key="v.mp4")
    assert a != random_frame_indices(n, "segments", seed=3, draw=0, key="w.mp4")


def test_clips_draw_six_frames_in_each_of_k_parts() -> None:
    clips = random_frame_indices(100, "clips", k=4, per_clip=6, seed=0, key="x")
    assert [len(c) for c in clips] == [6, 6, 6, 6]
    for c, idx in enumerate(clips):
        assert all(25 * c <= i < 25 * (c + 1) for i in idx)
    draws = np.array([random_frame_indices(100, "clips", k=4, seed=0, draw=d, key="x")[0] for d in range(400)])
    assert set(np.unique(draws)) == set(range(25))  # uniform over the part, with replacement, as randint


def test_short_videos_and_read_frames(tmp_path: Path) -> None:
    assert random_frame_indices(2, "segments", seed=0, key="s") == [[0, 0, 1, 1, 1, 1]]  # empty intervals
    video = write_video(tmp_path / "v.mp4", list(range(0, 240, 8)))  # 30 frames
    a = read_frames(video, "segments", sampling="random", seed=1, draw=0)
    b = read_frames(video, "segments", sampling="random", seed=1, draw=0)
    c = read_frames(video, "segments", sampling="random", seed=1, draw=1)
    assert a.indices == b.indices == random_frame_indices(30, "segments", seed=1, draw=0, key="v.mp4")[0]
    assert a.indices != c.indices
    assert a.options["sampling"] == "random" and a.options["seed"] == 1
    fixed = read_frames(video, "segments")
    assert fixed.options["sampling"] == "fixed" and fixed.indices == [3, 6, 13, 16, 23, 26]
