"""Reference-free story metrics: visual grounding (GROOViST, RoViST-VG), coherence and non-redundancy (RoViST).

No reference story is needed: a story is scored against its photo sequence (grounding) or against itself.

**GROOViST** (Surikuchi et al., EMNLP 2023; :mod:`connote.vist.groovist` has its phrases, weights and score as
its public code computes them): each noun phrase's best alignment with the photo sequence, the cosine between the
phrase's text embedding and each image *region*'s embedding, maximum over the regions of a photo and then over
**all** photos of the sequence (the paper's answer to temporal misalignment; ``alignment="sentence"`` restricts
sentence *i*'s phrases to photo *i*, a named variant), penalised below ``theta``, concreteness-weighted and
averaged (not bounded; ``tanh`` maps it to [-1, 1]).

**RoViST-VG** (Wang et al. 2022; :mod:`connote.vist.rovist_vg`): the story's nouns against the same regions,
``log(sum(exp(best cosine x idf)))``.

GROOViST's exact resources are CLIP ViT-B/32 and B = 10 detector boxes per photo, RoViST-VG's its
Region2Phrase model and the VIST-Entities boxes. Here the image-text encoder is injected (any
:class:`~connote.models.protocols.Embedder`; offline the embedded EfficientNet-Lite0 labels + MiniLM encoder;
RoViST-VG's released checkpoint through :class:`~connote.vist.rovist_vg.RovistVgEncoder`), the regions are the
whole photo plus a 3 x 3 grid of crops (ten regions) unless boxes are given (the first ten of a photo's boxes
are used, as both releases do), the concreteness ratings and IDF weights are read from files when given. Each
signature names what was used and, under ``stand-ins:``, every part that replaces the release's own.

**RoViST-C** (Wang et al., Findings of NAACL 2022, ``coherence_scorer.py``): for each pair of consecutive
sentences, the probability that the second follows the first from an ALBERT sentence-order-prediction head;
a sentence repeating its predecessor scores 0; the story's score is the mean over its pairs.
``prefix="accumulated"`` is the dHM variant (Surikuchi et al. 2024, ``eval_C_R.py``: everything before the
sentence is the first segment, except a sentence that repeated the prefix, which scored 0 and was not added).
RoViST's released checkpoint (``sop_model_epoch4.pth.tar``) is loaded when given
(:class:`RovistCheckpointScorer`: tensors and an ``argparse.Namespace`` only, no code runs); so is any Hugging
Face model with a sentence-order head (``AlbertForPreTraining``: ``sop_logits``, index 0 = in order; ALBERT's
pre-training head, not RoViST's fine-tuned one, so the signature marks it a stand-in); offline the stand-in is
the cosine of the two segments' sentence embeddings (the embedded MiniLM), named so in the signature.

**RoViST-NR** (``non_redun_scorer.py``): the words of each sentence without its last token; inter-sentence
repetition = for every pair of sentences (j < i), the number of matching word pairs over the size of the
union of their word sets; intra-sentence repetition = the same between consecutive non-overlapping 4-word
windows of a sentence; ``NR = 1 - mean(mean(inter), mean(intra) or 0)``. A one-sentence story has no score.

Sentences and words are cut as :mod:`connote.vist.story_text` says (NLTK's punkt, which the public code uses,
needs a download).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.errors import InputError
from connote.vist.groovist import (  # noqa: F401  (read_concreteness, GROOVIST_THETA: this module's API too)
    CLIP_SCALE,
    GROOVIST_THETA,
    RELEASE_PIPELINE,
    concreteness_weight,
    groovist_score,
    noun_phrases,
    pipeline_name,
    read_concreteness,
)
from connote.vist.rovist_vg import RovistVgEncoder, nouns, vg_score
from connote.vist.story_text import sentences, words

GROOVIST, ROVIST_VG, ROVIST_C, ROVIST_NR = "GROOViST", "RoViST-VG", "RoViST-C", "RoViST-NR"
STORY_METRICS = {"groovist": GROOVIST, "rovist_vg": ROVIST_VG, "rovist_c": ROVIST_C, "rovist_nr": ROVIST_NR}
"""Metric name -> printed score name."""

GRID = 3
#: Regions per photo both releases use (``B=10`` in GROOViST, ``num_bbox = 10`` in RoViST-VG).
REGIONS = 10


def _pair_matches(a: Sequence[str], b: Sequence[str]) -> int:
    """Matching (a_i, b_j) word pairs, as RoViST-NR counts its "intersection"."""
    counts: dict[str, int] = {}
    for w in b:
        counts[w] = counts.get(w, 0) + 1
    return sum(counts.get(w, 0) for w in a)


def non_redundancy(text: str, ngram_len: int = 4) -> float | None:
    """RoViST-NR of one story (see the module docstring); None for a story of fewer than two sentences."""
    toks = [words(s)[:-1] for s in sentences(text)]
    inter = []
    for i in range(1, len(toks)):
        for j in range(i):
            union = len(set(toks[i]) | set(toks[j]))
            if union:
                inter.append(_pair_matches(toks[i], toks[j]) / union)
    intra = []
    for t in toks:
        for i in range(0, len(t), ngram_len):
            prev, nxt = t[i:i + ngram_len], t[i + ngram_len:i + 2 * ngram_len]
            if not nxt:
                continue
            intra.append(_pair_matches(prev, nxt) / len(set(prev) | set(nxt)))
    if not inter:
        return None
    return float(1.0 - np.mean([np.mean(inter), np.mean(intra) if intra else 0.0]))


# ------------------------------------------------------------------------------------------- coherence
def coherence_pairs(text: str, prefix: str = "previous") -> list[tuple[str, str]]:
    """The (first segment, next sentence) pairs RoViST-C scores: the ``previous`` sentence, or everything before
    (``accumulated``, d_HM's ``eval_C_R.py``: a sentence equal to the prefix so far scores 0 and is not added to
    it, so a repeated opening sentence does not enter the prefix twice)."""
    sents = sentences(text)
    out: list[tuple[str, str]] = []
    first = sents[0] if sents else ""
    for k in range(1, len(sents)):
        if prefix == "previous":
            first = sents[k - 1]
        out.append((first, sents[k]))
        if prefix == "accumulated" and first.strip() != sents[k].strip():
            first = f"{first} {sents[k]}"
    return out


def coherence(text: str, pair_probability: Callable[[list[tuple[str, str]]], Sequence[float]],
              prefix: str = "previous") -> float | None:
    """RoViST-C of one story; ``pair_probability(pairs)`` -> P(in order) per pair. None for one sentence."""
    pairs = coherence_pairs(text, prefix)
    if not pairs:
        return None
    todo = [p for p in pairs if p[0].strip() != p[1].strip()]
    probs = iter(pair_probability(todo) if todo else [])
    return float(np.mean([0.0 if a.strip() == b.strip() else float(next(probs)) for a, b in pairs]))


class SopPairScorer:
    """P(in order) of sentence pairs from a sentence-order-prediction head (``sop_logits``), Hugging Face weights.

    ``weights``: a hub id or local folder of an ``AlbertForPreTraining`` (or any model whose output has
    ``sop_logits``); ``in_order_index``: the class meaning "in order" (0 in ALBERT's pre-training labels).
    """

    def __init__(self, weights: str, *, in_order_index: int = 0, device: str = "cpu", batch_size: int = 16,
                 max_length: int = 256) -> None:
        from connote.core.registry import require

        transformers = require("transformers", "hf")
        self.torch = require("torch", "hf")
        self.weights, self.in_order_index, self.device = str(weights), int(in_order_index), device
        self.batch_size, self.max_length = int(batch_size), int(max_length)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.weights)
        self.model = transformers.AlbertForPreTraining.from_pretrained(self.weights).to(device).eval()

    def name(self) -> str:
        return f"sop:{self.weights}[{self.in_order_index}]"

    def __call__(self, pairs: list[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for i in range(0, len(pairs), self.batch_size):
            part = pairs[i:i + self.batch_size]
            enc = self.tokenizer([a for a, _ in part], [b for _, b in part], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt").to(self.device)
            with self.torch.inference_mode():
                out.extend(self.probabilities(enc))
        return out

    def probabilities(self, enc: Any) -> list[float]:
        """P(in order) of one tokenized batch of pairs."""
        return self.model(**enc).sop_logits.float().softmax(-1)[:, self.in_order_index].tolist()


class RovistCheckpointScorer(SopPairScorer):
    """RoViST-C's released classifier (``sop_model_epoch4.pth.tar``): ALBERT's pooled output, a linear layer to
    two classes, P(coherent) at index 1, as its ``coherence_scorer.py``.

    The checkpoint is a torch training state (``{"model": state_dict, "opt": argparse.Namespace, ...}``); it is
    read with ``torch.load(weights_only=True)``, allowing only ``argparse.Namespace`` beside tensors, so loading
    it runs no code. ``albert``: the ALBERT the classifier was trained on (config and tokenizer; RoViST's is
    ``albert-large-v1``), a hub id or a local folder.
    """

    def __init__(self, checkpoint: str | Path, *, albert: str = "albert-large-v1", device: str = "cpu",
                 batch_size: int = 16, max_length: int = 256) -> None:
        import argparse
        import pickle

        from connote.core.registry import require

        transformers = require("transformers", "hf")
        torch = self.torch = require("torch", "hf")
        self.weights, self.in_order_index, self.device = f"{Path(checkpoint).name}+{albert}", 1, device
        self.batch_size, self.max_length = int(batch_size), int(max_length)
        try:
            with torch.serialization.safe_globals([argparse.Namespace]):
                state = torch.load(str(checkpoint), map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"cannot read the RoViST-C checkpoint ({first})", path=checkpoint) from None
        weights = state.get("model") if isinstance(state, dict) else None
        if not isinstance(weights, dict) or "linear.weight" not in weights:
            raise InputError("not a RoViST-C checkpoint (expected model.linear.* and model.albert_model.*)",
                             path=checkpoint)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(albert)
        albert_model = transformers.AlbertModel(transformers.AutoConfig.from_pretrained(albert))
        albert_model.load_state_dict({k.removeprefix("albert_model."): v for k, v in weights.items()
                                      if k.startswith("albert_model.")}, strict=False)
        linear = torch.nn.Linear(weights["linear.weight"].shape[1], 2)
        linear.load_state_dict({"weight": weights["linear.weight"], "bias": weights["linear.bias"]})
        self.albert, self.linear = albert_model.to(device).eval(), linear.to(device).eval()

    def name(self) -> str:
        return f"rovist-checkpoint:{self.weights}[1]"

    def probabilities(self, enc: Any) -> list[float]:
        return self.linear(self.albert(**enc).pooler_output).float().softmax(-1)[:, 1].tolist()


class EmbeddingPairScorer:
    """The offline stand-in for the SOP head: cosine of the two segments' sentence embeddings."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder

    def name(self) -> str:
        return f"embedding-cosine:{encoder_name(self.encoder)}"

    def __call__(self, pairs: list[tuple[str, str]]) -> list[float]:
        texts = list(dict.fromkeys(t for p in pairs for t in p))
        vecs = _unit(self.encoder.embed_texts(texts))
        row = {t: i for i, t in enumerate(texts)}
        return [float(vecs[row[a]] @ vecs[row[b]]) for a, b in pairs]


# ------------------------------------------------------------------------------------------- grounding
def grid_regions(image: Any, grid: int = GRID) -> list[Any]:
    """The whole photo and its ``grid`` x ``grid`` crops (ten regions for a 3 x 3 grid)."""
    w, h = image.size
    out = [image]
    for r in range(grid):
        for c in range(grid):
            box = (c * w // grid, r * h // grid, (c + 1) * w // grid, (r + 1) * h // grid)
            out.append(image.crop(box))
    return out


def _unit(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / np.where(n == 0, 1.0, n)


def encoder_name(encoder: Any) -> str:
    """A short name of an encoder for signatures (its ``describe()``, compacted)."""
    desc = getattr(encoder, "describe", None)
    if not callable(desc):
        return type(encoder).__name__
    d = desc()
    if isinstance(d, Mapping):
        if d.get("name"):
            return str(d["name"])
        return "+".join(f"{v}" for k, v in sorted(d.items()) if k in ("backend", "weights", "image_encoder",
                                                                       "text_encoder", "top_k")) or json.dumps(d)
    return str(d)


# ------------------------------------------------------------------------------------------- the scorer
@dataclass
class StoryScores:
    """Per-story scores ``{story id: {score name: value}}``, a signature per metric, and per-story notes."""

    per_story: dict[str, dict[str, float]]
    signatures: dict[str, str]
    notes: dict[str, list[str]] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)

    def means(self) -> dict[str, float]:
        names = sorted({m for row in self.per_story.values() for m in row})
        return {m: float(np.mean([r[m] for r in self.per_story.values() if m in r])) for m in names}


def _version() -> str:
    from connote import __version__

    return f"connote-{__version__}"


class StoryScorer:
    """Computes the chosen reference-free metrics for stories (``{id: (photo ids, text)}``).

    ``encoder``: image-text embedder for GROOViST (and RoViST-VG, and the coherence stand-in's sentence encoder,
    unless ``vg_encoder`` / ``pair_scorer`` are given); ``photo``: photo id -> PIL image (raises for a missing
    photo, recorded as that story's note); ``nlp``: a spaCy pipeline (default: the packaged English one);
    ``boxes``: photo id -> region boxes (x0, y0, x1, y1) instead of the grid; ``concreteness`` (GROOViST's
    ratings) with ``lemmatize`` (a noun's lemma; default WordNet's, :func:`connote.metrics.wordnet.noun_lemmatizer`);
    ``idf`` (RoViST-VG's noun weights; default 1).
    """

    def __init__(self, metrics: Iterable[str] = tuple(STORY_METRICS), *, encoder: Any = None,
                 photo: Callable[[str], Any] | None = None, pair_scorer: Any = None, nlp: Any = None,
                 concreteness: Mapping[str, float] | None = None, concreteness_source: str | None = None,
                 lemmatize: Callable[[str], str] | None = None, vg_encoder: Any = None,
                 idf: Mapping[str, float] | None = None, idf_source: str | None = None,
                 theta: float = GROOVIST_THETA["vist"], alignment: str = "sequence", prefix: str = "previous",
                 ngram_len: int = 4, boxes: Mapping[str, Sequence[Sequence[float]]] | None = None) -> None:
        self.metrics = [m.strip() for m in metrics if m.strip()]
        unknown = [m for m in self.metrics if m not in STORY_METRICS]
        if unknown:
            raise InputError(f"unknown story metric {', '.join(unknown)}; valid: {', '.join(STORY_METRICS)}")
        if alignment not in ("sequence", "sentence"):
            raise InputError(f"alignment must be sequence or sentence, not {alignment!r}")
        if prefix not in ("previous", "accumulated"):
            raise InputError(f"prefix must be previous or accumulated, not {prefix!r}")
        self.encoder, self.photo, self.nlp = encoder, photo, nlp
        self.vg_encoder = vg_encoder if vg_encoder is not None else encoder
        self.pair_scorer = pair_scorer
        self.concreteness, self.concreteness_source = concreteness, concreteness_source
        self.idf, self.idf_source = idf, idf_source
        self.theta, self.alignment, self.prefix, self.ngram_len = float(theta), alignment, prefix, int(ngram_len)
        self.boxes = boxes
        for name, enc in (("groovist", encoder), ("rovist_vg", self.vg_encoder)):
            if name in self.metrics and (enc is None or photo is None):
                raise InputError(f"{STORY_METRICS[name]} needs an image-text encoder and the photos (an images folder)")
        self.lemmatize, self.lemma_source = lemmatize, "given" if lemmatize is not None else "none"
        if "groovist" in self.metrics and concreteness and lemmatize is None:
            from connote.metrics.wordnet import noun_lemmatizer

            try:
                self.lemmatize = noun_lemmatizer()
            except FileNotFoundError as exc:
                raise InputError(f"GROOViST's concreteness weights lemmatise words with WordNet: {exc}") from None
            self.lemma_source = "wordnet-morphy"
        if "rovist_c" in self.metrics and pair_scorer is None:
            if encoder is None:
                raise InputError("RoViST-C needs a sentence-order model or a sentence encoder")
            self.pair_scorer = EmbeddingPairScorer(encoder)

    # ---- signatures ------------------------------------------------------------------------
    def _stand_ins(self, metric: str) -> str:
        """The parts of ``metric`` that replace the release's own, named (``none`` when it runs as released)."""
        pipe = pipeline_name(self._nlp())
        out = ["sentences=regex-for-punkt"]
        if metric == "groovist":
            if pipe != RELEASE_PIPELINE:
                out.append(f"spacy={pipe}-for-{RELEASE_PIPELINE}")
            name = encoder_name(self.encoder)
            if "clip-vit-base-patch32" not in name.lower():
                out.append(f"encoder={name}-for-CLIP-ViT-B/32")
            if not self.concreteness:
                out.append("concreteness=none(w=1)-for-Brysbaert")
        else:
            out.append(f"pos=spacy-{pipe}-tags-for-nltk-perceptron")
            if not isinstance(self.vg_encoder, RovistVgEncoder):
                out.append(f"encoder={encoder_name(self.vg_encoder)}-for-Region2Phrase")
            if self.idf is None:
                out.append("idf=none(w=1)-for-idf_dict")
        if not self.boxes:
            out.append(f"regions=full+grid{GRID}x{GRID}-for-detector-boxes")
        return ",".join(out)

    def signatures(self) -> dict[str, str]:
        out = {}
        regions = "boxes" if self.boxes else f"full+grid{GRID}x{GRID}"
        if "groovist" in self.metrics:
            conc = self.concreteness_source or "none(w=1)"
            out["groovist"] = (f"groovist|encoder:{encoder_name(self.encoder)}|regions:{regions}|theta:{self.theta:g}"
                               f"|scale:{CLIP_SCALE:g}|concreteness:{conc}|lemmas:{self.lemma_source}"
                               f"|np:spacy-{pipeline_name(self._nlp())}-noun_chunks|placeholders:words"
                               f"|alignment:{self.alignment}|sentences:regex|stand-ins:{self._stand_ins('groovist')}"
                               f"|{_version()}")
        if "rovist_vg" in self.metrics:
            out["rovist_vg"] = (f"rovist_vg|encoder:{encoder_name(self.vg_encoder)}|regions:{regions}"
                                f"|idf:{self.idf_source or 'none(w=1)'}|nouns:spacy-{pipeline_name(self._nlp())}-tags"
                                f"|placeholders:words|aggregate:log_sum_exp|sentences:regex"
                                f"|stand-ins:{self._stand_ins('rovist_vg')}|{_version()}")
        if "rovist_c" in self.metrics:
            name = self.pair_scorer.name() if hasattr(self.pair_scorer, "name") else type(self.pair_scorer).__name__
            stand_in = ("" if isinstance(self.pair_scorer, RovistCheckpointScorer) else
                        "|stand-in:ALBERT-SOP-not-RoViST" if isinstance(self.pair_scorer, SopPairScorer) else
                        "|stand-in:not-RoViST-SOP")
            out["rovist_c"] = f"rovist_c|pairs:{name}|prefix:{self.prefix}{stand_in}|sentences:regex|{_version()}"
        if "rovist_nr" in self.metrics:
            out["rovist_nr"] = f"rovist_nr|ngram:{self.ngram_len}|tokens:regex|sentences:regex|{_version()}"
        return out

    # ---- scoring ---------------------------------------------------------------------------
    def _nlp(self) -> Any:
        if self.nlp is None:
            from connote.vist.stats import load_spacy

            self.nlp = load_spacy()
        return self.nlp

    def _regions(self, pid: str) -> list[Any]:
        image = self.photo(pid)  # type: ignore[misc]
        if self.boxes and pid in self.boxes:
            return [image.crop(tuple(int(v) for v in b)) for b in self.boxes[pid][:REGIONS]]
        return grid_regions(image)

    def _best_per_photo(self, encoder: Any, photo_ids: Sequence[str], texts: list[str]) -> np.ndarray:
        """texts x photos: each text's best cosine over each photo's regions."""
        regions = [self._regions(p) for p in photo_ids]
        img = _unit(encoder.embed_images([r for rs in regions for r in rs]))
        sims = _unit(encoder.embed_texts(texts)) @ img.T  # texts x regions
        per_photo, pos = [], 0
        for rs in regions:
            per_photo.append(sims[:, pos:pos + len(rs)].max(axis=1))
            pos += len(rs)
        return np.stack(per_photo, axis=1)

    def groovist(self, photo_ids: Sequence[str], text: str) -> tuple[float | None, dict[str, Any]]:
        phrases = noun_phrases(text, self._nlp())
        if not phrases:
            return None, {"phrases": []}
        by_photo = self._best_per_photo(self.encoder, photo_ids, [p.text for p in phrases])
        if self.alignment == "sequence":
            best = by_photo.max(axis=1)
        else:
            best = np.array([by_photo[k, min(p.sentence, by_photo.shape[1] - 1)] for k, p in enumerate(phrases)])
        weights = [concreteness_weight(p.text, self.concreteness, self.lemmatize) for p in phrases]
        score = groovist_score(best.tolist(), weights, self.theta)
        return score, {"phrases": [p.text for p in phrases], "alignment": [round(float(b), 6) for b in best],
                       "weights": weights}

    def rovist_vg(self, photo_ids: Sequence[str], text: str) -> tuple[float | None, dict[str, Any]]:
        found = nouns(text, self._nlp())
        if not found:
            return None, {"nouns": []}
        if self.idf is not None:
            missing = [n for n in found if n not in self.idf]
            if missing:  # the release stops with a KeyError; here the story is left unscored with a note
                raise InputError(f"no IDF weight for {', '.join(repr(n) for n in missing[:3])}")
        weights = [self.idf[n] if self.idf is not None else 1.0 for n in found]
        best = self._best_per_photo(self.vg_encoder, photo_ids, found).max(axis=1)
        return vg_score(best.tolist(), weights), {"nouns": found, "recall": [round(float(b), 6) for b in best]}

    def score(self, stories: Mapping[str, tuple[Sequence[str], str]], bar: Any = None) -> StoryScores:
        """Score every story; a story a metric cannot score gets a note instead of that value."""
        per: dict[str, dict[str, float]] = {sid: {} for sid in stories}
        notes: dict[str, list[str]] = {}
        details: dict[str, dict[str, Any]] = {}
        grounding = {"groovist": (GROOVIST, self.groovist, "no noun phrase", None),
                     "rovist_vg": (ROVIST_VG, self.rovist_vg, "no noun", "rovist_vg")}
        for sid, (photos, text) in stories.items():
            for metric, (printed, fn, empty, nest) in grounding.items():
                if metric not in self.metrics:
                    continue
                try:
                    value, detail = fn(list(photos), text)
                except (OSError, ValueError, KeyError, InputError) as exc:  # a missing or unreadable photo
                    value, detail = None, {"error": str(exc)}
                    notes.setdefault(sid, []).append(f"{printed}: {exc}")
                if value is not None:
                    per[sid][printed] = value
                elif "error" not in detail:
                    notes.setdefault(sid, []).append(f"{printed}: {empty}")
                if nest:
                    details.setdefault(sid, {})[nest] = detail
                else:
                    details.setdefault(sid, {}).update(detail)
            for metric, printed, fn in (("rovist_c", ROVIST_C, lambda t: coherence(t, self.pair_scorer, self.prefix)),
                                        ("rovist_nr", ROVIST_NR, lambda t: non_redundancy(t, self.ngram_len))):
                if metric in self.metrics:
                    value = fn(text)
                    if value is None:
                        notes.setdefault(sid, []).append(f"{printed}: fewer than two sentences")
                    else:
                        per[sid][printed] = value
            if bar is not None:
                bar.advance()
        return StoryScores(per, self.signatures(), notes, details)


