"""RoViST-VG, the visual-grounding part of RoViST (Wang et al., Findings of NAACL 2022; usydnlp/rovist).

As its public scripts compute it:

1. ``extract_nouns.py``: per sentence, VIST's placeholders mapped to words (``[male]`` -> ``male``, ...), the
   tokens tagged ``NN``, ``NNS``, ``NNP`` or ``NNPS`` kept as written except the token ``i``, each once per
   sentence; the story's nouns are the sentences' sets one after another (a noun of two sentences counts twice);
2. ``visual_grounding_scorer.py``: each noun's and each image region's embedding in RoViST-VG's joint space,
   L2-normalised; per photo the best cosine over its first ten regions, then the best over the photos;
3. ``vg_score``: ``log(sum(exp(recall * w)))`` over the nouns, ``w`` the noun's IDF weight (its ``--use_idf``,
   on by default, reads ``idf_dict.pkl``) or 1.

Its model (``Region2PhraseModel``): a noun is its GloVe 6B-300d vector (``unk``'s when it has none) through a
linear layer and tanh; a region is ViT-B/16 (``google/vit-base-patch16-224-in21k``)'s pooled output through a
linear layer and tanh. :class:`RovistVgEncoder` loads the released checkpoint (``r2p_model_epoch2.pth.tar``) with
a GloVe text file as that model; any other encoder is a stand-in, named so in the signature. So are the parts
that cannot run here: NLTK's perceptron tagger (a download) by the spaCy pipeline's fine-grained tags, punkt by
the regex sentence split, the VIST-Entities detector boxes by the whole photo and a 3 x 3 grid. The IDF table is
a pickle, which connote does not load: give its content as JSON (``{"noun": idf}``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_json
from connote.vist.story_text import placeholders_to_words, sentences

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
#: The image model RoViST-VG's ImageEncoder loads (its config and processor here; its weights are the checkpoint's).
RELEASE_VIT = "google/vit-base-patch16-224-in21k"


def nouns(text: str, nlp: Any) -> list[str]:
    """RoViST-VG's nouns of a story (step 1 of the module docstring), with the spaCy pipeline's tags."""
    found: list[str] = []
    for sent in sentences(text):
        tokens = nlp(placeholders_to_words(sent))
        found.extend(dict.fromkeys(t.text for t in tokens if t.tag_ in NOUN_TAGS and t.text != "i"))
    return found


def vg_score(recall: Sequence[float], weights: Sequence[float]) -> float | None:
    """``log(sum(exp(recall * weight)))`` over the nouns (the release's ``log_sum_exp`` aggregate); None for none."""
    if not recall:
        return None
    values = [float(r) * float(w) for r, w in zip(recall, weights)]
    top = max(values)  # the same sum, without overflow
    return top + math.log(sum(math.exp(v - top) for v in values))


def read_idf(path: str | Path) -> dict[str, float]:
    """IDF weights as a JSON object ``{"noun": idf}`` (RoViST's ``idf_dict.pkl``, converted by its user)."""
    path = Path(path)
    data = read_json(path, what="IDF weights file")  # one JSON reader: a duplicated noun is refused
    if not isinstance(data, dict) or not data:
        raise InputError('expected a JSON object of IDF weights, {"noun": idf, ...}', path=path)
    bad = [k for k, v in data.items() if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if bad:
        raise InputError(f"IDF weight of {bad[0]!r} is not a number: {json.dumps(data[bad[0]])[:40]}", path=path)
    return {str(k): float(v) for k, v in data.items()}


def read_glove(path: str | Path, dim: int) -> dict[str, Any]:
    """A GloVe text file (``word v1 ... vD`` per line) as ``{word: float32 vector}``; must hold ``unk``."""
    import numpy as np

    path = Path(path)
    vectors: dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                parts = line.rstrip().split(" ")
                if len(parts) != dim + 1:
                    raise InputError(f"expected a word and {dim} numbers, got {len(parts)} fields", path=path, line=n)
                vectors[parts[0]] = np.asarray(parts[1:], dtype=np.float32)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read the GloVe vectors ({exc})", path=path) from None
    if "unk" not in vectors:
        raise InputError("no 'unk' vector (RoViST-VG embeds a word it lacks as 'unk')", path=path)
    return vectors


class RovistVgEncoder:
    """RoViST-VG's ``Region2PhraseModel`` from its released checkpoint: an Embedder whose texts are single nouns.

    ``checkpoint``: the training state its script saves (``{"epoch", "model": state_dict, "valid_loss",
    "train_loss"}``), read with ``torch.load(weights_only=True)`` (no code runs); ``glove``: the GloVe text file
    the model was trained on (glove.6B.300d.txt); ``vit``: a hub id or folder with the ViT's config and image
    processor (its weights come from the checkpoint). Embeddings are returned unnormalised (tanh outputs).
    """

    def __init__(self, checkpoint: str | Path, *, glove: str | Path, vit: str = RELEASE_VIT, device: str = "cpu",
                 batch_size: int = 32) -> None:
        from connote.core.files import file_sha256
        from connote.core.registry import require

        transformers = require("transformers", "hf")
        torch = self.torch = require("torch", "hf")
        self.checkpoint, self.vit, self.device, self.batch_size = Path(checkpoint), str(vit), device, int(batch_size)
        try:
            state = torch.load(str(checkpoint), map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, EOFError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"cannot read the RoViST-VG checkpoint ({first[:200]})", path=checkpoint) from None
        weights = state.get("model") if isinstance(state, dict) else None
        if not isinstance(weights, dict) or "text_encoder.linear.weight" not in weights:
            raise InputError("not a RoViST-VG checkpoint (expected model.text_encoder.linear.* and "
                             "model.image_encoder.*)", path=checkpoint)
        self.text_linear = self._linear(weights, "text_encoder.linear")
        self.image_linear = self._linear(weights, "image_encoder.linear")
        self.vectors = read_glove(glove, int(self.text_linear.in_features))
        self.processor = transformers.ViTImageProcessor.from_pretrained(self.vit)
        vit_model = transformers.ViTModel(transformers.ViTConfig.from_pretrained(self.vit))
        prefix = "image_encoder.image_model."
        missing, unexpected = vit_model.load_state_dict(
            {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}, strict=False)
        if missing or unexpected:
            raise InputError(f"the checkpoint's ViT does not fit {self.vit} (missing {', '.join(missing[:3]) or 'none'}"
                             f"; unexpected {', '.join(unexpected[:3]) or 'none'})", path=checkpoint)
        self.image_model = vit_model.to(device).eval()
        self.sha256 = file_sha256(self.checkpoint)

    def _linear(self, weights: Mapping[str, Any], name: str) -> Any:
        w = weights[f"{name}.weight"]
        linear = self.torch.nn.Linear(w.shape[1], w.shape[0])
        linear.load_state_dict({"weight": w, "bias": weights[f"{name}.bias"]})
        return linear.to(self.device).eval()

    def describe(self) -> dict[str, Any]:
        return {"name": f"rovist-vg:{self.checkpoint.name}@{self.sha256[:12]}+{self.vit}",
                "checkpoint": str(self.checkpoint), "sha256": self.sha256, "vit": self.vit}

    def embed_texts(self, texts: Sequence[str]) -> Any:
        import numpy as np

        rows = np.stack([self.vectors.get(t, self.vectors["unk"]) for t in texts])
        with self.torch.inference_mode():
            out = self.torch.tanh(self.text_linear(self.torch.from_numpy(rows).to(self.device)))
        return out.float().cpu().numpy()

    def embed_images(self, images: Sequence[Any]) -> Any:
        import numpy as np

        out = []
        for i in range(0, len(images), self.batch_size):
            pixels = self.processor(images=[im.convert("RGB") for im in images[i:i + self.batch_size]],
                                    return_tensors="pt")["pixel_values"].to(self.device)
            with self.torch.inference_mode():
                pooled = self.image_model(pixel_values=pixels).pooler_output
                out.append(self.torch.tanh(self.image_linear(pooled)).float().cpu().numpy())
        return np.concatenate(out)
