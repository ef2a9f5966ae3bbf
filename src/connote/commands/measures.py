"""What ``vist correlate`` and ``vmc correlate`` add to precomputed scores: judges, the paired test
between metrics, and pairwise / VMC-label human judgements; the options both commands declare. No command
lives here."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

# the options of both correlate commands, declared once
NBoot = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: no intervals).")]
BootSeed = Annotated[int, typer.Option(help="Bootstrap seed.")]
JudgeOut = Annotated[Path, typer.Option("--judge-out", help="Run folder caching the judge calls.")]
JudgeTemperature = Annotated[float, typer.Option("--temperature", help="Judge sampling temperature.")]
JudgeSeed = Annotated[int | None, typer.Option("--judge-seed", help="Judge sampling seed.")]
Paired = Annotated[bool, typer.Option("--paired/--no-paired", help="Paired tests between metrics.")]
SaveTo = Annotated[Path | None, typer.Option("--out", "-o", help="Also write OUT/correlation.json (for "
                                             "connote report).")]


class JudgeScores(NamedTuple):
    """Per-item judge scores, a signature per judge and rubric, and each judge that judged nothing with why."""

    scores: dict[str, dict[str, float]]
    signatures: dict[str, str]
    unjudged: dict[str, str]


def require_judge_tracker(track: str | None, judge: Sequence[str] | None) -> None:
    """``--track`` of a correlate command, checked before anything runs: a known tracker that is installed, and a
    judge whose runs it logs (the metrics' scores are no run)."""
    from connote.commands.tracking import require_tracker
    from connote.core.errors import InputError

    require_tracker(track)
    if track and not judge:
        raise InputError(f"--track {track} logs the judges' runs: give --judge")


def judge_scores(specs: Sequence[str], items: list[Any], rubrics: str, kinds: Sequence[str], *, out: Path,
                 image_dir: Path | None, temperature: float, seed: int | None, progress: bool,
                 track: str | None = None) -> JudgeScores:
    """Run each judge (a generation backend spec) with the rubrics; per-item scores, a signature each, and the
    judges with no score at all (n = 0: every call failed or no answer could be read), each with why. Each judge's
    finished run folder is logged to ``track`` (as ``connote run --track`` logs a run)."""
    from connote.commands.tracking import log_run
    from connote.models.registry import load_model
    from connote.runs.store import fingerprint
    from connote.tasks.judge import rubrics_from, run_judges

    chosen = rubrics_from(rubrics, kinds)
    scores: dict[str, dict[str, float]] = {}
    sigs: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    for spec in specs:
        model = load_model(spec)
        folder = out / fingerprint({"judge": spec})[:12]
        per, summary = run_judges(model, items, chosen, folder, image_dir=image_dir, temperature=temperature,
                                  seed=seed, progress=progress)
        log_run(folder, track)
        for item, row in per.items():
            scores.setdefault(item, {}).update(row)
        for name, sig in summary["signatures"].items():
            sigs[f"{name}[{spec}]"] = sig
        failures = summary["failures"]
        typer.echo(f"judge {spec}: {summary['computed']} call(s) now, {summary['resumed']} cached, "
                   f"{len(failures)} without a score (run folder {folder})", err=True)
        for item, why in sorted(failures.items())[:5]:
            typer.echo(f"  {item}: {why}", err=True)
        if not per:
            first = next(iter(sorted(failures.items())), None)
            unjudged[spec] = (f"n = 0: none of {len(items) * len(chosen)} judgement(s) gave a score"
                              + (f" (e.g. {first[0]}: {first[1][:160]})" if first else ""))
    return JudgeScores(scores, sigs, unjudged)


def unjudged_exit(unjudged: Mapping[str, str]) -> int:
    """The exit status after a correlation: 1 when a judge judged nothing (its row is missing), else 0."""
    for spec, why in unjudged.items():
        typer.echo(f"judge {spec}: {why}; it has no row in the correlations", err=True)
    return 1 if unjudged else 0


def _fmt(v: Any, digits: int = 3) -> str:
    return "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def echo_paired(tests: list[dict[str, Any]], echo_columns: Callable[[list[str], list[list[str]]], None]) -> None:
    """The paired test table: difference of each coefficient (A - B), bootstrap p, Williams' p (Pearson)."""
    if not tests:
        return
    typer.echo("paired tests (A - B; paired bootstrap p; Williams' test for Pearson):")
    rows = []
    for t in tests:
        if "note" in t:
            rows.append([t["a"], t["b"], str(t["n"]), t["note"], "", "", ""])
            continue
        rows.append([t["a"], t["b"], str(t["n"]),
                     *(f"{_fmt(t[c + '_diff'])} (p {t[c + '_p']:.3g})" if not math.isnan(t[c + "_p"])
                       else _fmt(t[c + "_diff"]) for c in ("pearson", "spearman", "kendall")),
                     f"{t['williams_p']:.3g}" if not math.isnan(t["williams_p"]) else "nan"])
    echo_columns(["A", "B", "n", "pearson", "spearman", "kendall", "williams p"], rows)


def echo_signatures(sigs: Mapping[str, str]) -> None:
    for name, sig in sigs.items():
        typer.echo(f"signature {name}: {sig}")


def save_correlation(out: Path, *, ratings: Path, kind: str, criteria: Mapping[str, Mapping[str, Any]],
                     scores: Mapping[str, Mapping[str, float]], signatures: Mapping[str, str],
                     settings: Mapping[str, Any]) -> Path:
    """Write ``OUT/correlation.json`` (what ``connote report`` reads): per human criterion the correlations,
    paired tests and pairwise agreement, each metric's mean over the scored items, the per-item scores (per story,
    or per pair for preferences) and the signatures."""
    import numpy as np

    from connote.core.files import file_sha256
    from connote.runs.scores import finite_json
    from connote.runs.store import run_metadata, write_json

    names = sorted({m for row in scores.values() for m in row})
    means = {m: float(np.mean([row[m] for row in scores.values() if m in row])) for m in names}
    record = {"kind": "metric-human-correlation", "ratings": {"path": str(ratings.resolve()),
                                                              "sha256": file_sha256(ratings)[:16]
                                                              if ratings.is_file() else None},
              "ratings_kind": kind, "criteria": dict(criteria), "means": means, "signatures": dict(signatures),
              "per_item": {k: dict(v) for k, v in scores.items()},
              "settings": dict(settings), **run_metadata(dict(settings))}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "correlation.json"
    write_json(path, finite_json(record))
    return path
