"""Reference-free story metrics: visual grounding (GROOViST), coherence and non-redundancy (RoViST).

No reference story is needed: a story is scored against its photo sequence (grounding) or against itself.

**GROOViST** (Surikuchi et al., EMNLP 2023; the definition of its public ``groovist.py``/``utils.py``):

1. the story's noun phrases: spaCy noun chunks of each sentence, lower-cased, once per sentence, then once
   per story, pronouns dropped;
2. each phrase's best alignment with the photo sequence: the cosine between the phrase's text embedding and
   each image *region*'s image embedding, maximum over the regions of a photo and then over **all** photos of
   the sequence (the paper's answer to temporal misalignment: a phrase may be grounded in any photo;
   ``alignment="sentence"`` restricts sentence *i*'s phrases to photo *i*, a named variant);
3. ``s = 2.5 * cos``; a phrase with ``s < theta`` is penalised to ``-(theta - s)``;
4. weighted by the phrase's concreteness (the mean Brysbaert et al. rating, 1-5, of its words, a word
   looked up as written and then by its lemma; 1 when no word is rated);
5. the story's score is the mean over its phrases (not bounded; ``tanh`` maps it to [-1, 1]).

GROOViST's exact resources are CLIP ViT-B/32 and B = 10 detector boxes per photo. Here the image-text
encoder is injected (any :class:`~connote.models.protocols.Embedder`; offline the embedded
EfficientNet-Lite0 labels + MiniLM encoder), the regions are the whole photo plus a 3 x 3 grid of crops
(ten regions) unless boxes are given, and the concreteness ratings are read from a file when given
(GROOViST's ``concreteness_ratings.csv`` layout ``Word;Conc.M`` or Brysbaert's tab-separated file);
without them every weight is 1. ``theta`` defaults to GROOViST's VIST value. The signature says which of
these was used.

**RoViST-C** (Wang et al., Findings of NAACL 2022, ``coherence_scorer.py``): for each pair of consecutive
sentences, the probability that the second follows the first from an ALBERT sentence-order-prediction head;
a sentence repeating its predecessor scores 0; the story's score is the mean over its pairs.
``prefix="accumulated"`` is the dHM variant (Surikuchi et al. 2024: everything before the sentence is the
first segment). RoViST's released checkpoint (``sop_model_epoch4.pth.tar``) is loaded when given
(:class:`RovistCheckpointScorer`: tensors and an ``argparse.Namespace`` only, no code runs); so is any Hugging
Face model with a sentence-order head (``AlbertForPreTraining``: ``sop_logits``, index 0 = in order; ALBERT's
pre-training head, not RoViST's fine-tuned one, so the signature marks it a stand-in); offline the stand-in is
the cosine of the two segments' sentence embeddings (the embedded MiniLM), named so in the signature.

**RoViST-NR** (``non_redun_scorer.py``): the words of each sentence without its last token; inter-sentence
repetition = for every pair of sentences (j < i), the number of matching word pairs over the size of the
union of their word sets; intra-sentence repetition = the same between consecutive non-overlapping 4-word
windows of a sentence; ``NR = 1 - mean(mean(inter), mean(intra) or 0)``. A one-sentence story has no score.

Sentences are split after ``.``, ``!`` or ``?`` followed by white space (VIST text is tokenized so) and words
are ``\\w+`` runs and single punctuation marks (NLTK's punkt, which the public code uses, needs a download).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.errors import InputError
from connote.core.jsonio import text_lines

GROOVIST, ROVIST_C, ROVIST_NR = "GROOViST", "RoViST-C", "RoViST-NR"
STORY_METRICS = {"groovist": GROOVIST, "rovist_c": ROVIST_C, "rovist_nr": ROVIST_NR}
"""Metric name -> printed score name."""

#: GROOViST's theta per dataset (its config.ini); ``custom`` is its value for other data.
GROOVIST_THETA = {"vist": 0.6159241924121119, "aesop": 0.5949957337433985, "vwp": 0.6193549522736276,
                  "custom": 0.5}
CLIP_SCALE = 2.5
GRID = 3

PRONOUNS = frozenset("""
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves one oneself this that these those who whom whose which
what whoever whomever whatever whichever anybody anyone anything everybody everyone everything nobody none
nothing somebody someone something each either neither both all few many several some any others another
""".split())
"""English pronouns, which GROOViST leaves out of the noun phrases."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def sentences(text: str) -> list[str]:
    """Sentences of a story: split after ``.``/``!``/``?`` followed by white space; empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def words(sentence: str) -> list[str]:
    """Word tokens: ``\\w+`` runs (with an apostrophe part) and single punctuation marks."""
    return _WORD.findall(sentence)


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
    """The (first segment, next sentence) pairs RoViST-C scores: ``previous`` sentence or ``accumulated``."""
    sents = sentences(text)
    out = []
    for k in range(1, len(sents)):
        first = sents[k - 1] if prefix == "previous" else " ".join(sents[:k])
        out.append((first, sents[k]))
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
@dataclass(frozen=True)
class NounPhrase:
    text: str
    words: tuple[str, ...]
    lemmas: tuple[str, ...]
    sentence: int


def noun_phrases(text: str, nlp: Any) -> list[NounPhrase]:
    """GROOViST's phrases: spaCy noun chunks per sentence (lower-cased, once per sentence, then once per
    story), pronouns left out."""
    found: list[NounPhrase] = []
    seen: set[str] = set()
    for k, sent in enumerate(sentences(text)):
        for chunk in nlp(sent).noun_chunks:
            phrase = chunk.text.lower().strip()
            if not phrase or phrase in seen or phrase in PRONOUNS:
                continue
            seen.add(phrase)
            found.append(NounPhrase(phrase, tuple(t.text.lower() for t in chunk),
                                    tuple(t.lemma_.lower() for t in chunk), k))
    return found


def read_concreteness(path: str | Path) -> dict[str, float]:
    """Concreteness ratings: ``Word;Conc.M`` (GROOViST's file) or Brysbaert et al.'s tab-separated table."""
    path = Path(path)
    try:
        lines = text_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the concreteness ratings ({exc})", path=path) from None
    if not lines:
        raise InputError("empty concreteness ratings file", path=path)
    delim = ";" if ";" in lines[0] else ("\t" if "\t" in lines[0] else ",")
    rows = list(csv.reader(lines, delimiter=delim))
    header = [c.strip().lower() for c in rows[0]]
    i_word = header.index("word") if "word" in header else 0
    i_val = header.index("conc.m") if "conc.m" in header else 1
    out: dict[str, float] = {}
    for n, row in enumerate(rows[1:], 2):
        if len(row) <= max(i_word, i_val) or not row[i_word].strip():
            continue
        try:
            out[row[i_word].strip().lower()] = float(row[i_val])
        except ValueError:
            raise InputError(f"rating {row[i_val]!r} is not a number", path=path, line=n) from None
    if not out:
        raise InputError("no ratings in this file (expected Word;Conc.M rows)", path=path)
    return out


def concreteness_weight(phrase: NounPhrase, ratings: Mapping[str, float] | None) -> float:
    """Mean rating of the phrase's rated words (as written, else by lemma); 1 when none is rated."""
    if not ratings:
        return 1.0
    vals = []
    for w, lemma in zip(phrase.words, phrase.lemmas):
        if w in ratings:
            vals.append(ratings[w])
        elif lemma in ratings:
            vals.append(ratings[lemma])
    return float(sum(vals) / len(vals)) if vals else 1.0


def grid_regions(image: Any, grid: int = GRID) -> list[Any]:
    """The whole photo and its ``grid`` x ``grid`` crops (ten regions for a 3 x 3 grid)."""
    w, h = image.size
    out = [image]
    for r in range(grid):
        for c in range(grid):
            box = (c * w // grid, r * h // grid, (c + 1) * w // grid, (r + 1) * h // grid)
            out.append(image.crop(box))
    return out


def groovist_score(phrase_alignment: Sequence[float], weights: Sequence[float], theta: float) -> float | None:
    """GROOViST from each phrase's best cosine and concreteness weight (steps 3-5 of the module docstring)."""
    if not phrase_alignment:
        return None
    vals = []
    for cos, w in zip(phrase_alignment, weights):
        s = CLIP_SCALE * float(cos)
        vals.append((s if s >= theta else -(theta - s)) * float(w))
    return float(sum(vals) / len(vals))


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

    ``encoder``: image-text embedder for GROOViST (and the coherence stand-in's sentence encoder when no
    ``pair_scorer`` is given); ``photo``: photo id -> PIL image (raises for a missing photo, recorded as that
    story's note); ``nlp``: a spaCy pipeline (default: the packaged English one); ``boxes``: photo id ->
    region boxes (x0, y0, x1, y1) instead of the grid.
    """

    def __init__(self, metrics: Iterable[str] = tuple(STORY_METRICS), *, encoder: Any = None,
                 photo: Callable[[str], Any] | None = None, pair_scorer: Any = None, nlp: Any = None,
                 concreteness: Mapping[str, float] | None = None, concreteness_source: str | None = None,
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
        self.pair_scorer = pair_scorer
        self.concreteness, self.concreteness_source = concreteness, concreteness_source
        self.theta, self.alignment, self.prefix, self.ngram_len = float(theta), alignment, prefix, int(ngram_len)
        self.boxes = boxes
        if "groovist" in self.metrics and (encoder is None or photo is None):
            raise InputError("GROOViST needs an image-text encoder and the photos (an images folder)")
        if "rovist_c" in self.metrics and pair_scorer is None:
            if encoder is None:
                raise InputError("RoViST-C needs a sentence-order model or a sentence encoder")
            self.pair_scorer = EmbeddingPairScorer(encoder)

    # ---- signatures ------------------------------------------------------------------------
    def signatures(self) -> dict[str, str]:
        out = {}
        if "groovist" in self.metrics:
            regions = "boxes" if self.boxes else f"full+grid{GRID}x{GRID}"
            conc = self.concreteness_source or "none(w=1)"
            out["groovist"] = (f"groovist|encoder:{encoder_name(self.encoder)}|regions:{regions}|theta:{self.theta:g}"
                               f"|scale:{CLIP_SCALE:g}|concreteness:{conc}|np:spacy-noun_chunks"
                               f"|alignment:{self.alignment}|sentences:regex|{_version()}")
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
            return [image.crop(tuple(int(v) for v in b)) for b in self.boxes[pid]]
        return grid_regions(image)

    def groovist(self, photo_ids: Sequence[str], text: str) -> tuple[float | None, dict[str, Any]]:
        phrases = noun_phrases(text, self._nlp())
        if not phrases:
            return None, {"phrases": []}
        regions = [self._regions(p) for p in photo_ids]
        flat = [r for rs in regions for r in rs]
        img = _unit(self.encoder.embed_images(flat))
        txt = _unit(self.encoder.embed_texts([p.text for p in phrases]))
        sims = txt @ img.T  # phrases x regions
        per_photo, pos = [], 0
        for rs in regions:
            per_photo.append(sims[:, pos:pos + len(rs)].max(axis=1))
            pos += len(rs)
        by_photo = np.stack(per_photo, axis=1)  # phrases x photos
        if self.alignment == "sequence":
            best = by_photo.max(axis=1)
        else:
            best = np.array([by_photo[k, min(p.sentence, by_photo.shape[1] - 1)] for k, p in enumerate(phrases)])
        weights = [concreteness_weight(p, self.concreteness) for p in phrases]
        score = groovist_score(best.tolist(), weights, self.theta)
        return score, {"phrases": [p.text for p in phrases], "alignment": [round(float(b), 6) for b in best],
                       "weights": weights}

    def score(self, stories: Mapping[str, tuple[Sequence[str], str]], bar: Any = None) -> StoryScores:
        """Score every story; a story a metric cannot score gets a note instead of that value."""
        per: dict[str, dict[str, float]] = {sid: {} for sid in stories}
        notes: dict[str, list[str]] = {}
        details: dict[str, dict[str, Any]] = {}
        for sid, (photos, text) in stories.items():
            if "groovist" in self.metrics:
                try:
                    value, detail = self.groovist(list(photos), text)
                except (OSError, ValueError, KeyError, InputError) as exc:  # a missing or unreadable photo
                    value, detail = None, {"error": str(exc)}
                    notes.setdefault(sid, []).append(f"{GROOVIST}: {exc}")
                if value is not None:
                    per[sid][GROOVIST] = value
                elif "error" not in detail:
                    notes.setdefault(sid, []).append(f"{GROOVIST}: no noun phrase")
                details[sid] = detail
            if "rovist_c" in self.metrics:
                value = coherence(text, self.pair_scorer, self.prefix)
                if value is None:
                    notes.setdefault(sid, []).append(f"{ROVIST_C}: fewer than two sentences")
                else:
                    per[sid][ROVIST_C] = value
            if "rovist_nr" in self.metrics:
                value = non_redundancy(text, self.ngram_len)
                if value is None:
                    notes.setdefault(sid, []).append(f"{ROVIST_NR}: fewer than two sentences")
                else:
                    per[sid][ROVIST_NR] = value
            if bar is not None:
                bar.advance()
        return StoryScores(per, self.signatures(), notes, details)


def tanh(value: float) -> float:
    """GROOViST mapped to [-1, 1], as its script prints it."""
    return math.tanh(value)
