"""+Grounded as the VIST paper defines it, from training text and a captioner only.

The paper's +Grounded decoding keeps the story generator from naming things the photos do not show,
without looking at any human annotation of the test photos:

1. A word is **groundable** when it is more likely in descriptions than in stories:
   ``P(w | DII training text) / P(w | SIS training text) > 1`` (maximum-likelihood unigram
   probabilities over all tokens of each training tier; a word never seen in SIS but seen in DII is
   groundable, one never seen in DII is not). :class:`GroundingVocabulary` computes this, exactly (the
   comparison is done on integer counts).
2. A groundable word may be generated only if it occurs in the **n-best captions** that a separately
   trained captioner produces for the sequence's photos. Every other word stays allowed.

Function words and punctuation are never constrained (``connote.vist.seq2seq.is_content_word``):
the rule applies to content words, which is also what the decoder's ``grounded=`` set governs.

A captioner is anything with ``captions(photo_ids, n_best) -> list[list[str]]`` (:class:`Captioner`):
per photo, up to ``n_best`` captions, best first. :class:`Seq2SeqCaptioner` is the paper's kind: the
seq2seq machinery trained as a one-image captioner on DII (``connote vist train-captioner``), whose
n-best list is its beam.

For a story generator, :class:`PaperGrounding` bundles the vocabulary, the captioner and ``n_best``:
``PaperGrounding.from_options(dii=TRAIN_DII, sis=TRAIN_SIS, captioner=DIR, features=F.npz)`` then
``licensed_words(photo_ids)`` gives the decoder's ``grounded=`` set for one sequence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from connote.core.errors import InputError, ItemError
from connote.vist.seq2seq import StoryModel, decode_nbest, is_content_word, load_features


@runtime_checkable
class Captioner(Protocol):
    """Captions photos: per photo id, up to ``n_best`` captions, best first."""

    def captions(self, photo_ids: Sequence[str], n_best: int = 5) -> list[list[str]]: ...


def _tokens(text: str) -> list[str]:
    """The story model's tokenization (``Vocab.encode``): lower-cased, split on whitespace."""
    return text.lower().split()


def _file_digest(path: str | Path) -> str:
    from connote.core.files import file_sha256

    return file_sha256(path)[:16]


class GroundingVocabulary:
    """Which content words are groundable: ``P(w | DII) / P(w | SIS) > 1`` on training text."""

    def __init__(self, dii_counts: Mapping[str, int], sis_counts: Mapping[str, int], *,
                 sources: Mapping[str, str] | None = None) -> None:
        self.dii_counts: Counter = Counter(dii_counts)
        self.sis_counts: Counter = Counter(sis_counts)
        self.dii_total = sum(self.dii_counts.values())
        self.sis_total = sum(self.sis_counts.values())
        if not self.dii_total or not self.sis_total:
            raise ValueError("grounding needs description (DII) and story (SIS) training text; one is empty")
        self.sources = dict(sources or {})
        words = set(self.dii_counts) | set(self.sis_counts)
        self.known: frozenset[str] = frozenset(w for w in words if is_content_word(w))
        # c_dii / N_dii > c_sis / N_sis, compared on integers so that a ratio of exactly 1 is not groundable
        self.groundable: frozenset[str] = frozenset(
            w for w in self.known if self.dii_counts[w] * self.sis_total > self.sis_counts[w] * self.dii_total)

    @classmethod
    def from_texts(cls, dii_texts: Iterable[str], sis_texts: Iterable[str]) -> GroundingVocabulary:
        """From description texts (DII) and story texts (SIS) of the training split."""
        return cls(Counter(w for t in dii_texts for w in _tokens(t)), Counter(w for t in sis_texts for w in _tokens(t)))

    @classmethod
    def from_files(cls, dii_train: str | Path, sis_train: str | Path) -> GroundingVocabulary:
        """From the official training files (``train.description-in-isolation.json``, ``train.story-in-sequence.json``).

        Each file must be of its tier (``InputError`` naming the file otherwise). Only training text is
        read: nothing of the split being generated for.
        """
        from connote.vist.data import TIER_NAMES, read_official

        dii, sis = read_official(dii_train), read_official(sis_train)
        for vf, want in ((dii, "dii"), (sis, "sis")):
            if vf.tier != want:
                raise InputError(f"expected a {TIER_NAMES[want]} training file, this is {TIER_NAMES[vf.tier]}",
                                 path=vf.path)
        dii_texts = [d.text for ds in dii.descriptions.values() for d in ds]
        sis_texts = [sl.text for s in sis.stories for sl in s.storylets]
        for texts, path in ((dii_texts, dii_train), (sis_texts, sis_train)):
            if not any(t.strip() for t in texts):
                raise InputError("no text in this training file", path=path)
        vocab = cls.from_texts(dii_texts, sis_texts)
        vocab.sources = {"dii": str(Path(dii_train).resolve()), "dii_sha256": _file_digest(dii_train),
                         "sis": str(Path(sis_train).resolve()), "sis_sha256": _file_digest(sis_train)}
        return vocab

    def probability_ratio(self, word: str) -> float:
        """``P(w | DII) / P(w | SIS)``; ``inf`` for a word seen only in DII, ``nan`` for one seen in neither."""
        w = word.lower()
        p_dii = self.dii_counts[w] / self.dii_total
        p_sis = self.sis_counts[w] / self.sis_total
        if p_sis == 0:
            return float("inf") if p_dii > 0 else float("nan")
        return p_dii / p_sis

    def is_groundable(self, word: str) -> bool:
        return word.lower() in self.groundable

    def licensed_words(self, photo_ids: Sequence[str], captioner: Captioner, n_best: int = 5) -> set[str]:
        """The content words the decoder may generate for these photos (its ``grounded=`` set).

        Every known content word that is not groundable, plus every word of the first ``n_best`` captions
        the captioner gives for each photo (so a groundable word is licensed only when a caption has it).
        """
        caption_words = {w for caps in captioner.captions(list(photo_ids), n_best) for c in caps[:n_best]
                         for w in _tokens(c)}
        return set(self.known - self.groundable) | caption_words

    def describe(self) -> dict[str, Any]:
        return {"rule": "P(w|DII)/P(w|SIS) > 1", "n_groundable": len(self.groundable), "n_known": len(self.known),
                **self.sources}


class Seq2SeqCaptioner:
    """The paper's captioner baseline: the seq2seq model trained on DII, one photo in, its n-best beam out."""

    def __init__(self, model: StoryModel, features: Mapping[str, np.ndarray], *, beam_size: int = 10,
                 max_len: int = 30, source: str | None = None) -> None:
        self.model, self.features, self.beam_size, self.max_len = model, features, int(beam_size), int(max_len)
        self.source = source
        self._cache: dict[tuple[str, int], list[str]] = {}

    @classmethod
    def load(cls, folder: str | Path, features: str | Path | Mapping[str, np.ndarray], **options: Any,
             ) -> Seq2SeqCaptioner:
        """A captioner saved by ``connote vist train-captioner``; ``features``: the ``.npz`` (or loaded mapping)."""
        feats = load_features(features) if isinstance(features, (str, Path)) else features
        return cls(StoryModel.load(folder), feats, source=str(Path(folder).resolve()), **options)

    def captions(self, photo_ids: Sequence[str], n_best: int = 5) -> list[list[str]]:
        """Per photo, the ``n_best`` best captions of a beam of width ``max(beam_size, n_best)``."""
        out = []
        for pid in photo_ids:
            key = (str(pid), int(n_best))
            if key not in self._cache:
                if pid not in self.features:
                    raise ItemError(f"no image features for photo {pid} (captioner)")
                feats = np.asarray(self.features[pid], dtype=np.float32).reshape(1, -1)
                self._cache[key] = decode_nbest(self.model, feats, n_best=n_best, beam_size=self.beam_size,
                                                max_len=self.max_len)
            out.append(list(self._cache[key]))
        return out

    def describe(self) -> dict[str, Any]:
        return {"captioner": "seq2seq", "model": self.source, "beam_size": self.beam_size, "max_len": self.max_len}


def train_captioner(dii: Any, features: Mapping[str, np.ndarray], **train_options: Any,
                    ) -> tuple[StoryModel, list[float], dict[str, str]]:
    """Train the captioner baseline on DII: ``(one photo's features, its description)`` pairs.

    ``dii``: a DII :class:`connote.vist.data.VistFile`. Returns the model, the losses and the skipped
    photos (no features) with their reason. ``train_options`` go to :func:`connote.vist.seq2seq.train`.
    """
    from connote.vist.seq2seq import train

    examples, skipped = [], {}
    for pid, descriptions in dii.descriptions.items():
        if pid not in features:
            skipped[pid] = "no image features"
            continue
        vec = np.asarray(features[pid], dtype=np.float32).reshape(1, -1)
        examples.extend((vec, d.text) for d in descriptions if d.text.strip())
    if not examples:
        raise InputError(f"no described photo has features ({len(skipped)} skipped)", path=dii.path)
    train_options.setdefault("encoder_order", "forward")  # one photo: the order is moot
    model, losses = train(examples, **train_options)
    return model, losses, skipped


class PaperGrounding:
    """+Grounded for one generator: the groundable words, a captioner and ``n_best``."""

    def __init__(self, vocabulary: GroundingVocabulary, captioner: Captioner, n_best: int = 5) -> None:
        if int(n_best) < 1:
            raise ValueError("n_best must be at least 1")
        self.vocabulary, self.captioner, self.n_best = vocabulary, captioner, int(n_best)

    @classmethod
    def from_options(cls, *, dii: str | Path, sis: str | Path, captioner: str | Path | Captioner,
                     features: str | Path | Mapping[str, np.ndarray] | None = None,
                     n_best: int | str = 5) -> PaperGrounding:
        """From the training DII and SIS files and a captioner (a ``train-captioner`` folder, with the
        photos' ``features``, or any :class:`Captioner`)."""
        if not dii or not sis:
            raise ValueError("+Grounded needs the training descriptions and stories: grounding_dii=TRAIN_DII.json "
                             "and grounding_sis=TRAIN_SIS.json")
        if isinstance(captioner, (str, Path)):
            if features is None:
                raise ValueError("a seq2seq captioner needs the photos' features (features=F.npz)")
            captioner = Seq2SeqCaptioner.load(captioner, features)
        return cls(GroundingVocabulary.from_files(dii, sis), captioner, int(n_best))

    def licensed_words(self, photo_ids: Sequence[str]) -> set[str]:
        return self.vocabulary.licensed_words(photo_ids, self.captioner, self.n_best)

    def describe(self) -> dict[str, Any]:
        describe = getattr(self.captioner, "describe", None)
        return {**self.vocabulary.describe(), "n_best": self.n_best,
                "captioner": describe() if callable(describe) else type(self.captioner).__name__}
