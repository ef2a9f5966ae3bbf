"""VIST's correlation study (the paper's section 5; ``connote vist correlate``): each story scored against the
other stories of its photo sequence, by reference-free metrics or by judges, and those scores correlated with the
human ratings or pairwise preferences (:func:`correlate_ratings`). The correlation machinery is
:mod:`connote.metrics.correlation`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.metrics.correlation import (
    PAIR_A_COLUMNS,
    PAIR_B_COLUMNS,
    PREFERENCE_COLUMNS,
    MiniLMEmbedder,
    RatingsFormat,
    SentenceEmbedder,
    embedding_similarity,
    smoothed_bleu,
)

#: The study's names of the two measures computed per story here (the others come from the metric engine).
SMOOTHED_BLEU = "smoothed-BLEU"
EMBEDDING_SIMILARITY = "MiniLM-cosine"
STUDY_METRICS = ("meteor", "smoothed_bleu", "embedding")
"""The paper's three measures: METEOR, smoothed BLEU, and the sentence-embedding stand-in for Skip-Thoughts."""
LOCAL_METRICS = {"smoothed_bleu": SMOOTHED_BLEU, "embedding": EMBEDDING_SIMILARITY}
#: ``meteor`` in the study is reported under both settings in use, each named: the jar's ``-t hter`` (the VIST
#: challenge's and AREL's measurement) and pycocoevalcap's ``-l en -norm``.
METEOR_COLUMNS = {"arel": "METEOR-hter", "coco": "METEOR-coco"}


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


# --------------------------------------------------------------------------- the correlation study (vist correlate)


@dataclass
class Correlation:
    """What ``vist correlate`` computed: the human judgements (``kind``: ratings or pairwise preferences), the
    automatic scores per story (or per pair), each measure's signature, the judges that judged nothing, the
    correlations with their paired tests and (preferences) the agreement with the majority."""

    kind: str
    human: dict[str, Any]
    auto: dict[str, dict[str, float]]
    signatures: dict[str, str] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)
    correlations: dict[str, Any] = field(default_factory=dict)
    paired: list[dict[str, Any]] | None = None
    agreement: dict[str, Any] | None = None

    def save(self, out: Path, ratings: Path, settings: dict[str, Any]) -> Path:
        """``OUT/correlation.json`` for ``connote report`` (:func:`connote.commands.measures.save_correlation`)."""
        from connote.commands.measures import save_correlation

        criterion = "rating" if self.agreement is None else "preference"
        return save_correlation(out, ratings=ratings, kind=self.kind, scores=self.auto, signatures=self.signatures,
                                criteria={criterion: {"correlations": self.correlations, "paired": self.paired,
                                                      "pairwise_agreement": self.agreement}}, settings=settings)

    def to_json(self) -> dict[str, Any]:
        """What ``--json`` prints: the correlations alone, or with whatever else was computed."""
        extra = {k: v for k, v in (("paired", self.paired), ("pairwise_agreement", self.agreement),
                                   ("signatures", self.signatures)) if v}
        if not extra and not self.unjudged:
            return self.correlations
        return {"correlations": self.correlations, **extra, **({"unjudged": self.unjudged} if self.unjudged else {})}


def check_study_settings(scores: Path | None, stories: Path | None, n_boot: int, ci_method: str) -> None:
    """Exactly one source of scores, a bootstrap count >= 0 and a known interval method (else exit 2)."""
    from connote.commands import checks
    from connote.vist.protocols import CI_METHODS

    if (scores is None) == (stories is None):
        raise InputError("give exactly one of --scores (precomputed) and --stories (an SIS file)")
    checks.at_least("--n-boot", n_boot, 0)
    if ci_method not in CI_METHODS:
        raise InputError(f"unknown --ci-method {ci_method!r}; valid: {', '.join(CI_METHODS)}")


def read_human(ratings: Path) -> tuple[str, list[Any] | None, dict[str, Any]]:
    """(kind, pairwise preferences or None, story id -> ratings) of a ratings file; VMC labels are refused."""
    from connote.metrics.correlation import ratings_kind, read_preferences, read_ratings

    kind = ratings_kind(ratings)
    prefs = None
    if kind == "vmc-labels":
        raise InputError("these are VMC evaluation labels: use connote vmc correlate", path=ratings)
    if kind == "pairwise":
        prefs = read_preferences(ratings)
        human = {s: [0.0] for _, a, b, _ in prefs for s in (a, b)}
    else:
        human = read_ratings(ratings)
    if not human:
        raise InputError("no ratings in this file", path=ratings)
    return kind, prefs, human


def metric_scores(human: Mapping[str, Any], *, scores: Path | None, stories: Path | None, metrics: str,
                  measured: bool, progress: bool) -> tuple[dict[str, dict[str, float]], Any]:
    """(story id -> metric scores, the SIS file read or None): precomputed ``scores``, or each rated story of
    ``stories`` scored against the other stories of its sequence with ``metrics`` (comma-separated; none needed
    when ``measured``: reference-free metrics or judges are asked)."""
    from connote.metrics.correlation import read_metric_scores

    if scores is not None:
        return read_metric_scores(scores), None
    from connote.core.progress import progress_bar
    from connote.vist.data import read_official

    vf = read_official(stories)
    known = {"bleu", "meteor", "rouge_l", "cider", "smoothed_bleu", "embedding"}
    wanted = tuple(m.strip() for m in metrics.split(",") if m.strip() and m.strip() != "none")
    unknown = [m for m in wanted if m not in known]
    if unknown or not (wanted or measured):
        raise InputError(f"--metrics: unknown {', '.join(unknown) or '(none given)'}; "
                         f"valid: {', '.join(sorted(known))}")
    with progress_bar(len(wanted), "scoring rated stories", enabled=progress) as bar:
        auto = leave_one_out_scores({s.id: (s.photo_ids, s.text) for s in vf.stories}, metrics=wanted,
                                    only=set(human), bar=bar) if wanted else {}
    return auto, vf


def story_measures(auto: dict[str, dict[str, float]], vf: Any, human: Mapping[str, Any], prefs: list[Any] | None,
                   *, story_metrics: str, metric_options: Mapping[str, Any], judge: list[str] | None, rubric: str,
                   judge_out: Path, temperature: float, judge_seed: int | None,
                   progress: bool, track: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """Add the reference-free story metrics' and the judges' scores of the rated stories to ``auto``; returns
    (signatures, the judges that judged nothing with why)."""
    from connote.commands import measures
    from connote.vist.measures import story_metric_scores

    signatures: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    if vf is None:
        raise InputError("--story-metrics and --judge need the stories' text: --stories SIS.json")
    rated = {s.id: (s.photo_ids, s.text) for s in vf.stories if s.id in human}
    if story_metrics:
        per, sigs = story_metric_scores(rated, story_metrics, progress=progress, **metric_options)
        signatures.update(sigs)
        for sid, row in per.items():
            auto.setdefault(sid, {}).update(row)
    if judge:
        from connote.tasks.judge import JudgeInput

        if prefs is not None:
            pairs = {pid: (a, b) for pid, a, b, _ in prefs if a in rated and b in rated}
            items = [JudgeInput(pid, rated[a][1], rated[b][1], tuple(rated[a][0])) for pid, (a, b) in pairs.items()]
        else:
            items = [JudgeInput(sid, text, None, tuple(photos)) for sid, (photos, text) in rated.items()]
        per, sigs, unjudged = measures.judge_scores(
            judge, items, rubric or ("pairwise" if prefs is not None else "share"),
            ("story-pair",) if prefs is not None else ("story",), out=judge_out,
            image_dir=metric_options.get("images"), temperature=temperature, seed=judge_seed, progress=progress,
            track=track)
        signatures.update(sigs)
        for sid, row in per.items():
            auto.setdefault(sid, {}).update(row)
    return signatures, unjudged


def require_overlap(human: Mapping[str, Any], auto: Mapping[str, Mapping[str, float]], unjudged: Mapping[str, str],
                    *, ratings: Path, vf: Any, source: Path) -> None:
    """Refuse a study with no story both rated and scored, saying why (judges that judged nothing: exit 1)."""
    if set(human) & {i for i, row in auto.items() if row}:
        return
    if unjudged:  # the judges were all there was to correlate, or all that could have been
        from connote.core.errors import ConnoteError

        raise ConnoteError("nothing to correlate: nothing was judged (" + "; ".join(
            f"{spec}: {why}" for spec, why in unjudged.items()) + ")")
    rated_in_sis = [s.id for s in vf.stories if s.id in human] if vf is not None else []
    if rated_in_sis:
        what = (f"{len(rated_in_sis)} rated stories are in the file, but none has another story on its "
                "photo sequence to be scored against")
    else:
        ids = sorted(s.id for s in vf.stories) if vf is not None else sorted(auto)
        what = (f"no story id is in both: {ratings.name} rates {len(human)} (e.g. "
                f"{', '.join(sorted(human)[:3])}), this file has {len(ids)} (e.g. {', '.join(ids[:3]) or 'none'})")
    raise InputError(f"nothing to correlate: {what}", path=source)


def correlate_ratings(ratings: Path, *, scores: Path | None = None, stories: Path | None = None,
                      metrics: str = "meteor,smoothed_bleu,embedding", n_boot: int = 1000, seed: int = 0,
                      ci_method: str = "percentile", progress: bool = True, story_metrics: str = "",
                      metric_options: Mapping[str, Any] | None = None, judge: list[str] | None = None,
                      rubric: str = "", judge_out: Path = Path("judges"), temperature: float = 0.0,
                      judge_seed: int | None = None, paired: bool = False, track: str | None = None) -> Correlation:
    """The correlation study of ``connote vist correlate``: the automatic measures of the rated stories (from
    ``scores``, or computed from ``stories`` with ``metrics``, ``story_metrics`` and ``judge``) against the
    mean human rating (or the pairwise preferences): Pearson, Spearman and Kendall with bootstrap intervals. The
    judges' runs are logged to ``track``."""
    from connote.commands.measures import require_judge_tracker
    from connote.core.progress import progress_bar
    from connote.metrics.correlation import correlate, pairwise_agreement, pairwise_dataset

    require_judge_tracker(track, judge)
    check_study_settings(scores, stories, n_boot, ci_method)
    kind, prefs, human = read_human(ratings)
    auto, vf = metric_scores(human, scores=scores, stories=stories, metrics=metrics, progress=progress,
                             measured=bool(story_metrics or judge))
    signatures: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    if story_metrics or judge:
        signatures, unjudged = story_measures(
            auto, vf, human, prefs, story_metrics=story_metrics, metric_options=metric_options or {}, judge=judge,
            rubric=rubric, judge_out=judge_out, temperature=temperature, judge_seed=judge_seed, progress=progress,
            track=track)
    agreement = None
    if prefs is not None:
        human, auto = pairwise_dataset(prefs, auto)
        agreement = pairwise_agreement(human, auto)
    require_overlap(human, auto, unjudged, ratings=ratings, vf=vf, source=scores if scores is not None else stories)
    n_metrics = len({m for row in auto.values() for m in row})
    with progress_bar(3 * n_metrics, f"bootstrap ({n_boot} resamples)", enabled=progress and n_boot > 0) as bar:
        res = correlate(human, auto, n_boot=n_boot, seed=seed, ci_method=ci_method, bar=bar)
    tests = None
    if paired:
        from connote.metrics.correlation import paired_tests

        tests = paired_tests(human, auto, n_boot=n_boot, seed=seed)
    return Correlation(kind, human, auto, signatures, unjudged, res, tests, agreement)


def print_correlation(c: Correlation, *, n_boot: int, ci_method: str) -> None:
    """The correlations as ``vist correlate`` prints them: coefficients with p-values, the bootstrap intervals,
    notes, the pairwise agreement, the paired tests and the signatures."""
    from connote.commands.measures import echo_paired, echo_signatures
    from connote.commands.output import echo_columns

    coefficients = ("pearson", "spearman", "kendall")
    res = c.correlations
    echo_columns(["metric", "n", *(f"{k} (p)" for k in coefficients)],
                 [[m, str(r["n"]), *(f"{r[k]:.3f} ({r[k + '_p']:.3g})" for k in coefficients)]
                  for m, r in res.items()])
    if n_boot > 0:
        print(f"{1 - 0.05:.0%} bootstrap intervals ({ci_method}, {n_boot} resamples of stories):")
        echo_columns(["metric", *coefficients],
                     [[m, *(f"[{r[k + '_ci'][0]:.3f}, {r[k + '_ci'][1]:.3f}]" for k in coefficients)]
                      for m, r in res.items()])
    for m, r in res.items():
        if r.get("note"):
            print(f"{m}: {r['note']}")
    if c.agreement:
        print("pairwise preferences: agreement with the majority of people (ties 1/2) and tau over pairs")
        echo_columns(["metric", "pairs", "accuracy", "tau"],
                     [[m, str(a["n_pairs"]), f"{a['accuracy']:.3f}", f"{a['tau']:.3f}"]
                      for m, a in c.agreement.items()])
    if c.paired:
        echo_paired(c.paired, echo_columns)
    if c.signatures:
        echo_signatures(c.signatures)
