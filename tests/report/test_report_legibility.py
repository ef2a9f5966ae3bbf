"""What a reader of the report sees: honest axes, one scale, readable labels, inline code, relative paths.

The figures are read through the functions that build them (matplotlib axes, bars and texts), not from tags.
"""

from __future__ import annotations

from pathlib import Path

from connote.vist.report import metrics_figure

#: Album-protocol scores as ``connote vist score -p album`` stores them (0-1), the tiny BLEU-4 of issue #22.
STORES = [{"scores": {"BLEU-4": 0.0006, "METEOR": 0.16, "CIDEr-D": 0.02},
           "ci": {"BLEU-4": [0.0, 0.0012], "METEOR": [0.14, 0.18], "CIDEr-D": [0.01, 0.03]}},
          {"scores": {"BLEU-4": 0.0009, "METEOR": 0.12, "CIDEr-D": 0.05},
           "ci": {"BLEU-4": [0.0002, 0.0015], "METEOR": [0.10, 0.14], "CIDEr-D": [0.03, 0.07]}}]


def test_vist_metric_panels_share_one_honest_value_axis() -> None:
    fig = metrics_figure(["run a", "run b"], STORES, ["BLEU-4", "METEOR", "CIDEr-D"], "album")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["BLEU-4", "METEOR", "CIDEr-D"]
    limits = {ax.get_ylim() for ax in panels}
    assert len(limits) == 1  # one axis for every panel
    low, high = limits.pop()
    assert low == 0 and high >= 100  # the x 100 scale's full range
    assert max(ax.get_yticks().max() for ax in panels) == 100
    heights = {ax.get_title(): [round(p.get_height(), 4) for p in ax.patches] for ax in panels}
    assert heights["BLEU-4"] == [0.06, 0.09]  # 0.0006 x 100: a sliver of the axis, not a full bar
    assert heights["METEOR"] == [16.0, 12.0]
    assert panels[0].get_ylabel() == "score x 100"


def _vmc_run(folder, table: dict, per_video: dict):  # noqa: ANN001, ANN202
    from connote.report.document import Run

    stored = {"table": table, "intervals": {c: [v * 0.9, v * 1.1] for c, v in table.items()}, "n": 2,
              "per_video": per_video, "signature": {"n_boot": 50, "seed": 0}, "refs": {"path": "refs.csv"},
              "split": None, "key": "k1"}
    return Run(folder=folder, kind="vmc-captioning", name=folder.name, group=("g",),
               results={"scores": stored, "scores_file": str(folder / "scores" / "vmc-k1.json"), "all_scores": []})


def test_vmc_table_and_paired_test_read_x100_in_every_column(tmp_path) -> None:  # noqa: ANN001
    from connote.vmc.report import CAPTIONS

    a = _vmc_run(tmp_path / "cap-a", {"BLEU-4": 10.27, "ROUGE-L": 46.21, "BERT-F1": 0.69, "ACS": 0.39},
                 {"v1": {"rougeL": 0.5, "bertscore_f1": 0.6}, "v2": {"rougeL": 0.4, "bertscore_f1": 0.7}})
    b = _vmc_run(tmp_path / "cap-b", {"BLEU-4": 9.0, "ROUGE-L": 40.0, "BERT-F1": 0.71, "ACS": 0.5},
                 {"v1": {"rougeL": 0.3, "bertscore_f1": 0.8}, "v2": {"rougeL": 0.2, "bertscore_f1": 0.9}})
    section = CAPTIONS.section([a, b])
    table, paired = section.tables
    assert table.header[1:5] == ["BLEU-4 [95% CI]", "ROUGE-L [95% CI]", "BERT-F1 [95% CI]", "ACS [95% CI]"]
    assert table.rows[0][1] == "10.27 [9.24, 11.30]"  # stored x 100 already
    assert table.rows[0][3] == "69.00 [62.10, 75.90]"  # stored 0.69: printed x 100
    assert table.rows[1][4] == "50.00 [45.00, 55.00]"
    assert table.values[0]["BERT-F1"] == 0.69  # the machine-readable values keep the stored scale
    assert any(n.startswith("Every column x 100") for n in table.notes)
    bert = next(r for r in paired.rows if r[2] == "BERT-F1")
    delta = next(v for v in paired.values if v["metric"] == "BERT-F1")["delta"]
    assert bert[3] == f"{100 * delta:+.2f}" and abs(delta) > 0.1


def test_inline_code_is_code_in_html_and_markdown_and_latex() -> None:
    from connote.report.document import Section, Table
    from connote.report.render import to_html, to_latex, to_markdown

    note = "`connote vist score RUN --gold GOLD` stores the scores; a_b * <c>"
    table = Table(key="t", title="T", header=["Run", "Score it with"], rows=[["r1", "`a | b`"]], notes=[note])
    sections = [Section(title="S", kind="k", runs=[], tables=[table], notes=[note])]
    page = to_html(sections)
    assert "`" not in page
    assert page.count("<code>connote vist score RUN --gold GOLD</code> stores the scores; a_b * &lt;c&gt;") == 2
    assert "<td><code>a | b</code></td>" in page
    md = to_markdown(sections)
    assert "`connote vist score RUN --gold GOLD` stores the scores; a\\_b \\* &lt;c&gt;" in md
    assert "\\`" not in md
    assert "| r1 | `a \\| b` |" in md  # the pipe inside code still does not split the GitHub table cell
    tex = to_latex(sections)
    assert r"\texttt{connote vist score RUN --gold GOLD} stores the scores; a\_b * \textless{}c\textgreater{}" in tex


def test_probe_and_explain_data_paths_are_relative_to_the_run_folder_in_every_format(runs, tmp_path) -> None:  # noqa: ANN001
    import json

    from connote.cli import main
    from connote.report.render import tex_escape

    out = tmp_path / "out"
    assert main(["report", str(runs["original"]), str(runs["explain"]), "--out", str(out)]) == 0
    recorded = [json.loads((runs[k] / "results.json").read_text()) for k in ("original", "explain")]
    assert Path(recorded[0]["data"]).is_absolute()  # as `connote probe` recorded it
    sections = json.loads((out / "report.json").read_text())["sections"]
    notes = [next(n for n in s["notes"] if n.startswith("Data")) for s in sections]
    assert len(notes) == 2 and notes[0].split(" (")[:2] == notes[1].split(" (")[:2]
    assert notes[0].startswith("Data (path from the run folder): ../data/probes.csv (")
    tex, md = (out / "report.tex").read_text(), (out / "report.md").read_text()
    assert tex.count(tex_escape("Data (path from the run folder): ../data/probes.csv (")) == 2
    assert md.count("Data (path from the run folder): ../data/probes.csv (") == 2
    root = str(runs["original"].parent)
    assert not any(root in line for line in tex.splitlines() if "probes.csv" in line)


def test_table6_says_which_captions_it_uses_next_to_tables_3_4(runs, capsys) -> None:  # noqa: ANN001
    import json

    from connote.cli import main

    assert main(["report", str(runs["original"]), str(runs["simplified"]), str(runs["explain"]), "--json"]) == 0
    tables = {t["key"]: t for s in json.loads(capsys.readouterr().out)["sections"] for t in s["tables"]}
    explained = json.loads((runs["explain"] / "results.json").read_text())["config"]["captions"]
    assert explained == "simplified"  # `connote explain`'s default
    table6 = tables["explain-table6"]
    assert "(simplified captions;" in table6["title"]
    assert any(n.startswith("Captions: simplified (`connote cv-probes explain` defaults to simplified")
               for n in table6["notes"])
    accuracy = tables["probe-accuracy"]
    assert any(n.startswith("Captions: original and simplified, named after each model") for n in accuracy["notes"])


def _value_labels(fig) -> list:  # noqa: ANN001
    """The texts drawn in the plot areas (value labels), not titles or tick labels."""
    return [t for ax in fig.axes for t in ax.texts]


def _dark(colour) -> bool:  # noqa: ANN001
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.35


def test_bar_value_labels_are_horizontal_dark_readable_and_above_their_bars(runs) -> None:  # noqa: ANN001
    from connote.cv_probes.report import KIND as PROBE
    from connote.cv_probes.report import accuracy_plot

    probe_runs = [PROBE.recognise(runs["original"]), PROBE.recognise(runs["simplified"])]
    fig = accuracy_plot(probe_runs)
    (ax,) = fig.axes
    labels = _value_labels(fig)
    assert len(labels) == 5 * 3  # 4 cells and the HM, for 2 runs and the Human row
    bars = list(ax.patches)
    assert len(bars) == len(labels)
    for bar, label in zip(bars, labels):
        assert label.get_rotation() == 0 and label.get_fontsize() >= 8 and _dark(label.get_color())
        assert label.get_position()[1] >= bar.get_height()  # above the bar, never inside it
        assert label.get_text() == f"{bar.get_height():.0f}"
    assert ax.get_ylim() == (0, 112)
    metric = metrics_figure(["run a", "run b"], STORES, ["BLEU-4", "METEOR"], "album")
    for label in _value_labels(metric):
        assert label.get_rotation() == 0 and label.get_fontsize() >= 8 and _dark(label.get_color())
    assert sorted(t.get_text() for t in _value_labels(metric)) == ["0.06", "0.09", "12.0", "16.0"]


def test_published_tables_beside_x100_runs_are_shown_x100() -> None:
    from connote.core.published import tables
    from connote.report.published import published_table

    by_id = {t.id: t for t in tables()}
    arel = published_table(by_id["vist/arel-album"], [])
    paper = by_id["vist/arel-album"].rows[0].values
    assert arel.rows[0][1:] == [f"{100 * paper[c]:.2f}" for c in by_id["vist/arel-album"].columns]
    assert arel.rows[0][1] == "63.82"  # AREL's BLEU-1 0.638, on the x 100 scale of the VIST table above it
    vmc = published_table(by_id["vmc/table1"], [])
    header = vmc.header
    first = dict(zip(header, vmc.rows[0]))
    assert first["BLEU-4"] == "0.380" and first["BERT-F1"] == "12.00" and first["ACS"] == "100.00"
    assert any(n.startswith("Shown x 100, as the report's own tables: BERT-F1, ACS, ACD") for n in vmc.notes)
    probe = published_table(by_id["cv-probes/table3"], [])
    assert not any(n.startswith("Shown x 100") for n in probe.notes)  # printed in % already


def test_probe_table_footnote_explains_the_human_row_only_when_it_is_there() -> None:
    from connote.cv_probes.records import CELLS
    from connote.cv_probes.task import markdown_table

    cells = {c: {"accuracy": 0.5, "interval": [0.2, 0.8], "n": 4, "errors": 0, "pearson_r": None} for c in CELLS}
    without = markdown_table({"cells": cells, "harmonic_mean": 0.5})
    assert "Human" not in without and "Pearson r: no human votes in the data" in without
    few = {c: {**cells[c], "n_votes": 2} for c in CELLS}  # votes, but too few pairs for an r
    few_votes = markdown_table({"cells": few, "harmonic_mean": 0.5})
    assert "no human votes" not in few_votes
    assert "Pearson r: fewer than 3 pairs with human votes in the cell" in few_votes
    human = {"cells": {c: {"accuracy": 0.75} for c in CELLS}, "harmonic_mean": 0.75}
    with_row = markdown_table({"cells": cells, "harmonic_mean": 0.5, "human": human})
    assert "| Human, majority of votes (%) | 75.00 | 75.00 | 75.00 | 75.00 | 75.00 |" in with_row
    assert with_row.rstrip().endswith("Human: the majority of the annotators' votes against the label "
                                      "(a tie counts as wrong).")
