"""Report sections of video metaphor captioning (VMC): caption runs with their stored scores (Table 1) and
the human evaluation imported by ``connote collect import`` (the paper's human-evaluation figure).

``CAPTIONS`` recognises a ``connote vmc caption`` run folder (``results.json``, or an older ``run.json``, with
task ``vmc-captioning``).
``connote vmc score RUN --refs REFS`` stores its scores in ``RUN/scores/vmc-<key>.json`` (the key hashes
the references' and split's sha256, the metrics, the encoders and the bootstrap settings; see
:mod:`connote.vmc.scoring`); a run is reported with its most recent stored scores, and runs share a
table only when those share the key. The section is Table 1 (BLEU-4, ROUGE-L, CIDEr, BERT-F1, ACS, ACD and
the share of captions in the template, with 95% bootstrap intervals), the paired bootstrap test between
every two runs on their per-video scores (:func:`connote.metrics.statistics.paired_bootstrap`, the one paired
test of the project) and a figure of the metrics with their intervals.

``HUMAN_EVAL`` recognises the output folder of ``connote collect import`` for the ``vmc-evaluation`` study
(``labels.csv``: item_id, rater, criterion, label; ``captions.csv``: item_id, video_id, run, caption;
``acd_creativity.json`` when per-caption ACD was known). The section is the share of "yes" judgements per
run and criterion with 95% Wilson intervals (figure and table), Fleiss' kappa per criterion
(:func:`connote.metrics.agreement.agreement_table`, what ``connote agreement`` prints) and the
ACD-creativity correlation.
"""

from __future__ import annotations

import csv
import math
from itertools import combinations
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_json
from connote.report.document import Figure, Run, Section, Table
from connote.report.scored import fmt, read_scored_run, unique_names

CAPTIONS_KIND = "vmc-captioning"
HUMAN_EVAL_KIND = "vmc-human-eval"
#: Table 1's columns in the paper's order, with the printed digits.
TABLE1 = {"BLEU-4": 2, "ROUGE-L": 2, "CIDEr": 2, "BERT-F1": 2, "ACS": 2, "ACD": 2, "template": 2}
#: What a stored column is multiplied by in the report, so that every column reads x 100 (BLEU-4, ROUGE-L and
#: CIDEr are stored x 100 already; the others on 0-1). Stored and JSON values keep the stored scale.
DISPLAY_SCALE = {"BERT-F1": 100.0, "ACS": 100.0, "ACD": 100.0, "template": 100.0}


def _scaled(value: float | None, column: str) -> float | None:
    """A stored Table 1 value on the report's x 100 scale."""
    return None if value is None else float(value) * DISPLAY_SCALE.get(column, 1.0)


def _how_to_score(folder: Path, meta: dict[str, Any]) -> str:
    return f"connote vmc score {folder} --refs VMC_CAPTIONS.csv --split TEST_SPLIT.txt"


def _label(folder: Path, meta: dict[str, Any]) -> str:
    model = meta.get("model_fingerprint") or {}
    config = meta.get("config") or {}
    extra = f", {config['samples']} samples at {config.get('temperature')}" if (config.get("samples") or 1) > 1 else ""
    return f"{folder.name} ({model.get('backend', '?')}{extra})"


def per_video_column(stored: dict[str, Any], column: str) -> dict[str, float]:
    """``video -> value`` of one Table 1 column from the stored per-video scores (on the table's scale)."""
    from connote.vmc.scoring import COLUMNS

    out: dict[str, float] = {}
    for vid, row in (stored.get("per_video") or {}).items():
        if not isinstance(row, dict):
            continue
        if column == "template":
            if "follows_template" in row:
                out[str(vid)] = 1.0 if row["follows_template"] else 0.0
            continue
        names, scale = COLUMNS[column]
        value = next((row[n] for n in names if row.get(n) is not None), None)
        if value is not None:
            out[str(vid)] = float(value) * scale
    return out


class CaptionRunKind:
    """The ``vmc-captioning`` run kind of ``connote report``."""

    name = CAPTIONS_KIND
    #: Columns VMC's published tables print on 0-1 that the report shows x 100, as its own Table 1.
    published_x100 = ("BERT-F1", "ACS", "ACD")

    def published_values(self, table: Any, run: Run) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A scored run's Table 1 columns and intervals (:mod:`connote.report.published`); None when not scored."""
        stored = run.results.get("scores")
        if not stored:
            return None
        return dict(stored.get("table") or {}), {k: v for k, v in (stored.get("intervals") or {}).items() if v}

    def why_not_published(self, table: Any, run: Run) -> str:
        if not run.results.get("scores"):
            return f"it has no stored scores (score the run first: connote vmc score {run.folder})"
        return f"it has no values for {table.id}"

    def recognise(self, folder: Path) -> Run | None:
        """A caption run folder with its most recent stored scores (None: not a caption run)."""
        from connote.vmc.scoring import SCORES_TASK

        folder = Path(folder)
        loaded = read_scored_run(folder, CAPTIONS_KIND, SCORES_TASK, ("table", "intervals", "per_video", "refs", "n"),
                                 "captions.jsonl", _how_to_score)
        if loaded is None:
            return None
        meta, version, results, stored = loaded
        if (folder / "scores.json").is_file() and stored is None:
            results["legacy"] = str(folder / "scores.json")
        if stored is None:
            return Run(folder=folder, kind=CAPTIONS_KIND, name=_label(folder, meta), group=("not scored", version),
                       results=results)
        refs, split = stored.get("refs") or {}, stored.get("split")
        split_s = (f"split {Path(str(split.get('path'))).name} sha256:{str(split.get('sha256'))[:12]}" if split
                   else "split: the captioned videos")
        group = (f"refs {Path(str(refs.get('path', '?'))).name} sha256:{str(refs.get('sha256', '?'))[:12]}", split_s,
                 f"scores {stored['key']}", version)
        return Run(folder=folder, kind=CAPTIONS_KIND, name=_label(folder, meta), group=group, results=results)

    def section(self, runs: list[Run]) -> Section:
        """VMC Table 1, the paired tests and the metric figure (or how to score unscored runs)."""
        scored = [r for r in runs if r.results.get("scores")]
        unscored = [r for r in runs if not r.results.get("scores")]
        if not scored:
            names = unique_names(unscored)
            table = Table(key="vmc-unscored", title="Caption runs without stored scores",
                          header=["Run", "Folder", "Score it with"],
                          rows=[[n, str(r.folder), r.results["how_to_score"]] for n, r in zip(names, unscored)],
                          notes=["`connote vmc score RUN... --refs REFS` stores each run's scores in "
                                 "RUN/scores/ (add --bertscore-model and --concept-encoder for BERT-F1, ACS, ACD)."]
                          + [f"{r.name}: its scores.json predates keyed scores; score it again" for r in unscored
                             if r.results.get("legacy")],
                          values=[{"run": n, "folder": str(r.folder), "how_to_score": r.results["how_to_score"]}
                                  for n, r in zip(names, unscored)])
            return Section(title="Video metaphor captioning (VMC) runs not scored yet", kind=CAPTIONS_KIND,
                           runs=runs, tables=[table],
                           notes=[f"{n}: not scored yet; {r.results['how_to_score']}" for n, r in zip(names, unscored)])
        names = unique_names(scored)
        stores = [r.results["scores"] for r in scored]
        columns = [c for c in TABLE1 if any(s["table"].get(c) is not None for s in stores)]
        rows, values = [], []
        for name, run, s in zip(names, scored, stores, strict=True):
            rows.append([name, *[fmt(s["table"].get(c), s["intervals"].get(c), TABLE1[c],
                                        DISPLAY_SCALE.get(c, 1.0)) for c in columns],
                         str(s.get("n"))])
            values.append({"run": name, "folder": str(run.folder), "scores_file": run.results["scores_file"],
                           **{c: s["table"].get(c) for c in columns},
                           **{f"{c} ci": s["intervals"].get(c) for c in columns}, "n": s.get("n")})
        sig = stores[0].get("signature") or {}
        refs, split = stores[0].get("refs") or {}, stores[0].get("split")
        notes = ["Every column x 100 (the paper prints BERT-F1, ACS and ACD on 0-1); template: the share of captions "
                 "in the form '<primary> is as <property> as <secondary>'.",
                 f"95% percentile bootstrap intervals over videos of the per-video mean ({sig.get('n_boot')} "
                 "resamples, "
                 f"seed {sig.get('seed')}); for BLEU-4 and CIDEr (corpus statistics) that of the per-video mean.",
                 f"References: {refs.get('path')} (sha256 {str(refs.get('sha256'))[:12]}); split: "
                 f"{split.get('path') if split else 'the videos the runs captioned'}; scores key {stores[0]['key']}."]
        missing = [c for c in ("BERT-F1", "ACS", "ACD") if c not in columns]
        if missing:
            notes.append(f"{', '.join(missing)} not scored: `connote vmc score --bertscore-model M "
                         "--concept-encoder E` adds them.")
        for name, run, s in zip(names, scored, stores, strict=True):
            if s.get("uncaptioned"):
                notes.append(f"{name}: {len(s['uncaptioned'])} video(s) without a caption, scored as empty.")
            if run.results.get("stale"):
                notes.append(f"{name}: captions.jsonl changed after it was scored; score it again.")
            others = [p for p in run.results.get("all_scores", []) if p != run.results["scores_file"]]
            if others:
                notes.append(f"{name}: also scored under other references, split or settings: {', '.join(others)}.")
        section = Section(title="Video metaphor captioning (VMC), Table 1", kind=CAPTIONS_KIND, runs=runs)
        section.tables.append(Table(key="vmc-table1", title="VMC Table 1: automatic metrics",
                                    header=["Run", *[f"{c} [95% CI]" for c in columns], "n"], rows=rows,
                                    notes=notes, values=values))
        if len(scored) > 1:
            section.tables.append(_paired_table(names, stores, columns))
        from connote.report.metric_bars import metric_panels

        section.figures.append(Figure(
            key="vmc-table1-metrics", title="VMC automatic metrics",
            png=metric_panels("VMC Table 1 (x 100, 95% intervals)", names, columns,
                              {c: [_scaled(s["table"].get(c), c) for s in stores] for c in columns},
                              {c: [tuple(_scaled(x, c) for x in s["intervals"][c])
                                   if s["intervals"].get(c) and None not in s["intervals"][c] else None
                                   for s in stores] for c in columns},
                              digits={c: 1 for c in columns}),
            caption="Bars: Table 1 metrics x 100 on one axis shared by every panel; error bars: 95% bootstrap "
                    "intervals."))
        if unscored:
            section.notes += [f"{r.name}: not scored yet; {r.results['how_to_score']}" for r in unscored]
        return section


def _paired_table(names: list[str], stores: list[dict[str, Any]], columns: list[str]) -> Table:
    """Paired bootstrap (:func:`connote.metrics.statistics.paired_bootstrap`) between every two runs, per column."""
    from connote.metrics.statistics import paired_bootstrap

    sig = stores[0].get("signature") or {}
    n_boot, seed = max(int(sig.get("n_boot") or 0), 1), int(sig.get("seed") or 0)
    rows, values = [], []
    for (i, a), (j, b) in combinations(enumerate(stores), 2):
        for c in columns:
            va, vb = per_video_column(a, c), per_video_column(b, c)
            common = sorted(set(va) & set(vb))
            if not common:
                continue
            t = paired_bootstrap([va[v] for v in common], [vb[v] for v in common], n_boot=n_boot, seed=seed)
            d, k = TABLE1[c], DISPLAY_SCALE.get(c, 1.0)
            rows.append([names[i], names[j], c, f"{t['delta'] * k:+.{d}f}",
                         f"[{t['ci_low'] * k:+.{d}f}, {t['ci_high'] * k:+.{d}f}]",
                         f"{t['p_value']:.4g}", str(t["n"])])
            values.append({"run_a": names[i], "run_b": names[j], "metric": c, **t})
    return Table(key="vmc-paired", title="Paired bootstrap test between runs (B - A), per-video scores",
                 header=["Run A", "Run B", "Metric", "Difference (B - A)", "95% CI", "p", "n"], rows=rows,
                 notes=[f"Paired bootstrap over the videos both runs scored ({n_boot} resamples, seed {seed}): "
                        "two-sided "
                        "p for no difference; differences x 100. BLEU-4 and CIDEr are tested on their per-video "
                        "scores; for runs with "
                        "several samples per video, on the first sample's."],
                 values=values)


# --------------------------------------------------------------------------- human evaluation

CAPTIONS_HEADER = ["item_id", "video_id", "run", "caption"]
YES, NO = ("1", "yes", "true"), ("0", "no", "false")
CRITERION_NAMES = {"fluency": "Fluency", "primary_concept_consistency": "Primary concept",
                   "consistency": "Consistency", "creativity": "Creativity"}


def _read_captions_csv(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        for lineno, row in enumerate(reader, start=2):
            iid = (row.get("item_id") or "").strip()
            if not iid or not (row.get("run") or "").strip():
                raise InputError("item_id and run must not be empty", path=path, line=lineno)
            out[iid] = {k: (v or "").strip() for k, v in row.items() if k}
    return out


def wilson(yes: int, n: int) -> tuple[float, float] | None:
    """95% Wilson interval of a proportion (:func:`connote.metrics.statistics.accuracy_interval`)."""
    from connote.metrics.statistics import accuracy_interval

    ci = accuracy_interval(yes, n)
    return None if ci is None else (ci[0], ci[1])


class HumanEvalKind:
    """The ``vmc-human-eval`` run kind: the import folder of the VMC evaluation study."""

    name = HUMAN_EVAL_KIND

    def recognise(self, folder: Path) -> Run | None:
        """The import folder (labels.csv + captions.csv of the vmc-evaluation study), or None."""
        from connote.core.files import file_sha256
        from connote.metrics.agreement import read_labels

        folder = Path(folder)
        captions_path, labels_path = folder / "captions.csv", folder / "labels.csv"
        if not folder.is_dir() or not captions_path.is_file():
            return None
        try:
            with captions_path.open(newline="", encoding="utf-8-sig") as fh:
                header = [h.strip() for h in next(csv.reader(fh), [])]
        except (OSError, UnicodeDecodeError):
            return None
        if header != CAPTIONS_HEADER:
            return None
        if not labels_path.is_file():
            raise InputError("a VMC evaluation import folder needs labels.csv beside captions.csv "
                             "(written by `connote collect import`)", path=labels_path)
        table = read_labels(labels_path)
        captions = _read_captions_csv(captions_path)
        labels: list[tuple[str, str, str, bool]] = []
        for criterion, items in table.labels.items():
            for iid, by in items.items():
                for rater, label in by.items():
                    low = label.lower()
                    if low not in YES + NO:
                        raise InputError(f"label {label!r} of item {iid!r} ({criterion}, {rater}) is not a yes/no "
                                         "label (1/0)", path=labels_path)
                    labels.append((iid, rater, criterion, low in YES))
        acd = None
        acd_path = folder / "acd_creativity.json"
        if acd_path.is_file():
            acd = read_json(acd_path)
            if not isinstance(acd, dict):
                raise InputError("expected a JSON object (per_judgement, per_caption_mean)", path=acd_path)
        group = (f"study {folder.name}", f"captions sha256:{file_sha256(captions_path)[:12]}")
        return Run(folder=folder, kind=HUMAN_EVAL_KIND, name=folder.name, group=group,
                   results={"labels": labels, "captions": captions, "acd_creativity": acd,
                            "label_table": table})

    def section(self, runs: list[Run]) -> Section:
        """The human-evaluation figure and table, agreement per criterion, and the ACD-creativity correlation."""
        from connote.metrics.agreement import CRITERIA, agreement_table

        section = Section(title="Video metaphor captioning (VMC): human evaluation", kind=HUMAN_EVAL_KIND, runs=runs)
        several = len(runs) > 1
        for run in runs:
            prefix = f"{run.name}: " if several else ""
            key = f"-{run.name}" if several else ""
            captions, labels = run.results["captions"], run.results["labels"]
            criteria = [c for c in CRITERIA if any(lab[2] == c for lab in labels)]
            criteria += sorted({lab[2] for lab in labels} - set(criteria))
            models = sorted({captions[lab[0]]["run"] for lab in labels if lab[0] in captions})
            unknown = sorted({lab[0] for lab in labels if lab[0] not in captions})
            counts: dict[tuple[str, str], list[int]] = {}
            for iid, _rater, criterion, yes in labels:
                if iid in captions:
                    c = counts.setdefault((captions[iid]["run"], criterion), [0, 0])
                    c[0] += int(yes)
                    c[1] += 1
            rows, values = [], []
            pct: dict[str, list[float | None]] = {}
            cis: dict[str, list[tuple[float, float] | None]] = {}
            for m in models:
                cells, row_values = [m], {"run": m}
                pct[m], cis[m] = [], []
                for c in criteria:
                    yes, n = counts.get((m, c), [0, 0])
                    ci = wilson(yes, n)
                    share = 100.0 * yes / n if n else None
                    pct[m].append(share)
                    cis[m].append(None if ci is None else (100 * ci[0], 100 * ci[1]))
                    cells.append("n/a" if share is None else f"{share:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
                                 f" ({yes}/{n})")
                    row_values.update({c: share, f"{c} ci": cis[m][-1], f"{c} yes": yes, f"{c} n": n})
                rows.append(cells)
                values.append(row_values)
            notes = ["Share of 'yes' judgements (every annotator's label counts) with 95% Wilson intervals; "
                     "(yes/judgements) in brackets."]
            if unknown:
                notes.append(f"{len(unknown)} labelled item(s) not in captions.csv are left out: "
                             f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}.")
            section.tables.append(Table(key=f"vmc-human{key}", title=f"{prefix}Human evaluation: % yes per criterion",
                                        header=["Model", *[f"{CRITERION_NAMES.get(c, c)} % [95% CI]"
                                                           for c in criteria]],
                                        rows=rows, notes=notes, values=values))
            from connote.report.metric_bars import grouped_bars

            section.figures.append(Figure(
                key=f"vmc-human{key}", title=f"{prefix}Human evaluation",
                png=grouped_bars("Human evaluation (% yes, 95% Wilson intervals)",
                                 [CRITERION_NAMES.get(c, c) for c in criteria], models,
                                 [pct[m] for m in models], [cis[m] for m in models], ylabel="% yes", ymax=100.0),
                caption="Share of 'yes' judgements per criterion and model; error bars: 95% Wilson intervals."))
            agreement = agreement_table(run.results["label_table"])
            section.tables.append(Table(
                key=f"vmc-agreement{key}", title=f"{prefix}Inter-annotator agreement (Fleiss' kappa)",
                header=["Criterion", "Fleiss' kappa", "Items (all raters)", "Raters"],
                rows=[[CRITERION_NAMES.get(a.criterion, a.criterion),
                       "n/a" if math.isnan(a.fleiss) else f"{a.fleiss:.3f}", f"{a.fleiss_items}/{a.items}",
                       str(len(a.raters))] for a in agreement],
                notes=["Fleiss' kappa over the items every rater labelled (`connote agreement` labels.csv prints the "
                       "same, with pairwise Cohen's kappa); 'all' pools every criterion."],
                values=[a.to_dict() for a in agreement]))
            acd = run.results.get("acd_creativity")
            if acd:
                acd_rows, acd_values = [], []
                for variant, label in (("per_judgement", "each judgement's creativity label (the paper's)"),
                                       ("per_caption_mean", "share of annotators finding the caption creative")):
                    v = acd.get(variant) or {}
                    r, p = v.get("r"), v.get("p")
                    acd_rows.append([label, "n/a" if r is None else f"{r:.3f}", "n/a" if p is None else f"{p:.3g}",
                                     str(v.get("n", ""))])
                    acd_values.append({"variant": variant, **v})
                section.tables.append(Table(key=f"vmc-acd-creativity{key}",
                                            title=f"{prefix}ACD-creativity correlation (Pearson's r)",
                                            header=["ACD against", "r", "p", "n"], rows=acd_rows,
                                            notes=["The paper reports r = 0.403 (per judgement)."], values=acd_values))
        return section


CAPTIONS = CaptionRunKind()
HUMAN_EVAL = HumanEvalKind()
