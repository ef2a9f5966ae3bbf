"""CLIPScore and RefCLIPScore (Hessel et al., 2021) with an injected image-text encoder.

* CLIP-S(c, v) = w * max(cos(E_text(c), E_image(v)), 0), w = 2.5;
* RefCLIP-S = harmonic mean of CLIP-S and max(max_r cos(E_text(c), E_text(r)), 0).

The encoder is any :class:`~connote.models.protocols.Embedder` whose ``embed_texts`` and
``embed_images`` share one space (a CLIP model adapter); vectors are L2-normalised here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

W = 2.5


def _unit(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / np.where(n == 0, 1.0, n)


def clip_score(images: Sequence[Any], captions: Sequence[str], encoder: Any, *, w: float = W) -> dict[str, Any]:
    """Per-pair and mean CLIP-S for aligned images and captions."""
    if len(images) != len(captions):
        raise ValueError("images and captions differ in length")
    iv = _unit(encoder.embed_images(list(images)))
    tv = _unit(encoder.embed_texts(list(captions)))
    per = (w * np.clip((iv * tv).sum(axis=1), 0, None)).tolist()
    return {"CLIPScore": float(np.mean(per)) if per else 0.0, "per_item": per}


def ref_clip_score(images: Sequence[Any], captions: Sequence[str], references: Sequence[Sequence[str]],
                   encoder: Any, *, w: float = W) -> dict[str, Any]:
    """CLIP-S and RefCLIP-S (harmonic mean with the best reference similarity)."""
    clip = clip_score(images, captions, encoder, w=w)
    tv = _unit(encoder.embed_texts(list(captions)))
    flat = [r for rs in references for r in rs]
    rv = _unit(encoder.embed_texts(flat)) if flat else np.zeros((0, tv.shape[1]))
    ref_sims = []
    pos = 0
    for k, rs in enumerate(references):
        if not rs:
            raise ValueError(f"caption {k} has no references")
        block = rv[pos:pos + len(rs)]
        pos += len(rs)
        ref_sims.append(max(float((block @ tv[k]).max()), 0.0))
    per = []
    for c, r in zip(clip["per_item"], ref_sims):
        per.append(0.0 if c + r == 0 else 2 * c * r / (c + r))
    return {"CLIPScore": clip["CLIPScore"], "RefCLIPScore": float(np.mean(per)) if per else 0.0,
            "per_item_clip": clip["per_item"], "per_item_ref": per}


def signature(encoder: Any, w: float = W) -> str:
    from connote import __version__

    desc = getattr(encoder, "describe", None)
    name = desc().get("name", type(encoder).__name__) if callable(desc) else type(encoder).__name__
    return f"clipscore|encoder:{name}|w:{w:g}|version:connote-{__version__}"
