"""Report section of visual storytelling runs (``connote vist generate`` folders) and their stored scores.

A storytelling run folder (``results.json``, or an older ``run.json``, with task ``vist-storytelling``) has no
scores of its own; ``connote vist score RUN --refs GOLD`` stores them in ``RUN/scores/<protocol>-<key>.json``
(the key hashes the protocol, the gold's and template's sha256 and the settings; see
:mod:`connote.vist.protocols`).
A run is reported with its most recently stored scores; runs share a table only when those scores share
the gold, protocol, settings and task version (:attr:`Run.group`).

The section is VIST's METEOR table (one row per run, METEOR with its 95% bootstrap interval; under the
album protocol also BLEU-1..4, ROUGE-L and CIDEr-D), the paired bootstrap test between every two runs on
their per-sequence (per-album) scores (:func:`connote.vist.protocols.compare`, the test ``connote vist
score --compare`` prints) and a figure of the metrics with their intervals. A run without stored scores is
listed with the command that scores it.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

from connote.report.document import Figure, Run, Section, Table
from connote.report.scored import fmt, read_run_json, read_scored_run, run_label, unique_names  # noqa: F401

TASK = "vist-storytelling"
KIND_NAME = "vist-storytelling"
#: Printed scale of the table (the VIST and AREL papers print scores x 100).
SCALE = 100.0


def _how_to_score(folder: Path, meta: dict[str, Any]) -> str:
    sequences = (meta.get("config") or {}).get("sequences")
    if sequences and "story-in-sequence" in Path(sequences).name:  # generated from an SIS file: it is the gold
        return f"connote vist score {folder} --refs {sequences}"
    template = f" --template {sequences}" if sequences else ""
    return f"connote vist score {folder} --refs GOLD.story-in-sequence.json{template}"


class StorytellingKind:
    """The ``vist-storytelling`` run kind of ``connote report``."""

    name = KIND_NAME
    #: VIST's published tables print 0-1; the report shows every column x 100, as its own table.
    published_x100 = ("*",)

    def published_values(self, table: Any, run: Run) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A scored run's values on a published table (:mod:`connote.report.published`); None when it is not
        scored or was scored under another protocol than the table's."""
        stored = run.results.get("scores")
        if not stored or stored.get("protocol") != table.match.get("protocol", stored.get("protocol")):
            return None
        return dict(stored.get("scores") or {}), {k: v for k, v in (stored.get("ci") or {}).items() if v}

    def why_not_published(self, table: Any, run: Run) -> str:
        stored = run.results.get("scores")
        if not stored:
            return f"it has no stored scores (score the run first: connote vist score {run.folder})"
        return (f"it was scored under the {stored.get('protocol')} protocol; {table.id} is under the "
                f"{table.match.get('protocol')} protocol")

    def recognise(self, folder: Path) -> Run | None:
        """A storytelling run folder with its most recent stored scores (None: not a storytelling run)."""
        folder = Path(folder)
        loaded = read_scored_run(folder, TASK, TASK, ("protocol", "scores", "per_item", "gold", "settings"),
                                 "submission.json", _how_to_score)
        if loaded is None:
            return None
        meta, version, results, stored = loaded
        if stored is None:
            return Run(folder=folder, kind=KIND_NAME, name=run_label(folder, meta), group=("not scored", version),
                       results=results)
        gold = stored.get("gold") or {}
        group = (f"gold {Path(str(gold.get('path', '?'))).name} sha256:{str(gold.get('sha256', '?'))[:12]}",
                 f"protocol {stored['protocol']}", f"scores {stored['key']}", version)
        return Run(folder=folder, kind=KIND_NAME, name=run_label(folder, meta), group=group, results=results)

    def section(self, runs: list[Run]) -> Section:
        """VIST's METEOR table, the paired tests and the metric figure (or how to score unscored runs)."""
        scored = [r for r in runs if r.results.get("scores")]
        unscored = [r for r in runs if not r.results.get("scores")]
        if not scored:
            return self._unscored_section(unscored)
        protocol = scored[0].results["scores"]["protocol"]
        section = Section(title=f"Visual storytelling (VIST), {protocol} protocol", kind=KIND_NAME, runs=runs)
        names = unique_names(scored)
        stores = [r.results["scores"] for r in scored]
        metrics = list(stores[0]["scores"])
        for s in stores[1:]:
            metrics += [m for m in s["scores"] if m not in metrics]
        header = ["Run", *[f"{m} [95% CI]" for m in metrics], "Scored"]
        rows, values = [], []
        for name, run, s in zip(names, scored, stores, strict=True):
            ci = s.get("ci") or {}
            unit = "albums" if protocol == "album" else "sequences"
            n = f"{s.get('n_covered', s.get('n_scored'))}/{s.get('n_items')} {unit}"
            rows.append([name, *[fmt(s["scores"].get(m), ci.get(m), scale=SCALE) for m in metrics], n])
            values.append({"run": name, "folder": str(run.folder), "scores_file": run.results["scores_file"],
                           **{m: s["scores"].get(m) for m in metrics},
                           **{f"{m} ci": ci.get(m) for m in metrics}, "n_covered": s.get("n_covered"),
                           "n_items": s.get("n_items"), "complete": s.get("complete")})
        settings = stores[0].get("settings") or {}
        gold = stores[0].get("gold") or {}
        notes = [f"Scores x {SCALE:g}; 95% {settings.get('ci_method', 'percentile')} bootstrap intervals over "
                 f"{'albums' if protocol == 'album' else 'photo sequences'} ({settings.get('n_boot')} resamples, "
                 f"seed {settings.get('seed')}).",
                 f"Gold: {gold.get('path')} (sha256 {str(gold.get('sha256'))[:12]}); scores key {stores[0]['key']}."]
        if protocol == "challenge":
            notes.append("Challenge protocol: METEOR 1.5 (task hter) of each sequence's story against each reference, "
                         "the maximum over references, averaged over the sequences.")
        else:
            notes.append("Album protocol (AREL): the album's first story against all of its stories; corpus-level "
                         "BLEU/METEOR/CIDEr-D, whose intervals are those of the per-album mean.")
        for name, run, s in zip(names, scored, stores, strict=True):
            if not s.get("complete", True):
                notes.append(f"{name}: {len(s.get('missing') or [])} missing and {s.get('n_errors', 0)} failed "
                             f"item(s) are left out of its score.")
            if run.results.get("stale"):
                notes.append(f"{name}: submission.json changed after it was scored; score it again "
                             f"({run.results['how_to_score']}).")
            others = [p for p in run.results.get("all_scores", []) if p != run.results["scores_file"]]
            if others:
                notes.append(f"{name}: also scored under other settings or gold: {', '.join(others)}.")
        section.tables.append(Table(key=f"vist-{protocol}-scores", title=f"VIST {protocol} protocol: "
                                    + ("METEOR" if protocol == "challenge" else "BLEU-1..4, METEOR, ROUGE-L, CIDEr-D"),
                                    header=header, rows=rows, notes=notes, values=values))
        if len(scored) > 1:
            section.tables.append(paired_table(names, stores, protocol))
        section.figures.append(Figure(key=f"vist-{protocol}-metrics", title=f"VIST {protocol} protocol scores",
                                      png=_figure(names, stores, metrics, protocol),
                                      caption="Bars: scores x 100 on one axis shared by every panel; error bars: 95% "
                                              "bootstrap intervals."))
        if unscored:
            section.notes += [f"{r.name}: not scored yet; {r.results['how_to_score']}" for r in unscored]
        return section

    def _unscored_section(self, runs: list[Run]) -> Section:
        names = unique_names(runs)
        rows = [[n, str(r.folder), r.results["how_to_score"]] for n, r in zip(names, runs, strict=True)]
        table = Table(key="vist-unscored", title="Storytelling runs without stored scores",
                      header=["Run", "Folder", "Score it with"], rows=rows,
                      notes=["`connote vist score RUN --refs GOLD` stores the scores in RUN/scores/; add -p album "
                             "for the album protocol."],
                      values=[{"run": n, "folder": str(r.folder), "how_to_score": r.results["how_to_score"]}
                              for n, r in zip(names, runs, strict=True)])
        return Section(title="Visual storytelling (VIST) runs not scored yet", kind=KIND_NAME, runs=runs,
                       tables=[table], notes=[f"{n}: not scored yet; {r.results['how_to_score']}"
                                              for n, r in zip(names, runs, strict=True)])


def paired_table(names: list[str], stores: list[dict[str, Any]], protocol: str) -> Table:
    """Paired bootstrap test (:func:`connote.vist.protocols.compare`) between every two runs, per metric."""
    from connote.vist.protocols import compare, result_from_stored

    settings = stores[0].get("settings") or {}
    n_boot, seed = int(settings.get("n_boot") or 0), int(settings.get("seed") or 0)
    method = str(settings.get("ci_method") or "percentile")
    rows, values = [], []
    for (i, a), (j, b) in combinations(enumerate(stores), 2):
        # the same call `connote vist score A --compare B` makes, on the stored per-item scores
        tests = compare(result_from_stored(a), result_from_stored(b), n_boot=max(n_boot, 1), seed=seed,
                        ci_method=method)
        for metric, t in tests.items():
            rows.append([names[i], names[j], metric, f"{t['delta'] * SCALE:+.2f}",
                         f"[{t['ci_low'] * SCALE:+.2f}, {t['ci_high'] * SCALE:+.2f}]", f"{t['p_value']:.4g}",
                         str(t["n"])])
            values.append({"run_a": names[i], "run_b": names[j], "metric": metric, **t})
    unit = "album" if protocol == "album" else "photo sequence"
    return Table(key=f"vist-{protocol}-paired", title="Paired bootstrap test between runs (B - A)",
                 header=["Run A", "Run B", "Metric", "Difference (B - A)", "95% CI", "p", "n"], rows=rows,
                 notes=[f"Paired bootstrap over the {unit}s both runs scored ({max(n_boot, 1)} resamples, "
                        f"seed {seed}): "
                        "two-sided p for no difference; differences x 100."],
                 values=values)


def metrics_figure(names: list[str], stores: list[dict[str, Any]], metrics: list[str], protocol: str):  # noqa: ANN201
    """The metric panels (matplotlib figure): scores x 100 on one value axis shared by every panel."""
    from connote.report.metric_bars import metric_panels_figure

    values = {m: [None if s["scores"].get(m) is None else s["scores"][m] * SCALE for s in stores] for m in metrics}
    intervals = {m: [None if not (s.get("ci") or {}).get(m) or None in s["ci"][m]
                     else (s["ci"][m][0] * SCALE, s["ci"][m][1] * SCALE) for s in stores] for m in metrics}
    return metric_panels_figure(f"VIST {protocol} protocol (x 100, 95% intervals)", names, metrics, values, intervals,
                                digits={m: 1 for m in metrics}, ylabel=f"score x {SCALE:g}")


def _figure(names: list[str], stores: list[dict[str, Any]], metrics: list[str], protocol: str) -> bytes:
    from connote.report.metric_bars import to_png

    return to_png(metrics_figure(names, stores, metrics, protocol))


KIND = StorytellingKind()
