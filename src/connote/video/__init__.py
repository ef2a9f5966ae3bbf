"""Video input: sampled frames with PyAV (see ``connote.video.frames`` for the sampling rules)."""

from connote.video.frames import (
    STRATEGIES,
    SampledFrames,
    VideoInfo,
    frame_indices,
    frame_positions,
    probe,
    read_frames,
    still_video,
)

__all__ = ["STRATEGIES", "SampledFrames", "VideoInfo", "frame_indices", "frame_positions", "probe",
           "read_frames", "still_video"]
