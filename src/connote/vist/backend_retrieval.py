"""Offline story baseline: the training story whose photos are closest to the query photos.

Nearest neighbour in the embedded encoders' space (EfficientNet-Lite0 + MiniLM,
``connote.media.embedded``, or any ``Embedder``). Training stories are indexed by their storylets'
text embeddings (the encoders share MiniLM space, so no training images are needed) or, with training
images, by the photos' image embeddings. Similarity = mean over positions of the cosine between the
i-th query photo and the i-th indexed item; ties go to the earliest story.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from connote.core.errors import ItemError
from connote.models.protocols import GenerationRequest


class RetrievalStoryGenerator:
    """Nearest training story in the embedded encoders' space (see module docstring)."""

    backend = "retrieval"
    needs_images = True
    capabilities = frozenset({"generate"})

    def __init__(self, embedder: Any, stories: Sequence[tuple[Sequence[str], Sequence[str]]], *,
                 index_by: str = "text", train_images: Callable[[str], Image.Image] | None = None,
                 batch_size: int = 256, cache: str | Path | None = None, images_sha: str | None = None) -> None:
        """``stories``: (photo ids, storylet texts) of the training stories, in order.

        ``cache``: a folder where the index is kept (``<key>.npz``, the key hashing the embedder's
        description, ``index_by``, the stories and ``images_sha``, the digest of the training photos an image
        index embeds) and reused (embedding a training split takes a while on a CPU).
        """
        if not stories:
            raise ValueError("the retrieval baseline needs at least one training story")
        if index_by not in ("text", "image"):
            raise ValueError("index_by must be 'text' or 'image'")
        if index_by == "image" and train_images is None:
            raise ValueError("index_by='image' needs train_images (photo id -> image)")
        self.embedder, self.index_by = embedder, index_by
        self.stories = [(tuple(p), [str(t) for t in ts]) for p, ts in stories]
        self.length = min(len(ts) for _, ts in self.stories)
        self._sha = hashlib.sha256(json.dumps(self.stories).encode()).hexdigest()[:12]
        self.images_sha = images_sha
        key = hashlib.sha256(json.dumps([self.describe_embedder(), index_by, self._sha]
                                        + ([images_sha] if images_sha else []),
                                        sort_keys=True, default=str).encode()).hexdigest()[:16]
        cached = Path(cache) / f"{key}.npz" if cache else None
        if cached is not None and cached.is_file():
            with np.load(cached, allow_pickle=False) as z:
                self.index = z["index"]
            return
        items: list[Any] = []
        for photos, texts in self.stories:
            items.extend(texts[: self.length] if index_by == "text" else photos[: self.length])
        chunks = []
        for i in range(0, len(items), batch_size):
            part = items[i:i + batch_size]
            if index_by == "text":
                chunks.append(np.asarray(embedder.embed_texts(part), dtype=np.float32))
            else:
                chunks.append(np.asarray(embedder.embed_images([train_images(p) for p in part]), dtype=np.float32))
        emb = np.concatenate(chunks)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True).clip(1e-12)
        self.index = emb.reshape(len(self.stories), self.length, -1)
        if cached is not None:
            try:  # best effort: an unwritable cache only costs time
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(cached.stem + ".tmp.npz")
                np.savez(tmp, index=self.index)
                tmp.replace(cached)
            except OSError:
                pass

    def describe_embedder(self) -> Any:
        describe = getattr(self.embedder, "describe", None)
        return describe() if callable(describe) else repr(self.embedder)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "embedder": self.describe_embedder(),
                "index_by": self.index_by, "n_stories": len(self.stories), "stories_sha": self._sha,
                **({"images_sha": self.images_sha} if self.images_sha else {})}

    def nearest(self, images: Sequence[Image.Image]) -> tuple[int, float]:
        q = np.asarray(self.embedder.embed_images(list(images)), dtype=np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True).clip(1e-12)
        n = min(len(q), self.length)
        sims = np.einsum("sid,id->si", self.index[:, :n], q[:n]).mean(axis=1)
        best = int(np.argmax(sims))
        return best, float(sims[best])

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        out = []
        for r in requests:
            if not r.images:
                raise ItemError("the retrieval baseline needs the sequence's photos")
            best, _ = self.nearest(r.images)
            out.append(" ".join(self.stories[best][1]))
        return out


def retrieval_from_spec(weights: str | None = None, *, train: str | None = None, index_by: str = "text",
                        images: str | None = None, embedder: Any = None, cache: str | None = None,
                        **options: Any) -> RetrievalStoryGenerator:
    """``retrieval?train=SIS.json[&index_by=image&images=DIR][&cache=INDEX.npz]``.

    The embedder defaults to the embedded one (EfficientNet-Lite0 + MiniLM). The index is cached in
    ``cache`` (a folder; default ``$CONNOTE_CACHE/vist-retrieval`` or ``~/.cache/connote/vist-retrieval``;
    ``cache=none`` turns it off).
    """
    train = train or weights
    if not train:
        raise ValueError("retrieval needs training stories: retrieval?train=TRAIN.story-in-sequence.json")
    from connote.vist.data import read_official

    vf = read_official(train)
    from connote.media.photos import find_image
    stories = [(s.photo_ids, [sl.text for sl in s.storylets]) for s in vf.stories if s.storylets]
    if embedder is None:
        from connote.media.embedded import EmbeddedEncoder

        embedder = EmbeddedEncoder(**options)
    loader = None
    images_sha = None
    if index_by == "image":
        if not images:
            raise ValueError("index_by=image needs images=DIR with the training photos")
        from connote.core.files import file_sha256
        from connote.media.images import load_image

        def loader(pid: str) -> Image.Image:
            return load_image(find_image(images, pid))

        # the index is made of these photos: their bytes key the cached index and the fingerprint
        def photo_sha(pid: str) -> str | None:
            try:
                return file_sha256(find_image(images, pid))
            except (ItemError, OSError):  # the index build names the missing photo
                return None

        used = sorted({pid for s in stories for pid in s[0]})
        images_sha = hashlib.sha256(json.dumps([[pid, photo_sha(pid)] for pid in used]).encode()).hexdigest()[:16]

    if cache is None:
        import os

        cache = str(Path(os.environ.get("CONNOTE_CACHE") or Path.home() / ".cache" / "connote") / "vist-retrieval")
    elif cache.lower() in ("none", "off", ""):
        cache = None
    return RetrievalStoryGenerator(embedder, stories, index_by=index_by, train_images=loader, cache=cache,
                                   images_sha=images_sha)


