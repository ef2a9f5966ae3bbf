"""Image-text embedders for reference-free metrics (GROOViST, CLIPScore): the embedded encoder, or a registered
dual-encoder backend (``hf-clip:ID``) used as an :class:`~connote.models.protocols.Embedder`.

``embedder_from_spec("embedded")`` is the offline EfficientNet-Lite0 labels + MiniLM encoder; any other spec
is loaded through the model registry and must have unimodal encoders in one space (``encode_images`` and
``encode_texts``, as ``hf-clip`` has); its ``describe()`` (weights, commit) names it in signatures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.errors import InputError


class MatcherEmbedder:
    """A dual-encoder matcher (``encode_images``/``encode_texts``) as an Embedder; unit vectors, numpy."""

    def __init__(self, matcher: Any, batch_size: int = 32) -> None:
        self.matcher, self.batch_size = matcher, int(batch_size)

    def describe(self) -> dict[str, Any]:
        d = self.matcher.describe()
        return {"name": f"{d.get('backend')}:{d.get('weights')}@{str(d.get('commit') or d.get('sha256') or '')[:12]}",
                **d}

    def embed_images(self, images: Sequence[Image.Image]) -> Any:
        import numpy as np

        out = []
        torch = self.matcher.torch
        for i in range(0, len(images), self.batch_size):
            with torch.inference_mode():
                v = self.matcher.encode_images(self.matcher.pixel_values(list(images[i:i + self.batch_size])))
            out.append(v.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0))

    def embed_texts(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = []
        torch = self.matcher.torch
        for i in range(0, len(texts), self.batch_size):
            ids, mask = self.matcher.pad(self.matcher.token_ids(list(texts[i:i + self.batch_size])))
            with torch.inference_mode():
                v = self.matcher.encode_texts(ids, mask)
            out.append(v.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0))


def embedder_from_spec(spec: str | None) -> Any:
    """``embedded`` (default) or a model spec of a dual encoder (``hf-clip:openai/clip-vit-base-patch32``)."""
    if not spec or spec == "embedded":
        from connote.media.embedded import EmbeddedEncoder

        return EmbeddedEncoder()
    from connote.models.registry import load_model

    model = load_model(spec)
    if not (hasattr(model, "encode_images") and hasattr(model, "encode_texts")):
        raise InputError(f"encoder {spec!r} has no image and text encoders in one space (use embedded or hf-clip)")
    return MatcherEmbedder(model)
