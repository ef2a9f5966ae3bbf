"""The papers' published tables as data, beside every report section, and `connote reproduce`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from connote.cli import main
from connote.core.published import PublishedRow, compare, table, tables
from tests.support.command_paths import command_words, names_a_command

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"


def test_every_table_has_its_source_setting_and_needs() -> None:
    ids = [t.id for t in tables()]
    assert ids == ["cv-probes/table3", "cv-probes/table4", "cv-probes/table5", "cv-probes/table6", "vist/table2",
                   "vist/table3", "vist/arel-album", "vmc/table1", "vmc/table2", "vmc/table3"]
    for t in tables():
        assert t.source and t.setting and t.needs, t.id
        assert t.rows or not t.recomputable, t.id  # an empty table says why
        if not t.recomputable:
            assert t.note, t.id
        for r in t.rows:
            assert set(r.values) <= set(t.columns) and all(math.isfinite(v) for v in r.values.values()), (t.id, r.row)
    assert table("cv-probes/table3").row("BLIP").values == {"SG-SG": 78.63, "SG-PG": 75.58, "PG-SG": 78.36,
                                                            "PG-PG": 92.40, "HM": 80.75}
    assert table("vmc/table1").row("GIT-LLaVA-X").values["CIDEr"] == 22.67
    assert table("vmc/table3").row("Fleiss").values == {"kappa": 0.653}


def test_the_papers_run_kinds_read_runs_onto_their_published_tables() -> None:
    """The matching of runs to published rows is each paper's run kind's (``published_values``, with
    ``why_not_published``), not the report's. Which kinds have it is listed here: Table 6 (MM-SHAP runs), VIST's
    dataset statistics and VMC's agreement table are shown with no run beside them."""
    from connote.report.document import RUN_KINDS, kind_object

    reading = set()
    for t in tables():
        kind = kind_object(t.kind) if t.kind in RUN_KINDS else None
        if callable(getattr(kind, "published_values", None)):
            assert callable(getattr(kind, "why_not_published", None)), t.kind
            reading.add(t.kind)
    assert reading == {"cv-probes", "vist-storytelling", "vmc-captioning"}


def test_values_are_the_seeds_numbers() -> None:
    """Every CV-Probes and VMC number in the data occurs in the seed paper's text (where the seeds are here)."""
    if not SEEDS.is_dir():
        pytest.skip("the seed papers are not beside this checkout")
    texts = {"001": (SEEDS / "001_bdaa4ec976095338.txt").read_text(encoding="utf-8"),
             "003": (SEEDS / "003_8e5ff4efb95d7fd9.txt").read_text(encoding="utf-8")}
    for t in tables():
        seed = "001" if t.id.startswith("cv-probes") else "003" if t.id.startswith("vmc") else None
        if seed is None:
            continue
        cells = set(texts[seed].replace("\t", " ").replace("\n", " ").split(" "))
        for r in t.rows:
            for col, v in r.values.items():
                if col == "# of VC":
                    continue
                forms = {f"{v:.2f}", f"{v:.3f}", f"{v:.4f}", f"{v:g}", f"{v:.1f}"}
                assert forms & cells, (t.id, r.row, col, v)


def test_rows_are_matched_by_model_spec_and_compared() -> None:
    t = table("cv-probes/table3")
    assert t.row_for("hf-blip-itm:Salesforce/blip-itm-base-coco").row == "BLIP"
    assert t.row_for("hf-blip2-itm:Salesforce/blip2-itm-vit-g").row == "BLIP 2"
    assert t.row_for("objects") is None
    v = table("vmc/table1")
    assert v.row_for("git-llava:runs/git-llava-x/final").row == "GIT-LLaVA-X"  # the longest pattern wins
    assert v.row_for("git-llava:runs/stage2/final").row == "GIT-LLaVA"
    row = PublishedRow("r", {"a": 10.0, "b": 5.0})
    got = compare({"a": 12.0, "b": 4.0}, {"a": [11.0, 13.0]}, row, ("a", "b"))
    assert got == [{"column": "a", "measured": 12.0, "interval": [11.0, 13.0], "published": 10.0, "difference": 2.0,
                    "inside": False},
                   {"column": "b", "measured": 4.0, "interval": None, "published": 5.0, "difference": -1.0,
                    "inside": None}]


@pytest.mark.slow
def test_report_puts_a_blip_run_beside_the_papers_blip_row(runs, capsys) -> None:  # noqa: ANN001
    assert main(["report", str(runs["original"]), str(runs["simplified"]), "--json"]) == 0
    sections = json.loads(capsys.readouterr().out)["sections"]
    published = {t["key"]: t for s in sections for t in s["tables"] if t["key"].startswith("published-")}
    assert {"published-cv-probes-table3", "published-cv-probes-table4", "published-cv-probes-table5"} <= set(published)
    t3 = published["published-cv-probes-table3"]
    (entry,) = t3["values"]  # the original-captions run only: Table 4 is the simplified captions'
    assert entry["row"] == "BLIP"
    results = json.loads((runs["original"] / "results.json").read_text())
    for c in entry["columns"]:
        if c["column"] == "HM":
            measured, ci = results["harmonic_mean"] * 100, None
        else:
            cell = results["cells"][c["column"]]
            measured, ci = cell["accuracy"] * 100, [x * 100 for x in cell["interval"]]
        assert c["measured"] == pytest.approx(measured)
        assert c["difference"] == pytest.approx(measured - c["published"])
        assert c["inside"] == (None if ci is None else ci[0] <= c["published"] <= ci[1])
    assert published["published-cv-probes-table4"]["values"][0]["run"].endswith("(simplified)")
    rows = [r[0] for r in t3["rows"]]
    assert rows[:7] == [f"paper: {r}" for r in ("LXMERT", "ALBEF", "BLIP", "BLIP 2", "FLAVA", "LlaVA-NeXT", "GPT-4o")]


def test_reproduce_list_shows_every_table_and_what_it_needs(capsys) -> None:
    assert main(["reproduce", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [x["table"] for x in listed] == [t.id for t in tables()]
    assert all(x["needs"] for x in listed)
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "vist/table3" in out and "[not recomputable from the seed]" in out and "needs: " in out
    assert main(["reproduce", "no/such-table"]) == 2


def test_every_command_a_table_suggests_exists() -> None:
    """`reproduce --list` once suggested `connote datasets cv-probes` (no such command)."""
    import re

    suggested = [(t.id, m) for t in tables() for m in re.findall(r"`connote ([^`]+)`", t.needs)]
    assert len(suggested) >= 10
    for table_id, line in suggested:
        assert names_a_command(command_words(line)), (table_id, line)
    assert not names_a_command(["datasets", "cv-probes"])


def test_reproduce_reads_runs(runs, capsys) -> None:  # noqa: ANN001
    assert main(["reproduce", "cv-probes/table3", str(runs["original"]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (entry,) = out["runs"]
    assert entry["row"] == "BLIP" and len(entry["columns"]) == 5
    assert main(["reproduce", "vmc/table1", str(runs["original"])]) == 2  # a probe run is not a VMC run


def test_reproduce_says_why_a_run_of_another_setting_is_not_compared(runs, capsys) -> None:  # noqa: ANN001
    """Issue 39, item 11: Table 4 is on the simplified captions; an original-captions run used to be dropped without
    a word (exit 0, the published rows alone). Alone it is refused with why; beside a simplified run it is named."""
    assert main(["reproduce", "cv-probes/table4", str(runs["original"])]) == 2
    err = capsys.readouterr().err
    assert "no run to compare with cv-probes/table4" in err and "its captions are the original ones" in err
    assert main(["reproduce", "cv-probes/table4", str(runs["original"]), str(runs["simplified"]), "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["runs"]) == 1
    assert "is not compared with cv-probes/table4: its captions are the original ones" in captured.err


def test_reproduce_scores_an_arel_format_prediction_file(arel_format_files, tmp_path: Path, capsys) -> None:
    """A file in AREL's prediction layout against gold from the same albums: measured | published | difference.

    The text is the example file's human stories (see the ``arel_format_files`` fixture): the first story of each
    album is scored against the album's other story. It sits in a folder named as AREL's release stores
    IRL-init-iter100's file (data/save/IRL-init-iter100/), which is what matches the published row.
    """
    pred, gold = arel_format_files
    local = tmp_path / "IRL-init-iter100" / "prediction_test.json"
    local.parent.mkdir()
    local.write_bytes(pred.read_bytes())
    assert main(["reproduce", "vist/arel-album", str(local), "--gold", str(gold), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["runs"]
    assert entry["row"] == "AREL IRL-init-iter100"
    meteor = next(c for c in entry["columns"] if c["column"] == "METEOR")
    assert meteor["published"] == pytest.approx(0.34881328040125786)
    assert meteor["measured"] == pytest.approx(0.2178, abs=5e-5)  # one human story against one other, -t hter
    assert meteor["difference"] == pytest.approx(meteor["measured"] - meteor["published"])


@pytest.mark.slow
def test_report_on_the_story_and_metaphor_sample_runs_shows_the_published_rows(tmp_path: Path, capsys) -> None:
    story, caption = tmp_path / "story", tmp_path / "metaphor-caption"
    assert main(["story", "generate", "--out", str(story)]) == 0
    assert main(["vist", "score", str(story), "--gold", str(story / "sample" / "test.story-in-sequence.json"),
                 "-p", "album", "--n-boot", "50"]) == 0
    assert main(["metaphor", "caption", "--out", str(caption), "-q"]) == 0
    assert main(["metaphor", "score", str(caption), "--bootstrap", "50"]) == 0
    capsys.readouterr()
    assert main(["report", str(story), str(caption), "--json"]) == 0
    sections = json.loads(capsys.readouterr().out)["sections"]
    keys = {t["key"]: t for s in sections for t in s["tables"]}
    arel, vmc = keys["published-vist-arel-album"], keys["published-vmc-table1"]
    assert [r[0] for r in arel["rows"]][:2] == ["paper: AREL IRL-init-iter100", "paper: AREL IRL-XE-ss-init"]
    assert arel["values"][0]["row"] is None and arel["values"][0]["values"]["METEOR"] > 0  # the run, unmatched
    assert [r[0] for r in vmc["rows"]][:6] == [f"paper: {m}" for m in ("Video-ChatGPT", "Valley", "GIT",
                                                                          "Video-LLaVA", "GIT-LLaVA", "GIT-LLaVA-X")]
    assert any("no published row for this model" in n for n in vmc["notes"])
