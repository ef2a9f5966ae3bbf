"""Offline metaphor default: the first caption of the nearest training video by mean frame embedding
(EfficientNet-Lite0 + MiniLM, weights that packages ship)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.errors import InputError
from connote.models.protocols import GenerationRequest


class NearestCaptionGenerator:
    """Offline default: the first caption of the nearest training video by mean frame embedding."""

    backend = "nearest"

    def __init__(self, captions: str, *, videos: str | None = None, split: str | None = None,
                 embedder: Any = None, strategy: str = "segments") -> None:
        from connote.media.frames import read_frames
        from connote.vmc.data import load_vmc, read_split

        if not captions or not videos:
            raise InputError("nearest needs the caption table as weights and ?videos=FOLDER "
                             "(e.g. nearest:vmc.csv?videos=videos&split=train.txt)")
        if embedder is None:
            from connote.media.embedded import EmbeddedEncoder

            embedder = EmbeddedEncoder()
        self.embedder = embedder
        self.strategy = strategy
        data = load_vmc(captions, videos)
        items = data.subset(read_split(split)) if split else data.items  # type: ignore[arg-type]
        self.captions: list[str] = []
        vectors = []
        for it in items:
            if not it.captions or it.path is None:
                continue
            try:
                frames = read_frames(it.path, strategy).frames
            except Exception:  # an unreadable training video is left out
                continue
            vectors.append(self._embed(frames))
            self.captions.append(it.captions[0])
        if not vectors:
            raise InputError("no readable captioned training videos for the nearest-caption generator",
                             path=captions)
        import numpy as np

        self.matrix = np.stack(vectors)
        self.source = {"captions": str(captions), "videos": str(videos), "split": split, "n": len(vectors)}

    def _embed(self, frames: Sequence[Image.Image]) -> Any:
        import numpy as np

        v = np.asarray(self.embedder.embed_images(list(frames)), dtype=np.float32).mean(0)
        return v / max(float(np.linalg.norm(v)), 1e-12)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> NearestCaptionGenerator:
        return cls(weights or "", **options)

    @staticmethod
    def spec_needs(weights: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """Six frames per clip, drawn by ``strategy``."""
        return {"frames": (options["strategy"], 6, 6)}

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return self.spec_needs(None, {"strategy": self.strategy})["frames"]

    def describe(self) -> dict[str, Any]:
        desc = getattr(self.embedder, "describe", lambda: {"embedder": type(self.embedder).__name__})()
        return {"backend": "nearest", **self.source, "embedder": desc, "strategy": self.strategy}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        out = []
        for r in requests:
            if not r.images:
                raise InputError("the nearest-caption generator needs the video's frames")
            out.append(self.captions[int((self.matrix @ self._embed(r.images)).argmax())])
        return out


