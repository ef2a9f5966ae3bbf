"""``connote report`` on real run folders: the numbers, the grouping rule and every output format."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from connote.cli import main
from connote.cv_probes.records import CELLS
from connote.cv_probes.task import format_interval, format_pct, format_r
from tests.support.report_browser import chromium_page, full_page_screenshot, image_widths, tables_past_text_column


def _results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def _report_json(capsys, *args: str) -> list[dict]:
    assert main(["report", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["sections"]


def _table(section: dict, key: str) -> dict:
    return next(t for t in section["tables"] if t["key"] == key)


def test_probe_tables_carry_the_numbers_of_results_json(runs, capsys) -> None:
    (section,) = _report_json(capsys, str(runs["original"]), str(runs["simplified"]))
    assert section["kind"] == "cv-probes"
    accuracy = _table(section, "probe-accuracy")
    assert accuracy["header"] == ["Model", *CELLS, "HM", "n", "err"]
    for k, name in enumerate(("original", "simplified")):
        res = _results(runs[name])
        row, ci = accuracy["rows"][2 * k], accuracy["rows"][2 * k + 1]
        assert row[0] == f"hf-blip-itm:{res['model'].split(':', 1)[1]} ({name})"
        assert row[1:6] == [*(format_pct(res["cells"][c]["accuracy"]) for c in CELLS), format_pct(res["harmonic_mean"])]
        assert row[6] == str(res["n_scored"]) == "10"
        assert ci[1:5] == [format_interval(res["cells"][c]["interval"]) for c in CELLS]
        assert accuracy["values"][k]["cells"]["SG-PG"]["accuracy"] == res["cells"]["SG-PG"]["accuracy"]
    human = _results(runs["original"])["human"]
    assert accuracy["rows"][4][0] == "Human" and accuracy["rows"][4][5] == format_pct(human["harmonic_mean"])
    # the sample votes: SG-SG has 2 pairs, both majority match, label 1 -> 100%
    assert accuracy["rows"][4][1] == "100.00"
    correlation = _table(section, "probe-correlation")
    res = _results(runs["original"])
    assert correlation["rows"][0][1:5] == [format_r(res["cells"][c]) for c in CELLS]
    assert correlation["rows"][0][5] == "10"


def test_runs_on_other_data_are_refused_or_shown_apart(runs, capsys) -> None:
    assert main(["report", str(runs["original"]), str(runs["other"])]) == 2
    err = capsys.readouterr().err
    assert "different data or task versions" in err and str(runs["other"]) in err and "Traceback" not in err
    sections = _report_json(capsys, str(runs["original"]), str(runs["other"]), "--allow-mixed")
    assert len(sections) == 2 and sections[0]["title"] != sections[1]["title"]
    assert all("task version 2" in s["title"] for s in sections)


def test_a_copy_of_the_same_data_is_the_same_group(runs, tmp_path, capsys) -> None:
    """Each run of the sample set writes its own copy: equal bytes make one group, wherever they lie."""
    copy = tmp_path / "copy"
    shutil.copytree(runs["original"], copy, ignore=shutil.ignore_patterns("store.sqlite*"))
    data = Path(_results(runs["original"])["data"])
    shutil.copytree(data.parent, tmp_path / "data-copy")
    res = _results(copy)
    res["data"] = str(tmp_path / "data-copy" / data.name)
    (copy / "results.json").write_text(json.dumps(res))
    (section,) = _report_json(capsys, str(runs["original"]), str(copy))
    names = [r[0] for r in _table(section, "probe-accuracy")["rows"][:4:2]]
    assert names[0] != names[1] and names[1].endswith("[copy]")  # same model twice: told apart by folder


def test_explain_table6_and_heatmaps(runs, capsys) -> None:
    (section,) = _report_json(capsys, str(runs["explain"]))
    res = _results(runs["explain"])
    table = _table(section, "explain-table6")
    rows = {(r[1], r[2]): r for r in table["rows"]}
    for cell, splits in [*res["cells"].items(), ("overall", res["overall"])]:
        for split, label in (("match", "match"), ("non_match", "non-match"), ("all", "all")):
            s = splits[split]
            row = rows[(cell, label)]
            assert row[3] == str(s["n"])
            assert row[4] == ("—" if s["t_shap"] is None else f"{100 * s['t_shap']:.2f}")  # x 100
            assert row[7] == ("—" if s["verb_share"] is None else f"{100 * s['verb_share']:.2f}")
    assert rows[("overall", "all")][3] == "4"
    keys = [f["key"] for f in section["figures"]]
    index = json.loads((runs["explain"] / "figures" / "index.json").read_text())
    assert keys[0] == "explain-cells" and len(keys) == 1 + len(index) == 3


def test_agreement_section(runs, capsys) -> None:
    from connote.metrics.agreement import agreement_table, read_labels

    for target in (runs["labels"], runs["labels"].parent):  # the file itself, or the folder holding it
        (section,) = _report_json(capsys, str(target))
        fleiss = _table(section, "agreement-fleiss")
        expected = {r.criterion: r for r in agreement_table(read_labels(runs["labels"]))}
        assert [r[0] for r in fleiss["rows"]] == ["fluency", "primary_concept_consistency", "all"]
        for row in fleiss["rows"]:
            assert row[2] == f"{expected[row[0]].fleiss:.3f}" and row[3] == str(expected[row[0]].fleiss_items)
        assert fleiss["rows"][0][1:4] == ["10", f"{expected['fluency'].fleiss:.3f}", "8"]
        cohen = {(r[0], r[1]): r[2] for r in _table(section, "agreement-cohen")["rows"]}
        assert cohen[("fluency", "A – B")] == "0.583"  # cohen_kappa's worked example


def test_not_a_result_folder_names_it_and_the_kinds_tried(tmp_path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "empty") in err and "cv-probes" in err and "agreement" in err and "Traceback" not in err
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_a_kind_not_written_yet_is_skipped_but_a_broken_one_is_not(monkeypatch, runs) -> None:
    from connote.report import document
    from connote.report.load import load_runs

    monkeypatch.setitem(document.RUN_KINDS, "not-yet", "connote.report.not_written_yet:KIND")
    (run,) = load_runs([runs["original"]])
    assert run.kind == "cv-probes"
    monkeypatch.setitem(document.RUN_KINDS, "broken", "connote.cv_probes.report:NO_SUCH_ATTRIBUTE")
    with pytest.raises(AttributeError):
        load_runs([runs["labels"]])


# ------------------------------------------------------------------------------------------- formats


@pytest.fixture(scope="module")
def report_dir(runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "out"
    assert main(["report", str(runs["original"]), str(runs["simplified"]), str(runs["explain"]), str(runs["labels"]),
                 "--out", str(out)]) == 0
    return out


def test_out_writes_every_format_and_the_figures(report_dir) -> None:
    for name in ("report.md", "report.tex", "report.csv", "report.html", "report.json"):
        assert (report_dir / name).stat().st_size > 500
    pngs = sorted(p.name for p in report_dir.glob("*.png"))
    assert "probe-accuracy.png" in pngs and "explain-cells.png" in pngs and len(pngs) == 4
    assert all((report_dir / p).read_bytes().startswith(b"\x89PNG") for p in pngs)


def test_markdown_renders_one_table_per_table(report_dir) -> None:
    from markdown_it import MarkdownIt

    sections = json.loads((report_dir / "report.json").read_text())["sections"]
    tables = [t for s in sections for t in s["tables"]]
    html = MarkdownIt("commonmark").enable("table").render((report_dir / "report.md").read_text())
    rendered = re.findall(r"<table>(.*?)</table>", html, flags=re.S)
    assert len(rendered) == len(tables) == 12  # 5 of the sections' own, 5 published (connote.core.published), 2 speed
    for table, body in zip(tables, rendered):
        assert body.count("<tr>") == 1 + len(table["rows"])  # exactly one header row
        assert body.count("</th>") == len(table["header"])
    assert "<p>|" not in html and "| ---" not in html  # no table line spilled out as text
    assert "primary_concept_consistency" in html  # underscores escaped, not turned into emphasis
    assert html.count("<img") == 4


def test_latex_uses_booktabs_and_escapes(report_dir) -> None:
    tex = (report_dir / "report.tex").read_text()
    assert tex.count(r"\toprule") == tex.count(r"\bottomrule") == tex.count(r"\begin{tabular}") == 12
    assert r"primary\_concept\_consistency" in tex and r"Fleiss $\kappa$" in tex and r"(\%)" in tex
    body = re.sub(r"\\[%_#&$]", "", tex.split("\n", 1)[1])  # drop escaped specials and the header comment
    assert not re.search(r"[%_#]", body.replace(r"\label{tab:", "").replace("includegraphics", ""))


def test_csv_round_trips_the_tables(report_dir) -> None:
    from connote.report.render import read_csv_tables

    sections = json.loads((report_dir / "report.json").read_text())["sections"]
    tables = read_csv_tables((report_dir / "report.csv").read_text())
    for table in (t for s in sections for t in s["tables"]):
        header, rows = tables[table["key"]]
        assert header == table["header"] and rows == table["rows"]
    acc = tables["probe-accuracy"][1][0]
    assert float(acc[5]) == pytest.approx(100 * sections[0]["tables"][0]["values"][0]["harmonic_mean"], abs=0.005)


def test_html_is_self_contained(report_dir) -> None:
    page = (report_dir / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "http://" not in page and "https://" not in page and "@import" not in page
    images = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(images) == 4 and all(src.startswith("data:image/png;base64,") for src in images)
    assert page.count("<table>") == 5 + 5 + 2 and '<nav class="toc">' in page


def test_terminal_tables_fit_80_columns(runs, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["report", str(runs["original"]), str(runs["simplified"]), str(runs["explain"]),
                 str(runs["labels"])]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    for header in ("SG-SG", "PG-PG", "HM", "T-SHAP", "verb share", "Fleiss κ", "Mean Cohen κ"):
        assert header in out
    assert re.search(r"^  R1 = hf-blip-itm:", out, flags=re.M) and "R3" in out, out  # long names: a legend
    # each short name is explained right under the first table that shows it, not at the end of its section
    lines = out.splitlines()
    for short in ("R1", "R3"):
        legend = next(i for i, line in enumerate(lines) if line.startswith(f"  {short} = "))
        shown = next(i for i, line in enumerate(lines) if re.match(rf"\s*{short}\s", line))
        between = lines[shown:legend]
        assert between and not any(re.match(r"\s*Tables? \d", line) for line in between), "\n".join(between)


def test_plot_option_writes_the_accuracy_bars(runs, tmp_path, capsys) -> None:
    assert main(["report", str(runs["original"]), "--plot", str(tmp_path / "p.png"), "--format", "csv"]) == 0
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG") and (tmp_path / "p.png").stat().st_size > 10_000
    assert capsys.readouterr().out.startswith("table,probe-accuracy,")


@pytest.mark.slow
@pytest.mark.browser
def test_html_in_headless_chromium(report_dir, tmp_path) -> None:
    """The page renders: its title, every table, and every image decoded (naturalWidth > 0)."""
    with chromium_page(report_dir / "report.html", tmp_path) as driver:
        assert driver.title == "connote report"
        assert driver.execute_script("return document.querySelectorAll('table').length") == 5 + 5 + 2
        widths = image_widths(driver)
        assert len(widths) == 4 and all(w > 0 for w in widths)
        assert tables_past_text_column(driver) == 0  # nothing cut at the right edge
        shot = full_page_screenshot(driver, tmp_path / "report-shot.png", name="report-shot.png")
        assert shot.stat().st_size > 50_000


@pytest.mark.parametrize(("files", "args", "message"), [
    ({"run/results.json": '{"cells": {"SG-SG": '}, [], "results.json, line 1"),
    ({"run/results.json": '{"task": "cv-probes", "cells": {"SG-SG": {}}}'}, [], "without cell(s) SG-PG"),
    ({"run/results.json": '{"task": "cv-probes-mmshap"}'}, [], "without 'overall' and 'cells'"),
    ({"run/labels.csv": "item_id,rater,label\nv1,A,1\n"}, [], "missing column(s) criterion"),
    ({"run/labels.csv": "item_id,rater,criterion,label\nv1,A,fluency,1\nv1,A,fluency,0\n"}, [], "line 3"),
    ({"run/labels.csv": "item_id,rater,criterion,label\nv1,A,fluency,1\n"}, ["--format", "docx"], "--format"),
    ({"run/labels.csv": "item_id,rater,criterion,label\nv1,A,fluency,1\n", "taken": "x"}, ["--out", "{tmp}/taken"],
     "existing file"),
])
def test_bad_input_exits_2_naming_it(tmp_path, capsys, files, args, message) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    code = main(["report", str(tmp_path / "run"), *[a.format(tmp=tmp_path) for a in args]])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err
