"""The embedded default matcher: entity matching only, as a diagnostic baseline.

It compares the caption with the image's top ImageNet labels in MiniLM space, so it can tell
a cat from a rocket but has no access to what a scene implies ("begs" vs "sits"). On a probe set
it shows how far object matching alone gets, the failure mode CV-Probes is built to expose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.media.embedded import EmbeddedEncoder


class ObjectsMatcher:
    """p(match) = sigmoid(scale * (cos(caption, image labels) - threshold)).

    Defaults (threshold 0.3, scale 10) were set by looking at the shipped sample set: captions
    naming the pictured object score cosines around 0.35-0.6, unrelated ones below 0.2.
    """

    backend = "objects"

    def __init__(self, *, top_k: int | str = 5, threshold: float | str = 0.3, scale: float | str = 10.0,
                 device: str = "cpu") -> None:
        self.encoder = EmbeddedEncoder(top_k=int(top_k), device=device)
        self.threshold = float(threshold)
        self.scale = float(scale)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> ObjectsMatcher:
        if weights:
            raise ValueError("the objects baseline uses the embedded weights; give no weights after 'objects:'")
        return cls(**options)

    def describe(self) -> dict[str, Any]:
        d = {"backend": self.backend, **self.encoder.describe()}
        d["calibration"] = {"kind": "logistic", "threshold": self.threshold, "scale": self.scale}
        return d

    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> Any:
        """MM-SHAP over the caption's words (a masked word is dropped) and image patches (filled with mid
        grey, EfficientNet-Lite's zero after its [-1, 1] scaling), so the offline default can be explained."""
        from connote.models.masking import word_game

        return word_game(self, image, caption, grid=grid, compat=compat, masked_word="",
                         fill_rgb=(127.5, 127.5, 127.5))

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        if not pairs:
            return []
        used_i = sorted({i for i, _ in pairs})
        used_c = sorted({c for _, c in pairs})
        img = dict(zip(used_i, self.encoder.embed_images([images[i] for i in used_i])))
        txt = dict(zip(used_c, self.encoder.embed_texts([captions[c] for c in used_c])))
        out = []
        for i, c in pairs:
            cos = float((img[i] * txt[c]).sum())
            out.append(1.0 / (1.0 + math.exp(-self.scale * (cos - self.threshold))))
        return out
