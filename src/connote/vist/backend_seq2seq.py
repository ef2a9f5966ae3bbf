"""The VIST paper's GRU baseline (``connote vist train``) as a story generator.

The model and its decoding live in :mod:`connote.vist.seq2seq`; requests carry the sequence's photo
ids (``image_ids``), whose precomputed features come from the ``features`` .npz.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import ItemError
from connote.models.hub_identity import weights_identity
from connote.models.protocols import GenerationRequest


class Seq2SeqStoryGenerator:
    """The paper's GRU baseline over precomputed photo features."""

    backend = "seq2seq"  # works from photo ids (declared at its registration); photos only when grounding reads them
    needs_images = False

    def __init__(self, weights: str | None = None, *, features: str | None = None, decode: str = "greedy",
                 beam_size: int | str = 10, grounding: str | None = None, top_k: int | str = 5,
                 grounding_dii: str | None = None, grounding_sis: str | None = None, captioner: str | None = None,
                 n_best: int | str = 5) -> None:
        """``+Grounded`` as the paper defines it: ``grounding_dii``/``grounding_sis`` (the *training*
        descriptions and stories, which decide which words are groundable) and ``captioner`` (a folder of
        ``connote vist train-captioner``, whose ``n_best`` captions of the sequence's photos license them).
        ``grounding=objects`` licenses the embedded classifier's labels instead; ``grounding=DII.json``
        licenses the words of descriptions of the same photos — an oracle that reads human annotations of
        the evaluated photos, for upper bounds only."""
        from connote.vist.seq2seq import DECODERS, StoryModel, load_features

        if not weights or not features:
            raise ValueError("seq2seq needs a model folder and features: seq2seq:MODEL_DIR?features=F.npz")
        if decode not in DECODERS:
            raise ValueError(f"unknown decode {decode!r}; valid: {', '.join(DECODERS)}")
        self.weights, self.features_path, self.decode, self.beam_size = weights, features, decode, int(beam_size)
        self.model = StoryModel.load(weights)
        self.features = load_features(features)
        self.grounding: dict[str, list[str]] | None = None
        self.grounding_path = grounding
        self.grounder: Any = None
        self.paper_grounding: Any = None
        if grounding_dii or grounding_sis or captioner:
            from connote.vist.grounding import PaperGrounding

            self.paper_grounding = PaperGrounding.from_options(dii=grounding_dii, sis=grounding_sis,
                                                               captioner=captioner, features=self.features,
                                                               n_best=int(n_best))
        elif grounding == "objects":  # a grounding model: the embedded classifier's top labels per photo
            from connote.media.embedded import EmbeddedEncoder

            self.grounder = EmbeddedEncoder(top_k=int(top_k))
            self.needs_images = True
        elif grounding:
            from connote.vist.data import read_official

            vf = read_official(grounding)
            self.grounding = {p: [d.text for d in ds] for p, ds in vf.descriptions.items()}
        elif decode == "greedy-dups-grounded":
            raise ValueError("greedy-dups-grounded needs a grounding source: grounding_dii=TRAIN_DII.json&"
                             "grounding_sis=TRAIN_SIS.json&captioner=DIR (the paper's), or grounding=objects")

    @staticmethod
    def spec_needs(weights: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """Photos are read only to ground on the embedded classifier's labels (``grounding=objects`` without the
        paper's grounding); otherwise the photo ids are all it takes."""
        paper = any(options.get(k) for k in ("grounding_dii", "grounding_sis", "captioner"))
        return {"images": not paper and options.get("grounding") == "objects"}

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> Seq2SeqStoryGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        from connote.core.files import file_sha256

        features = Path(self.features_path).resolve()
        digest = file_sha256(features)[:16]
        return {"backend": self.backend, **weights_identity(self.weights, None, None), "decode": self.decode,
                "beam_size": self.beam_size, "features": str(features), "features_sha256": digest,
                "grounding": self.grounding_path, "encoder_order": getattr(self.model.config, "encoder_order", None),
                "paper_grounding": self.paper_grounding.describe() if self.paper_grounding is not None else None}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        from connote.vist.seq2seq import grounding_vocabulary, sequence_features

        out = []
        for r in requests:
            if not r.image_ids:
                raise ItemError("the seq2seq baseline needs the sequence's photo ids")
            feats = sequence_features(r.image_ids, self.features)
            licensed = grounding_vocabulary(r.image_ids, self.grounding) if self.grounding is not None else None
            if self.paper_grounding is not None:
                licensed = self.paper_grounding.licensed_words(r.image_ids)
            if self.grounder is not None:
                if not r.images:
                    raise ItemError("grounding=objects needs the photos")
                licensed = {w.lower() for labels in self.grounder.top_labels(r.images)
                            for label, _ in labels for w in label.replace(",", " ").split()}
            out.append(self.model.generate(feats, method=self.decode, beam_size=self.beam_size, grounded=licensed))
        return out


