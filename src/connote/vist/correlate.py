"""VIST's automatic scores for the correlation study: each story against the other stories of its photo
sequence (the paper's section 5). The correlation machinery is :mod:`connote.metrics.correlation`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connote.metrics.correlation import (
    EMBEDDING_SIMILARITY,
    LOCAL_METRICS,
    METEOR_COLUMNS,
    PAIR_A_COLUMNS,
    PAIR_B_COLUMNS,
    PREFERENCE_COLUMNS,
    SMOOTHED_BLEU,
    STUDY_METRICS,
    MiniLMEmbedder,
    RatingsFormat,
    SentenceEmbedder,
    embedding_similarity,
    smoothed_bleu,
)


def _is_preferences(path: Path, header: set[str] | None) -> bool:
    return header is not None and all(header & set(cols) for cols in (PAIR_A_COLUMNS, PAIR_B_COLUMNS,
                                                                        PREFERENCE_COLUMNS))


#: The human judgements ``connote vist correlate`` reads (``connote.metrics.correlation.RATINGS``, from the plugin):
#: VHED-style preferences between two stories (``read_preferences``), else one rating per row (``read_ratings``).
PREFERENCES = RatingsFormat("a CSV of story_a, story_b, preferred: VHED-style preferences", _is_preferences)
STORY_RATINGS = RatingsFormat("a CSV of story id, rating, rater: one rating per row",
                              lambda path, header: header is not None, catch_all=True)


def leave_one_out_scores(stories: Mapping[str, tuple[tuple[str, ...], str]], *,
                         metrics: tuple[str, ...] = STUDY_METRICS, corpus_scorer: Any = None,
                         only: set[str] | None = None,
                         embedder: SentenceEmbedder | None = None, bar: Any = None) -> dict[str, dict[str, float]]:
    """Per-story scores against the other stories of the same photo sequence (the paper's section 5).

    ``stories``: story id -> (photo ids, text). Stories alone on their sequence get no score; ``only``
    restricts the scored stories (e.g. to the rated ones). ``metrics``: any of :mod:`connote.metrics`'
    (``bleu``, ``meteor``, ``rouge_l``, ``cider``; computed by ``corpus_scorer``; without one, ``meteor`` gives
    two columns, :data:`METEOR_COLUMNS`: the jar's ``-t hter`` and ``-l en -norm``), ``smoothed_bleu``
    (:func:`smoothed_bleu`) and ``embedding`` (:func:`embedding_similarity` with ``embedder``, by default
    the embedded MiniLM: the named stand-in for Skip-Thoughts). ``bar`` (a
    :func:`connote.core.progress.progress_bar` of ``len(metrics)``) advances by one per metric computed.
    """
    from connote.vist.protocols import _per_item, default_corpus_scorer

    by_seq: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for sid, (seq, _) in stories.items():
        by_seq[seq].append(sid)
    hyps: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    for sid, (seq, text) in stories.items():
        if only is not None and sid not in only:
            continue
        others = [stories[o][1] for o in by_seq[seq] if o != sid and stories[o][1].strip()]
        if others:
            hyps[sid], refs[sid] = text, others
    if not hyps:
        return {}
    corpus_metrics = tuple(m for m in metrics if m not in LOCAL_METRICS)
    out: dict[str, dict[str, float]] = {sid: {} for sid in hyps}
    if corpus_metrics:
        if corpus_scorer is not None:
            runs = [(corpus_scorer, None)]
        elif "meteor" in corpus_metrics:  # METEOR once per setting, each under its own column name
            runs = [(default_corpus_scorer(corpus_metrics, meteor="arel"), "arel"),
                    (default_corpus_scorer(("meteor",), meteor="coco"), "coco")]
        else:
            runs = [(default_corpus_scorer(corpus_metrics), None)]
        for scorer, setting in runs:
            _, per_item, _ = scorer(hyps, refs)
            for sid, row in _per_item(per_item).items():
                if setting is not None:
                    row = {METEOR_COLUMNS[setting] if m == "METEOR" else m: v for m, v in row.items()}
                out.setdefault(sid, {}).update(row)
        if bar is not None:
            bar.advance(len(corpus_metrics))
    if "smoothed_bleu" in metrics:
        for sid in hyps:
            out[sid][SMOOTHED_BLEU] = smoothed_bleu(hyps[sid], refs[sid])
        if bar is not None:
            bar.advance()
    if "embedding" in metrics:
        for sid, v in embedding_similarity(hyps, refs, embedder or MiniLMEmbedder()).items():
            out[sid][EMBEDDING_SIMILARITY] = v
        if bar is not None:
            bar.advance()
    return {sid: row for sid, row in out.items() if row}
