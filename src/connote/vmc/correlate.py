"""``vmc correlate``: the VMC evaluation study's labels as human judgements, and each metric's or judge's
correlation with them per criterion (:func:`correlate_labels`)."""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_text, text_lines
from connote.metrics.correlation import RatingsFormat


def _is_labels(path: Path, header: set[str] | None) -> bool:
    return (path / "labels.csv").is_file() if header is None else {"item_id", "criterion", "label"} <= header


#: The evaluation study's labels among the human judgements (``connote.metrics.correlation.RATINGS``, from the
#: plugin): ``connote vmc correlate`` reads them (:func:`read_vmc_labels`).
LABELS = RatingsFormat("labels.csv of the VMC evaluation study (connote collect import), or its folder", _is_labels)


def read_vmc_labels(path: str | Path) -> dict[str, dict[str, list[float]]]:
    """``labels.csv`` of the VMC evaluation study (``item_id, rater, criterion, label``; or its folder):
    ``{criterion: {item id: [0/1 labels]}}``."""
    path = Path(path)
    if path.is_dir():
        path = path / "labels.csv"
    text = read_text(path, what="labels file")
    rows = list(csv.reader(text_lines(text)))
    header = [c.strip().lower() for c in rows[0]] if rows else []
    need = ("item_id", "criterion", "label")
    if not all(c in header for c in need):
        raise InputError("expected the columns item_id, rater, criterion, label (connote collect import)",
                         path=path, line=1)
    ii, ic, il = (header.index(c) for c in need)
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for n, row in enumerate(rows[1:], 2):
        if not row:
            continue
        try:
            out[row[ic].strip()][row[ii].strip()].append(float(row[il]))
        except (ValueError, IndexError):
            raise InputError(f"label {row[il] if len(row) > il else ''!r} is not 0 or 1", path=path, line=n) from None
    return {c: dict(v) for c, v in out.items()}


def judge_caption_scores(labels: Path, judge: list[str], *, videos: Path | None, judge_out: Path,
                         temperature: float, judge_seed: int | None, progress: bool, track: str | None = None) -> Any:
    """Each judge's scores of the study's captions under VMC A.7's four criteria (``captions.csv`` beside
    ``labels.csv``; the videos' frames when ``videos`` is given): :class:`connote.commands.measures.JudgeScores`."""
    from connote.commands.measures import judge_scores
    from connote.tasks.judge import JudgeInput

    folder = labels if labels.is_dir() else labels.parent
    cap_file = folder / "captions.csv"
    if not cap_file.is_file():
        raise InputError("a judge needs the captions: captions.csv beside labels.csv (connote collect import)",
                         path=folder)
    with open(cap_file, newline="", encoding="utf-8") as fh:
        caps = list(csv.DictReader(fh))
    files = {}
    if videos is not None:
        from connote.vmc.data import find_videos

        files = find_videos(videos)
    items = [JudgeInput(r["item_id"], r["caption"], None, (), str(files[r["video_id"]])
                        if r["video_id"] in files else None) for r in caps if r.get("item_id")]
    return judge_scores(judge, items, "vmc-a7", ("caption",), out=judge_out, image_dir=None, temperature=temperature,
                        seed=judge_seed, progress=progress, track=track)


@dataclass
class LabelCorrelation:
    """What ``vmc correlate`` computed: per criterion the correlations (and paired tests), the scores per item,
    each judge's signature and the judges that judged nothing."""

    criteria: dict[str, dict[str, Any]]
    auto: dict[str, dict[str, float]]
    signatures: dict[str, str] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)


def correlate_labels(labels: Path, *, scores: Path | None = None, judge: list[str] | None = None,
                     videos: Path | None = None, judge_out: Path = Path("judges"), temperature: float = 0.0,
                     judge_seed: int | None = None, criteria: str = "", n_boot: int = 1000, seed: int = 0,
                     paired: bool = False, progress: bool = True, track: str | None = None) -> LabelCorrelation:
    """``connote vmc correlate``: per criterion of the VMC evaluation study, Pearson, Spearman and Kendall of each
    metric (``scores``) or judge with the share of annotators saying yes, with bootstrap intervals. The judges' runs
    are logged to ``track``."""
    from connote.commands.measures import require_judge_tracker
    from connote.metrics.correlation import correlate, paired_tests, read_metric_scores

    require_judge_tracker(track, judge)
    by_criterion = read_vmc_labels(labels)
    wanted = [c.strip() for c in criteria.split(",") if c.strip()] or sorted(by_criterion)
    missing = [c for c in wanted if c not in by_criterion]
    if missing:
        raise InputError(f"--criteria: {', '.join(missing)} not in the labels; present: {', '.join(by_criterion)}",
                         path=labels)
    auto: dict[str, dict[str, float]] = read_metric_scores(scores) if scores else {}
    signatures: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    if judge:
        per, signatures, unjudged = judge_caption_scores(labels, judge, videos=videos, judge_out=judge_out,
                                                         temperature=temperature, judge_seed=judge_seed,
                                                         progress=progress, track=track)
        for iid, row in per.items():
            auto.setdefault(iid, {}).update(row)
    if not auto:
        if unjudged:
            from connote.core.errors import ConnoteError

            raise ConnoteError("nothing to correlate: nothing was judged (" + "; ".join(
                f"{spec}: {why}" for spec, why in unjudged.items()) + ")")
        raise InputError("nothing to correlate: give --scores or --judge")
    results: dict[str, dict[str, Any]] = {}
    for c in wanted:
        results[c] = {"correlations": correlate(by_criterion[c], auto, n_boot=n_boot, seed=seed)}
        if paired:
            results[c]["paired"] = paired_tests(by_criterion[c], auto, n_boot=n_boot, seed=seed)
    return LabelCorrelation(results, auto, signatures, unjudged)


def print_label_correlations(found: LabelCorrelation) -> None:
    """One table per criterion (each coefficient with its 95% interval), the paired tests and the signatures."""
    import math

    from connote.commands.measures import echo_paired, echo_signatures
    from connote.commands.output import echo_columns

    def cell(r: dict, k: str) -> str:
        lo, hi = r[k + "_ci"]
        return f"{r[k]:.3f} [{lo:.3f}, {hi:.3f}]" if not math.isnan(r[k]) else "nan"

    for c, res in found.criteria.items():
        print(f"{c} (human: share of annotators saying yes)")
        echo_columns(["metric", "n", "pearson [95% CI]", "spearman [95% CI]", "kendall [95% CI]"],
                     [[m, str(r["n"]), *(cell(r, k) for k in ("pearson", "spearman", "kendall"))]
                      for m, r in res["correlations"].items()])
        if res.get("paired"):
            echo_paired(res["paired"], echo_columns)
    echo_signatures(found.signatures)
