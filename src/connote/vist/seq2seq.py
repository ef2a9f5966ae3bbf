"""The paper's baseline: a sequence-to-sequence story model over a photo sequence.

Architecture: the image feature vectors of the (five) photos are projected and read by a GRU encoder
-- in reverse order by default, as the paper's baseline does (``encoder_order``: ``reverse`` or
``forward``, saved in the model's ``config.json``); its last hidden state initialises a GRU decoder that
writes the whole story word by word (the story's storylets joined, as in the paper). Trained with
teacher forcing and cross-entropy.

Decoding, each a named option (``DECODERS``):

``beam``
    beam search (width ``beam_size``, default 10 as in the paper), highest total log-probability.
``greedy``
    the most probable word at every step.
``greedy-dups`` (the paper's "-Dups")
    greedy, never repeating a content word (a word not in ``FUNCTION_WORDS``, not punctuation or a
    placeholder) and never ending a sentence identical to an earlier one.
``greedy-dups-grounded`` (the paper's "+Grounded")
    as ``greedy-dups`` and only content words *licensed by the photos*: a set of words given per
    sequence, e.g. the description-in-isolation vocabulary of the same photos
    (:func:`grounding_vocabulary`) or the labels of a grounding model; function words and punctuation
    are always allowed.

``no_dups`` and ``grounded`` can also be combined with ``beam``.

Features: a ``.npz`` file mapping photo id -> feature vector (any image encoder); a photo without a
feature vector makes its sequence an error, not a crash.
"""

from __future__ import annotations

import json
import math
import random
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.errors import InputError, ItemError
from connote.core.jsonio import read_json

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
SENTENCE_END = frozenset({".", "!", "?"})
DECODERS = ("beam", "greedy", "greedy-dups", "greedy-dups-grounded")

_FUNCTION_WORD_LIST = """
a an the and or but so because as if then than that this these those there here it its it's they them
their we us our i me my you your he him his she her hers of in on at to for from with by about into over
after before up down out off again very too just also all some any each every more most other such no
not only own same can will would could should did do does done was were is are be been being am has
have had 's n't 're 've 'll 'd what which who whom when where why how while until ! ? . , ; : ' " - ( )
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORD_LIST.split())


def is_content_word(word: str) -> bool:
    """Content word: not a function word, not punctuation, not a placeholder such as ``[male]``."""
    return (word not in FUNCTION_WORDS and word not in SPECIALS and any(c.isalnum() for c in word)
            and not word.startswith("["))


# --------------------------------------------------------------------------- vocabulary


@dataclass
class Vocab:
    """Word <-> id, specials first."""

    words: list[str]

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, texts: Iterable[str], *, min_count: int = 1, max_size: int | None = None) -> Vocab:
        c = Counter(w for t in texts for w in t.lower().split())
        kept = [w for w, n in sorted(c.items(), key=lambda x: (-x[1], x[0])) if n >= min_count and w not in SPECIALS]
        if max_size is not None:
            kept = kept[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + kept)

    def encode(self, text: str) -> list[int]:
        unk = self.index[UNK]
        return [self.index.get(w, unk) for w in text.lower().split()]

    def decode(self, ids: Iterable[int]) -> str:
        out = []
        for i in ids:
            w = self.words[i]
            if w == EOS:
                break
            if w not in (PAD, BOS):
                out.append(w)
        return " ".join(out)

    def __len__(self) -> int:
        return len(self.words)


# --------------------------------------------------------------------------- model


ENCODER_ORDERS = ("reverse", "forward")
"""The order in which the encoder reads the photos: the paper's baseline reads them in reverse."""


@dataclass
class Seq2SeqConfig:
    """The model's shape and how it reads the photos (saved as ``config.json``).

    ``encoder_order``: ``reverse`` (the paper's baseline: the GRU runs over the photos' features from the
    last photo to the first, so the first photo is read last) or ``forward``. A ``config.json`` saved
    before this field existed is loaded as ``forward``, which is how those models were trained.
    """

    feature_dim: int
    vocab_size: int
    embed_dim: int = 256
    hidden_dim: int = 512
    num_layers: int = 1
    dropout: float = 0.0
    max_len: int = 100
    encoder_order: str = "reverse"

    def __post_init__(self) -> None:
        if self.encoder_order not in ENCODER_ORDERS:
            raise ValueError(f"unknown encoder_order {self.encoder_order!r}; valid: {', '.join(ENCODER_ORDERS)}")


def _build_module(cfg: Seq2SeqConfig) -> Any:
    import torch
    from torch import nn

    class Seq2SeqStory(nn.Module):
        """GRU encoder over photo features -> GRU story decoder."""

        def __init__(self, c: Seq2SeqConfig) -> None:
            super().__init__()
            self.config = c
            self.project = nn.Linear(c.feature_dim, c.embed_dim)
            self.encoder = nn.GRU(c.embed_dim, c.hidden_dim, c.num_layers, batch_first=True,
                                  dropout=c.dropout if c.num_layers > 1 else 0.0)
            self.embed = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
            self.decoder = nn.GRU(c.embed_dim, c.hidden_dim, c.num_layers, batch_first=True,
                                  dropout=c.dropout if c.num_layers > 1 else 0.0)
            self.drop = nn.Dropout(c.dropout)
            self.out = nn.Linear(c.hidden_dim, c.vocab_size)

        def encode(self, feats: torch.Tensor) -> torch.Tensor:
            """Photo features (B, n_photos, d) -> the encoder's last hidden state, read in the configured order."""
            if self.config.encoder_order == "reverse":
                feats = torch.flip(feats, dims=[1])
            _, h = self.encoder(torch.tanh(self.project(feats)))
            return h

        def step(self, tokens: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """One or more decoder steps: tokens (B, T) -> logits (B, T, V), new hidden."""
            o, h = self.decoder(self.drop(self.embed(tokens)), h)
            return self.out(self.drop(o)), h

        def forward(self, feats: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            logits, _ = self.step(tokens, self.encode(feats))
            return logits

    return Seq2SeqStory(cfg)


class StoryModel:
    """A trained (or fresh) seq2seq story model with its vocabulary."""

    def __init__(self, config: Seq2SeqConfig, vocab: Vocab, module: Any = None) -> None:
        self.config = config
        self.vocab = vocab
        self.module = module if module is not None else _build_module(config)
        self.notes: list[str] = []

    # ---- persistence
    def save(self, folder: str | Path) -> Path:
        import torch

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.module.state_dict(), folder / "model.pt")
        (folder / "config.json").write_text(json.dumps(asdict(self.config), indent=2) + "\n")
        (folder / "vocab.json").write_text(json.dumps(self.vocab.words, ensure_ascii=False) + "\n", encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: str | Path, *, device: str = "cpu") -> StoryModel:
        import torch

        folder = Path(folder)
        for name in ("model.pt", "config.json", "vocab.json"):
            if not (folder / name).is_file():
                raise InputError(f"not a seq2seq story model folder: {name} is missing", path=folder)
        raw = read_json(folder / "config.json", what="seq2seq config")
        if not isinstance(raw, dict):
            raise InputError("config.json is not a JSON object", path=folder / "config.json")
        notes = []
        if "encoder_order" not in raw:  # saved before the order was recorded: those models read forward
            raw["encoder_order"] = "forward"
            notes.append("config.json has no encoder_order (saved by an older connote): loaded as forward, "
                         "the order it was trained with")
            warnings.warn(f"{folder}: {notes[-1]}", stacklevel=2)
        try:
            cfg = Seq2SeqConfig(**raw)
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad model config: {exc}", path=folder / "config.json") from None
        vocab = Vocab(read_json(folder / "vocab.json", what="seq2seq vocabulary"))
        model = cls(cfg, vocab)
        model.notes = notes
        model.module.load_state_dict(torch.load(folder / "model.pt", map_location=device, weights_only=True))
        model.module.eval()
        return model

    def describe(self) -> dict[str, Any]:
        return {"backend": "seq2seq", **asdict(self.config)}

    # ---- decoding
    def generate(self, feats: np.ndarray, *, method: str = "greedy", beam_size: int = 10,
                 no_dups: bool | None = None, grounded: Iterable[str] | None = None,
                 max_len: int | None = None) -> str:
        """Decode one story from a (n_photos, feature_dim) array with a named method (``DECODERS``)."""
        if method not in DECODERS:
            raise ValueError(f"unknown decoding {method!r}; valid: {', '.join(DECODERS)}")
        if method == "greedy-dups-grounded" and grounded is None:
            raise ValueError("greedy-dups-grounded needs the licensed words of the photos (grounded=...)")
        dups = no_dups if no_dups is not None else method in ("greedy-dups", "greedy-dups-grounded")
        ground = set(grounded) if grounded is not None else None
        width = beam_size if method == "beam" else 1
        return decode(self, feats, beam_size=width, no_dups=dups, grounded=ground,
                      max_len=max_len or self.config.max_len)


# --------------------------------------------------------------------------- decoding


def _allowed_mask(vocab: Vocab, grounded: set[str] | None) -> np.ndarray | None:
    if grounded is None:
        return None
    lic = {w.lower() for w in grounded}
    return np.array([not is_content_word(w) or w in lic for w in vocab.words], dtype=bool)


def _banned(vocab: Vocab, seq: Sequence[int], no_dups: bool) -> set[int]:
    """Token ids forbidden after ``seq`` (content words used, a duplicate sentence's end)."""
    if not no_dups:
        return set()
    words = [vocab.words[i] for i in seq]
    banned = {vocab.index[w] for w in words if is_content_word(w)}
    sentences, cur = [], []
    for w in words:
        cur.append(w)
        if w in SENTENCE_END:
            sentences.append(tuple(cur[:-1]))
            cur = []
    if cur and tuple(cur) in sentences:
        banned |= {vocab.index[w] for w in SENTENCE_END if w in vocab.index}
        banned.add(vocab.index[EOS])
    return banned


def _rank(score: float, length: int, length_penalty: float) -> float:
    return score / (max(1, length) ** length_penalty) if length_penalty else score


def sequence_logprob(model: StoryModel, feats: np.ndarray, text: str) -> float:
    """Log-probability of ``text`` followed by the end token given the photos' features."""
    import torch

    ids = [model.vocab.index[BOS]] + model.vocab.encode(text) + [model.vocab.index[EOS]]
    with torch.no_grad():
        x = torch.as_tensor(np.asarray(feats, dtype=np.float32)).unsqueeze(0)
        logits = model.module(x, torch.tensor([ids[:-1]]))
        logp = torch.log_softmax(logits[0].float(), dim=-1)
        return float(logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].sum())


def decode(model: StoryModel, feats: np.ndarray, *, beam_size: int = 1, no_dups: bool = False,
           grounded: set[str] | None = None, max_len: int = 100, length_penalty: float = 0.0) -> str:
    """Beam search (``beam_size`` 1 is greedy) with optional -Dups and +Grounded constraints."""
    return decode_nbest(model, feats, n_best=1, beam_size=beam_size, no_dups=no_dups, grounded=grounded,
                        max_len=max_len, length_penalty=length_penalty)[0]


def decode_nbest(model: StoryModel, feats: np.ndarray, *, n_best: int = 5, beam_size: int | None = None,
                 no_dups: bool = False, grounded: set[str] | None = None, max_len: int = 100,
                 length_penalty: float = 0.0) -> list[str]:
    """The ``n_best`` highest-scoring texts of a beam search (width ``max(beam_size, n_best)``), best first.

    While a run measures its speed (:mod:`connote.runs.speed`) the best text's tokens (its end token included) and
    the time to the first decoding step's scores (the encoder included, as a Hugging Face model's prefill) are
    reported to it."""
    import time

    import torch

    from connote.runs.speed import add_tokens

    start, first = time.perf_counter(), None
    vocab, mod = model.vocab, model.module
    beam_size = max(int(beam_size or n_best), int(n_best))
    mod.eval()
    allowed = _allowed_mask(vocab, grounded)
    never = [vocab.index[PAD], vocab.index[BOS], vocab.index[UNK]]
    eos = vocab.index[EOS]
    with torch.no_grad():
        x = torch.as_tensor(np.asarray(feats, dtype=np.float32)).unsqueeze(0)
        h0 = mod.encode(x)
        beams: list[tuple[float, list[int], Any, bool]] = [(0.0, [], h0, False)]
        for _ in range(max_len):
            if all(done for *_, done in beams):
                break
            candidates: list[tuple[float, list[int], Any, bool]] = []
            for score, seq, h, done in beams:
                if done:
                    candidates.append((score, seq, h, True))
                    continue
                last = torch.tensor([[seq[-1] if seq else vocab.index[BOS]]])
                logits, h2 = mod.step(last, h)
                if first is None:
                    first = time.perf_counter() - start
                logp = torch.log_softmax(logits[0, -1].float(), dim=-1).numpy().copy()
                logp[never] = -np.inf
                if allowed is not None:
                    logp[~allowed] = -np.inf
                for b in _banned(vocab, seq, no_dups):
                    logp[b] = -np.inf
                k = min(beam_size, int(np.isfinite(logp).sum()))
                if k == 0:
                    candidates.append((score, seq, h, True))
                    continue
                top = np.argsort(-logp, kind="stable")[:k]
                for t in top:
                    t = int(t)
                    candidates.append((score + float(logp[t]), seq + [t], h2, t == eos))
            candidates.sort(key=lambda c: _rank(c[0], len(c[1]), length_penalty), reverse=True)
            beams = candidates[:beam_size]
    add_tokens(len(beams[0][1]), first)
    return [vocab.decode(seq) for _, seq, _, _ in beams[:n_best]]


# --------------------------------------------------------------------------- data and training


def load_features(path: str | Path) -> dict[str, np.ndarray]:
    """Photo id -> feature vector from a ``.npz`` file (keys are photo ids): vectors of one length, finite."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            feats = {str(k): np.asarray(z[k], dtype=np.float32) for k in z.files}
    except FileNotFoundError:
        raise InputError("feature file not found", path=path) from None
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"cannot read features ({exc})", path=path) from None
    shapes: dict[tuple[int, ...], str] = {}
    for k, v in feats.items():
        shapes.setdefault(v.shape, k)
        if v.ndim != 1:
            raise InputError(f"photo {k}: expected a feature vector, got shape {v.shape}", path=path)
        if not np.isfinite(v).all():
            raise InputError(f"photo {k}: the feature vector holds NaN or infinite values", path=path)
    if len(shapes) > 1:
        (a, ka), (b, kb) = list(shapes.items())[:2]
        raise InputError(f"feature vectors of different lengths: {a[0]} (photo {ka}) and {b[0]} (photo {kb})",
                         path=path)
    return feats


def sequence_features(photo_ids: Sequence[str], features: Mapping[str, np.ndarray]) -> np.ndarray:
    """Stack the photos' vectors; a missing photo raises ``ItemError`` naming it."""
    missing = [p for p in photo_ids if p not in features]
    if missing:
        raise ItemError(f"no image features for photo(s) {', '.join(missing)}")
    return np.stack([features[p] for p in photo_ids])


def extract_features(photo_ids: Iterable[str], image_dir: str | Path, embedder: Any, *,
                     batch_size: int = 32, bar: Any = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Image feature vectors of photos (``embedder.embed_images``); unreadable/missing photos -> errors.
    ``bar`` (a :func:`connote.core.progress.progress_bar`) advances by one per distinct photo."""
    from connote.media.images import load_image
    from connote.media.photos import find_image

    feats: dict[str, np.ndarray] = {}
    errors: dict[str, str] = {}
    ids = list(dict.fromkeys(str(p) for p in photo_ids))
    for i in range(0, len(ids), batch_size):
        loaded = []
        for pid in ids[i:i + batch_size]:
            try:
                loaded.append((pid, load_image(find_image(image_dir, pid))))
            except ItemError as exc:
                errors[pid] = str(exc)
        if loaded:
            vecs = np.asarray(embedder.embed_images([im for _, im in loaded]), dtype=np.float32)
            feats.update({pid: v for (pid, _), v in zip(loaded, vecs, strict=True)})
        if bar is not None:
            bar.advance(len(ids[i:i + batch_size]))
    return feats, errors


def grounding_vocabulary(photo_ids: Iterable[str], descriptions: Mapping[str, Sequence[Any]]) -> set[str]:
    """Words of the description-in-isolation texts of these photos (``VistFile.descriptions``)."""
    words: set[str] = set()
    for p in photo_ids:
        for d in descriptions.get(p, []):
            text = d if isinstance(d, str) else getattr(d, "text", "")
            words.update(text.lower().split())
    return words


def train(examples: Sequence[tuple[np.ndarray, str]], *, vocab: Vocab | None = None, steps: int = 1000,
          batch_size: int = 32, lr: float = 1e-3, embed_dim: int = 256, hidden_dim: int = 512,
          num_layers: int = 1, dropout: float = 0.0, max_len: int = 100, min_count: int = 1, seed: int = 0,
          grad_clip: float = 5.0, log_every: int = 0, model: StoryModel | None = None,
          encoder_order: str = "reverse", bar: Any = None) -> tuple[StoryModel, list[float]]:
    """Train on ``(features (n_photos, d), story text)`` pairs with teacher forcing; seeded.

    ``encoder_order``: ``reverse`` (the paper's baseline, default) or ``forward`` (ignored when ``model``
    is given: a model keeps the order it was built with). ``bar`` advances by one per step.
    """
    import torch

    if not examples:
        raise ValueError("no training examples")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    if model is None:
        vocab = vocab or Vocab.build((t for _, t in examples), min_count=min_count)
        cfg = Seq2SeqConfig(feature_dim=int(examples[0][0].shape[-1]), vocab_size=len(vocab), embed_dim=embed_dim,
                            hidden_dim=hidden_dim, num_layers=num_layers, dropout=dropout, max_len=max_len,
                            encoder_order=encoder_order)
        model = StoryModel(cfg, vocab)
    vocab = model.vocab
    mod = model.module
    opt = torch.optim.Adam(mod.parameters(), lr=lr)
    bos, eos = vocab.index[BOS], vocab.index[EOS]
    encoded = [(f, [bos] + vocab.encode(t)[: max_len - 1] + [eos]) for f, t in examples]
    losses: list[float] = []
    mod.train()
    for step in range(steps):
        batch = [encoded[rng.randrange(len(encoded))] for _ in range(min(batch_size, len(encoded)))]
        width = max(len(s) for _, s in batch)
        toks = torch.tensor([s + [0] * (width - len(s)) for _, s in batch])
        feats = torch.as_tensor(np.stack([f for f, _ in batch]).astype(np.float32))
        logits = mod(feats, toks[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), toks[:, 1:].reshape(-1),
                                                 ignore_index=0)
        opt.zero_grad()
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(mod.parameters(), grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
        if bar is not None:
            bar.advance()
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1}: loss {loss.item():.4f} (ppl {math.exp(min(20.0, loss.item())):.1f})")
    mod.eval()
    return model, losses
