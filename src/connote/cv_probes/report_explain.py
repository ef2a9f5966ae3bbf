"""The ``cv-probes-explain`` report kind: MM-SHAP runs (the paper's Table 6), per-cell bars and example heat-maps.

An explain run folder holds the ``results.json`` written by ``connote cv-probes explain`` (task
:data:`connote.cv_probes.explain.TASK_NAME`): :func:`connote.explain.mmshap.aggregate`'s means of T-SHAP, V-SHAP,
the verb's attribution and its share of the text attribution, overall and per cell, each split by the
model's predicted match (``value_full`` > threshold) and non-match; and ``figures/index.json`` naming the
heat-map PNGs of the first pairs. Runs are comparable when they share the data, the task version, the
``--compat`` mode and the captions setting (each changes what T-SHAP measures).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.cv_probes.explain import TASK_NAME
from connote.cv_probes.records import CELLS
from connote.cv_probes.report import data_identity
from connote.report.document import Figure, Run, Section, Table
from connote.report.load import DATA_NOTE, read_results

NAME = "cv-probes-explain"
SPLITS = (("match", "match"), ("non_match", "non-match"), ("all", "all"))
#: Heat-maps of example pairs embedded per run.
EXAMPLES = 3


def run_name(results: dict[str, Any]) -> str:
    """Model and estimator (with its cap on model calls), e.g. ``objects (permutation)``."""
    budget = results.get("budget")
    return f"{results.get('model', '?')} ({results.get('estimator', '?')}{f', ≤{budget} calls' if budget else ''})"


def cell_order(results: dict[str, Any]) -> list[str]:
    """The run's cells in the paper's order (SG-SG, SG-PG, PG-SG, PG-PG), then any others sorted."""
    cells = results["cells"]
    return [c for c in CELLS if c in cells] + sorted(c for c in cells if c not in CELLS)


def _fmt(x: Any, spec: str = ".2f", scale: float = 100.0) -> str:
    """A share (0-1) as printed: x 100 (the paper's Table 6 prints T-SHAP and the verb share in %)."""
    return "—" if x is None else format(x * scale, spec)


class ExplainKind:
    """Recognises ``connote cv-probes explain`` run folders and builds Table 6, the per-cell bars and heat-maps."""

    name = NAME
    expects = f"results.json of task {TASK_NAME}"

    def recognise(self, folder: Path) -> Run | None:
        results = read_results(folder)
        if results is None or results.get("task") != TASK_NAME:
            return None
        if not isinstance(results.get("overall"), dict) or not isinstance(results.get("cells"), dict):
            raise InputError("explain results without 'overall' and 'cells' aggregates", path=folder / "results.json")
        config = results.get("config") or {}
        key, label = data_identity(config.get("data"), folder)
        return Run(folder=folder, kind=NAME, name=run_name(results), results=results, data=label,
                   group=(key, f"task version {results.get('task_version')}",
                          f"compat {results.get('compat', config.get('compat'))}",
                          f"captions {config.get('captions', '?')}"))

    def section(self, runs: list[Run]) -> Section:
        figures = [cell_figure(runs)]
        for k, run in enumerate(runs, start=1):
            figures += example_figures(run, tag=f"R{k}" if len(runs) > 1 else "")
        section = Section(title="CV-Probes: MM-SHAP attributions (Table 6)", kind=NAME, runs=runs,
                          tables=[table6(runs)], figures=figures)
        section.notes.append(DATA_NOTE + "; ".join(sorted({r.data for r in runs})))
        for run in runs:
            r = run.results
            section.notes.append(
                f"{run.name}: {r.get('n_pairs', '?')} pairs, {r.get('n_errors', 0)} errored, "
                f"{r.get('calls_total', '?')} model calls, {r.get('n_no_verb', 0)} without a verb, "
                f"{r.get('n_verb_not_found', 0)} whose verb is not in the caption.")
        return section


KIND = ExplainKind()


def table6(runs: Sequence[Run]) -> Table:
    """Table 6: mean T-SHAP / V-SHAP, the verb's attribution and share, per cell and split."""
    header = ["Model", "Cell", "Split", "n", "T-SHAP", "V-SHAP", "verb φ", "verb share"]
    rows, values, rules = [], [], []
    for run in runs:
        res = run.results
        groups = [(c, res["cells"][c]) for c in cell_order(res)] + [("overall", res["overall"])]
        for cell, splits in groups:
            for split, label in SPLITS:
                s = splits.get(split) or {}
                first = not values or values[-1]["run"] != run.name  # the model is named once per run
                rows.append([run.name if first else "", cell, label, str(s.get("n", 0)), _fmt(s.get("t_shap")),
                             _fmt(s.get("v_shap")), _fmt(s.get("verb_shap"), "+.4f", 1.0), _fmt(s.get("verb_share"))])
                values.append({"run": run.name, "cell": cell, "split": split,
                               **{k: s.get(k) for k in ("n", "t_shap", "v_shap", "verb_shap", "verb_share", "n_verb")}})
        rules.append(len(rows) - 1)  # a rule between runs
    threshold = runs[0].results.get("threshold", 0.5)
    captions = captions_setting(runs)
    notes = [f"Split by the model's prediction on the unmasked pair: match when p(match) > {threshold}. "
             "T-SHAP: the text's share of the total absolute Shapley value x 100 (V-SHAP = 100 − T-SHAP); verb φ: "
             "the summed Shapley value of the verb's tokens (not a share: unscaled, as the paper prints it); "
             "verb share: the verb's share of the text's absolute "
             "attribution x 100; means over pairs (verb columns over pairs whose verb was found).",
             f"Captions: {captions} (`connote cv-probes explain` defaults to simplified, as the paper's Table 6; "
             "Tables 3/4 name each probe run's captions, original by default, after its model)."]
    return Table(key="explain-table6",
                 title=f"Table 6: MM-SHAP per cell, split by predicted match ({captions} captions; T-SHAP, V-SHAP, "
                       "verb share in %)",
                 header=header,
                 rows=rows, notes=notes, values=values, rules_after=rules[:-1])


def captions_setting(runs: Sequence[Run]) -> str:
    """The captions the runs explained (``simplified``, ``original``, or both named when they differ)."""
    settings = sorted({str((r.results.get("config") or {}).get("captions", "?")) for r in runs})
    return " and ".join(settings)


def cell_figure(runs: Sequence[Run]) -> Figure:
    """Bars of mean T-SHAP and mean verb share per cell (predicted match / non-match), one row of panels per run."""
    import numpy as np

    from connote.report.plotting import LABEL_COLOUR, LABEL_SIZE, png_bytes, pyplot

    plt = pyplot()
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.6 * len(runs)), squeeze=False)
    colours = {"match": "#4C72B0", "non_match": "#DD8452"}
    for row, run in zip(axes, runs):
        res = run.results
        groups = [*cell_order(res), "overall"]
        xs = np.arange(len(groups))
        for ax, key, label in ((row[0], "t_shap", "mean T-SHAP (%)"), (row[1], "verb_share", "mean verb share (%)")):
            for j, split in enumerate(("match", "non_match")):
                vals, ns = [], []
                for g in groups:
                    s = (res["overall"] if g == "overall" else res["cells"][g]).get(split) or {}
                    vals.append(s.get(key))
                    ns.append(s.get("n", 0) if key == "t_shap" else s.get("n_verb", 0))
                heights = [0.0 if v is None else 100.0 * v for v in vals]
                bars = ax.bar(xs + (j - 0.5) * 0.38, heights, 0.36, color=colours[split],
                              label=split.replace("_", "-"))
                for b, v, n in zip(bars, vals, ns):
                    ax.text(b.get_x() + b.get_width() / 2, 100.0 * (v or 0) + 1.5, f"n={n}",
                            ha="center", va="bottom", fontsize=LABEL_SIZE, color=LABEL_COLOUR)
            ax.set_xticks(xs, groups)
            ax.set_ylim(0, 120)
            ax.set_yticks(range(0, 101, 20))
            ax.set_ylabel(label)
            if key == "t_shap":
                ax.axhline(50, color="grey", lw=0.8, ls=":")
            ax.legend(fontsize=8, loc="upper right", ncol=2, frameon=False)
        row[0].set_title(run.name, fontsize=9, loc="left")
    fig.suptitle("MM-SHAP per cell, split by predicted match", fontsize=10)
    fig.tight_layout()
    return Figure(key="explain-cells", title="T-SHAP and verb share per cell", png=png_bytes(fig),
                  caption="Mean T-SHAP (left; dotted: equal text and image shares) and mean verb share (right) per "
                          "cell, for pairs the model predicts as match and as non-match; n: pairs in the mean.")


def example_figures(run: Run, *, tag: str = "", limit: int = EXAMPLES) -> list[Figure]:
    """The first ``limit`` heat-maps the run saved (``figures/index.json``); names that would leave the
    run's ``figures/`` folder, and missing files, are skipped."""
    fig_dir = run.folder / "figures"
    index_path = fig_dir / "index.json"
    if not index_path.is_file():
        return []
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(index, dict):
        return []
    root = fig_dir.resolve()
    out = []
    for item_id, name in index.items():
        if len(out) >= limit:
            break
        path = fig_dir / str(name)
        if path.resolve().parent != root or path.suffix.lower() != ".png" or not path.is_file():
            continue
        key = f"explain-pair-{tag + '-' if tag else ''}{Path(str(name)).stem}"
        out.append(Figure(key=key, title=f"MM-SHAP heat-map: {item_id}{f' ({tag})' if tag else ''}",
                          png=path.read_bytes(), caption=f"Pair {item_id} of {run.name}: Shapley values of the "
                          "caption's tokens and of the image patches."))
    return out
