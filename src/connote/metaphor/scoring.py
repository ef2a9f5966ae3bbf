"""Scoring caption runs as the paper's Table 1 (``connote metaphor score``).

Columns: BLEU-4, ROUGE-L, CIDEr (x100, as the paper prints them), BERT-F1, ACS, ACD, and the share
of captions that follow the template. The text metrics come from :func:`connote.metrics.compute_scores`
(the project's metrics engine); BERT-F1 from its ``bertscore`` metric and ACS/ACD from ``acs_acd``, which
need encoders (``bertscore_model``, ``concept_encoder``; ``connote metaphor score --bertscore-model embedded
--concept-encoder embedded`` uses the shipped MiniLM offline) and are reported as missing without. Captions
outside the template are counted; the concept metrics themselves give them CS = 1 (ACS 1, ACD 0), as
the paper penalises them.

Videos the run could not caption (and videos missing from the run) are scored as empty captions, so
a model is not rewarded for failing; they are counted in ``uncaptioned``.

Intervals: a percentile bootstrap over videos of the per-video scores' mean (``n_boot`` resamples,
seeded). For ROUGE-L, BERT-F1, ACS, ACD and the template share the corpus score *is* that mean; for
BLEU-4 and CIDEr (corpus-level statistics) the interval is that of the per-video mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.errors import InputError
from connote.metaphor.template import parse_metaphor
from connote.metrics.registry import score_keys

# the paper's Table 1 columns (as it prints them) and its scale; the engine keys come from the name table
_PRINTED = {"BLEU-4": 100.0, "ROUGE-L": 100.0, "CIDEr": 100.0, "BERT-F1": 1.0, "ACS": 1.0, "ACD": 1.0}
COLUMNS: dict[str, tuple[tuple[str, ...], float]] = {col: (score_keys(col), scale) for col, scale in _PRINTED.items()}
DEFAULT_METRICS = ("bleu", "rouge_l", "cider")


@dataclass
class RunScores:
    """Scores of one run against the references."""

    run: str
    n: int
    table: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None]
    template_share: float
    outside_template: list[str]
    uncaptioned: list[str]
    per_video: dict[str, dict[str, Any]] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "n": self.n, "table": self.table,
                "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
                "template_share": self.template_share, "outside_template": self.outside_template,
                "uncaptioned": self.uncaptioned, "signatures": self.signatures, "per_video": self.per_video}


def _pick(values: dict[str, float], names: Sequence[str]) -> float | None:
    for n in names:
        if n in values:
            return float(values[n])
    return None


def bootstrap_interval(values: Sequence[float], n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95, method: str = "percentile") -> tuple[float, float]:
    """Bootstrap interval of the mean of ``values`` from ``scipy.stats.bootstrap``, seeded.

    ``method``: ``percentile`` (default) or ``BCa``/``basic``. All values equal gives ``(mean, mean)``.
    """
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1 or np.ptp(x) == 0:  # scipy needs two distinct values; every resample has this mean
        return float(x.mean()), float(x.mean())
    res = stats.bootstrap((x,), lambda s, axis: np.mean(s, axis=axis), n_resamples=n_boot, confidence_level=level,
                          method=method, vectorized=True, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def score_captions(captions: dict[str, str | None], refs: dict[str, list[str]], *, run: str = "",
                   metrics: Sequence[str] = DEFAULT_METRICS, n_boot: int = 1000, seed: int = 0,
                   **settings: Any) -> RunScores:
    """Score ``video_id -> caption`` against ``video_id -> references`` (ids of ``refs`` are scored)."""
    from connote.metrics import METRICS, compute_scores

    ids = [v for v in refs if refs[v]]
    if not ids:
        raise InputError("no references to score against")
    uncaptioned = [v for v in ids if not captions.get(v)]
    hyps = {v: captions.get(v) or "" for v in ids}
    wanted = [m for m in metrics if m in METRICS or m not in ("acs", "concepts")]
    if "acs_acd" in wanted and "bertscore" not in wanted:
        wanted.insert(wanted.index("acs_acd"), "bertscore")  # ACD needs each caption's BERTScore-F1
    result = compute_scores(hyps, {v: refs[v] for v in ids}, wanted, per_item=True, **settings)
    per_item = {v: dict(row) for v, row in (result.per_item or {}).items()}
    for row in per_item.values():  # per-video ACS/ACD from CS (and F1): ACS_i = CS_i, ACD_i = F1_i (1 - CS_i)
        if "CS" in row:
            row["ACS"] = row["CS"]
            if "BERTScore_F1" in row:
                row["ACD"] = row["BERTScore_F1"] * (1.0 - row["CS"])
    parsed = {v: parse_metaphor(hyps[v]) for v in ids}
    outside = [v for v in ids if parsed[v] is None]
    table: dict[str, float | None] = {}
    intervals: dict[str, tuple[float, float] | None] = {}
    for col, (names, scale) in COLUMNS.items():
        corpus = _pick(result.scores, names)
        table[col] = None if corpus is None else corpus * scale
        vals = [_pick(per_item.get(v, {}), names) for v in ids]
        if corpus is not None and all(x is not None for x in vals) and n_boot > 0:
            lo, hi = bootstrap_interval([x * scale for x in vals], n_boot, seed)  # type: ignore[operator]
            intervals[col] = (lo, hi)
        else:
            intervals[col] = None
    follows = [0.0 if parsed[v] is None else 1.0 for v in ids]
    share = sum(follows) / len(ids)
    table["template"] = share
    intervals["template"] = bootstrap_interval(follows, n_boot, seed) if n_boot > 0 else None
    per_video = {v: {"caption": captions.get(v), "follows_template": parsed[v] is not None,
                     **{k: val for k, val in per_item.get(v, {}).items()}} for v in ids}
    return RunScores(run=run, n=len(ids), table=table, intervals=intervals, template_share=share,
                     outside_template=outside, uncaptioned=uncaptioned, per_video=per_video,
                     signatures=dict(result.signatures))


def score_runs(runs: Sequence[str | Path], refs_path: str | Path, *, split: str | Path | None = None,
               metrics: Sequence[str] = DEFAULT_METRICS, n_boot: int = 1000, seed: int = 0,
               **settings: Any) -> list[RunScores]:
    """Score several caption run folders against the VMC caption table (optionally one split)."""
    from connote.metaphor.captioning import read_run_captions
    from connote.metaphor.data import read_caption_table, read_split

    refs = read_caption_table(refs_path)
    if split is not None:
        ids = read_split(split)
        assert isinstance(ids, list)
        unknown = [i for i in ids if i not in refs]
        if unknown:
            raise InputError(f"split ids not in the caption table: {', '.join(unknown[:10])}", path=split)
        refs = {i: refs[i] for i in ids}
    else:
        # without a split, score the videos the runs captioned (all runs share one id set)
        seen: set[str] = set()
        for r in runs:
            seen |= set(read_run_captions(r))
        refs = {i: refs[i] for i in refs if i in seen}
    return [_score_run(r, refs, metrics=metrics, n_boot=n_boot, seed=seed, **settings) for r in runs]


def _score_run(run: str | Path, refs: dict[str, list[str]], **kw: Any) -> RunScores:
    """One run's scores; a run with several samples per video is scored per sample and the table is the
    mean over samples (the public VMC evaluation's protocol); its intervals and per-video rows are sample 1's."""
    from connote.metaphor.captioning import read_run_samples

    samples, temperature = read_run_samples(run)
    scored = [score_captions(s, refs, run=str(run), **kw) for s in samples]
    first = scored[0]
    if len(scored) > 1:
        for col in first.table:
            vals = [s.table[col] for s in scored]
            first.table[col] = None if any(v is None for v in vals) else sum(vals) / len(vals)  # type: ignore[arg-type]
        first.template_share = float(first.table.get("template") or 0.0)
    first.signatures = {k: f"{v}|samples:{len(scored)}|temperature:{temperature:g}"
                        for k, v in first.signatures.items()}
    return first


# --------------------------------------------------------------------------- scores stored in a run folder

#: Task name under which a caption run's scores are stored (the run's ``run.json`` task).
SCORES_TASK = "vmc-captioning"
SCORES_PREFIX = "vmc"


def score_signature(refs: str | Path, *, split: str | Path | None, video_ids: Sequence[str],
                    metrics: Sequence[str], n_boot: int, seed: int,
                    encoders: dict[str, Any] | None = None) -> dict[str, Any]:
    """What made a run's scores (hashed into the stored file's name): the reference table's and the split's
    sha256, the scored video ids, the metrics, the encoders as named on the command line (BERTScore model and
    layer, concept encoder, concept split) and the bootstrap settings. The run's captions are not part of it."""
    import hashlib

    from connote.runs.store import file_sha256

    return {"task": SCORES_TASK, "refs_sha256": file_sha256(refs),
            "split_sha256": file_sha256(split) if split is not None else None,
            "video_ids_sha256": hashlib.sha256("\n".join(sorted(video_ids)).encode()).hexdigest(),
            "metrics": list(metrics), "encoders": dict(sorted((encoders or {}).items())),
            "n_boot": int(n_boot), "seed": int(seed), "interval": "percentile bootstrap of the per-video mean"}


def store_run_scores(scores: RunScores, signature: dict[str, Any], *, refs: str | Path,
                     split: str | Path | None = None) -> tuple[Path, str | None]:
    """Store one run's scores (Table 1 row, intervals, per-video scores) in ``run/scores/vmc-<key>.json``.

    Returns (path, note); the note says when an earlier file of the same signature was replaced.
    """
    import json

    from connote.runs.scores import save_scores
    from connote.runs.store import file_sha256

    run = Path(scores.run)
    captions = run / "captions.jsonl"
    source: dict[str, Any] = {"path": str(captions.resolve())}
    if captions.is_file():
        source["sha256"] = file_sha256(captions)
    try:
        source["run_fingerprint"] = json.loads((run / "run.json").read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        pass
    fields = {"refs": {"path": str(Path(refs).resolve()), "sha256": signature["refs_sha256"]},
              "split": None if split is None else {"path": str(Path(split).resolve()),
                                                   "sha256": signature["split_sha256"]},
              **scores.to_dict()}
    return save_scores(run, SCORES_TASK, SCORES_PREFIX, signature, fields, source=source)


def per_video_acd(run: str | Path) -> tuple[dict[str, float], Path | None]:
    """Per-video ACD of a run's most recently stored scores that have ACD (``{}, None`` when none).

    Reads the keyed files of ``connote metaphor score`` (``scores/vmc-*.json``) and, for run folders scored
    before scores were keyed, the old ``scores.json``.
    """
    from connote.runs.scores import stored_scores

    candidates: list[tuple[Path, dict[str, Any]]] = list(reversed(stored_scores(run, SCORES_TASK)))
    legacy = Path(run) / "scores.json"
    if legacy.is_file():
        candidates.append((legacy, _read_legacy(legacy)))
    for path, stored in candidates:
        values = acd_values(stored)
        if values:
            return values, path
    return {}, None


def acd_values(stored: dict[str, Any]) -> dict[str, float]:
    """``video -> ACD`` from a scores object's ``per_video`` rows."""
    per_video = stored.get("per_video") or {}
    return {str(v): float(s["ACD"]) for v, s in per_video.items() if isinstance(s, dict) and s.get("ACD") is not None}


def _read_legacy(path: Path) -> dict[str, Any]:
    from connote.data.jsonio import read_json

    obj = read_json(path)
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object with per_video scores", path=path)
    return obj
