"""The probe task end to end: cells, harmonic mean, correlations, resume, fingerprints, errors."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scipy.stats import pearsonr

from connote.cli import main
from connote.cv_probes.task import harmonic_mean, run_probe
from tests.support.probe_manifest import ROWS, write_manifest

# p(match) per caption for a hand-checked table: a lookup "model" over the captions of ROWS.
TABLE = {
    "a man begs on the street": 0.9, "a man sits on the street": 0.8,          # SG-SG ok, SG-PG ok
    "a woman prays in a church": 0.3, "a woman stands in a church": 0.7,      # SG-SG wrong, SG-PG ok
    "a man begs near a car": 0.6, "a man sits near a car": 0.95,              # PG-SG wrong, PG-PG ok
    "a child prays at a bench": 0.2, "a child sits at a bench": 0.4,          # PG-SG ok, PG-PG wrong
    "a dog begs for food": 0.1, "a dog sits on the floor": 0.55,              # PG-SG ok, PG-PG ok
}


class TableMatcher:
    """A deterministic matcher reading p(match) from TABLE (counts its calls)."""

    def __init__(self, table=TABLE, name="table-v1"):
        self.table, self.name, self.calls = table, name, 0

    def describe(self):
        return {"backend": "table", "name": self.name}

    def match_probability(self, images, captions, pairs):
        self.calls += len(pairs)
        return [self.table[captions[c]] for _, c in pairs]


def test_cells_and_harmonic_mean_hand_checked(manifest, tmp_path):
    res = run_probe(manifest, out=tmp_path / "run", model_obj=TableMatcher(), progress=False)
    cells = res["cells"]
    assert cells["SG-SG"]["accuracy"] == pytest.approx(1 / 2) and cells["SG-SG"]["n"] == 2
    assert cells["SG-PG"]["accuracy"] == pytest.approx(2 / 2) and cells["SG-PG"]["n"] == 2
    assert cells["PG-SG"]["accuracy"] == pytest.approx(2 / 3) and cells["PG-SG"]["n"] == 3
    assert cells["PG-PG"]["accuracy"] == pytest.approx(2 / 3) and cells["PG-PG"]["n"] == 3
    assert res["harmonic_mean"] == pytest.approx(4 / (2 + 1 + 1.5 + 1.5))
    items = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert {"item_id", "image_kind", "caption_kind", "label", "p_match", "predicted", "correct",
            "error"} <= set(items[0])
    by = {r["item_id"]: r for r in items}
    assert by["i3-sg"] == {**by["i3-sg"], "label": 0, "p_match": 0.6, "predicted": 1, "correct": False}
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["cells"]["PG-SG"]["accuracy"] == pytest.approx(2 / 3)
    assert {"config", "versions", "seed", "model_fingerprint", "fingerprint"} <= set(saved)
    assert "| Accuracy (%) | 50.00 | 100.00 | 66.67 | 66.67 | 66.67 |" in (tmp_path / "run" / "results.md").read_text()


def test_correlations_match_scipy(manifest, tmp_path):
    res = run_probe(manifest, out=tmp_path / "run", model_obj=TableMatcher(), progress=False)
    votes = {r[0]: [int(v) for v in r[7].split(";")] for r in ROWS}
    pg_sg = [r[0] for r in ROWS if r[2] == "PG" and r[5] == "SG"]
    x = [TABLE[next(r[3] for r in ROWS if r[0] == i)] for i in pg_sg]
    y = [sum(votes[i]) / 3 for i in pg_sg]
    ref = pearsonr(x, y)
    assert res["cells"]["PG-SG"]["pearson_r"] == pytest.approx(ref.statistic, abs=1e-12)
    assert res["cells"]["PG-SG"]["pearson_p"] == pytest.approx(ref.pvalue, abs=1e-12)
    assert res["cells"]["SG-SG"]["pearson_r"] is None  # two items: undefined, reported as null


def test_harmonic_mean_edge_cases():
    assert harmonic_mean([0.5, 1.0, 1.0, 1.0]) == pytest.approx(4 / 5)
    assert harmonic_mean([0.0, 1.0, 1.0, 1.0]) == 0.0
    assert harmonic_mean([None, 1.0, 1.0, 1.0]) is None


def test_resume_skips_finished_items_and_models_never_share(manifest, tmp_path):
    out = tmp_path / "run"
    first = TableMatcher()
    run_probe(manifest, out=out, model_obj=first, progress=False)
    assert first.calls == 10
    again = TableMatcher()
    res = run_probe(manifest, out=out, model_obj=again, progress=False)
    assert again.calls == 0 and res["n_scored"] == 10
    other = TableMatcher({k: 1 - v for k, v in TABLE.items()}, name="table-v2")
    res2 = run_probe(manifest, out=out, model_obj=other, progress=False)
    assert other.calls == 10
    assert res2["cells"]["SG-PG"]["accuracy"] == 0.0  # its own numbers (v1 had 1.0)
    assert res2["fingerprint"] != res["fingerprint"]


def test_bad_items_are_recorded_and_the_run_goes_on(tmp_path):
    rows = list(ROWS)
    rows[0] = ("i1-sg", "missing.png", *rows[0][2:])              # missing image
    rows[5] = ("i3-pg", "img3.png", "PG", "", *rows[5][4:])       # empty caption
    rows[8] = ("i5-sg", "img5.png", "XG", *rows[8][3:])           # unknown image kind
    data = write_manifest(tmp_path / "data", rows=rows)
    (tmp_path / "data" / "broken.png").write_bytes(b"not a png")
    rows[2] = ("i2-sg", "broken.png", *rows[2][2:])               # unreadable image
    data = write_manifest(tmp_path / "data", rows=rows)
    res = run_probe(data, out=tmp_path / "run", model_obj=TableMatcher({**TABLE, "": 0.5}), progress=False)
    c = res["cells"]
    assert (c["SG-SG"]["errors"], c["SG-SG"]["n"]) == (2, 0)
    assert (c["PG-PG"]["errors"], c["PG-PG"]["n"]) == (1, 2)
    assert res["errors_outside_cells"] == 1 and res["n_errors"] == 4 and res["n_scored"] == 6
    assert c["SG-SG"]["accuracy"] is None and res["harmonic_mean"] is None
    lines = (tmp_path / "run" / "items.jsonl").read_text().splitlines()
    items = {json.loads(x)["item_id"]: json.loads(x) for x in lines}
    assert "image file not found" in items["i1-sg"]["error"]
    assert "cannot read image" in items["i2-sg"]["error"]
    assert "empty caption" in items["i3-pg"]["error"]
    assert "image_kind must be SG or PG" in items["i5-sg"]["error"]


def test_blip_run_via_cli_and_report(tiny_blip_dir, manifest, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the runs' full names in the table, however long the temporary path
    out = tmp_path / "blip"
    assert main(["probe", "--data", str(manifest), "--model", f"hf-blip-itm:{tiny_blip_dir}",
                 "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "Harmonic mean" in printed and "Accuracy (%)" in printed
    assert main(["probe", "--data", str(manifest), "--model", f"hf-blip-itm:{tiny_blip_dir}",
                 "--captions", "simplified", "--out", str(tmp_path / "simple"), "-q"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), str(tmp_path / "simple"), "--plot", str(tmp_path / "p.png")]) == 0
    table = capsys.readouterr().out
    assert "hf-blip-itm (original)" in table and "hf-blip-itm (simplified)" in table
    assert (tmp_path / "p.png").stat().st_size > 10_000


KILL_SCRIPT = """
import sys, time
from connote.models.registry import register_model

class Slow:
    def describe(self): return {"backend": "slow"}
    def match_probability(self, images, captions, pairs):
        time.sleep(0.3)
        return [0.7 for _ in pairs]

register_model("slow", lambda weights=None: Slow(), capabilities={"match"}, weights="none")
from connote.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_killed_run_loses_at_most_the_batch_in_flight(manifest, tmp_path):
    out = tmp_path / "run"
    script = tmp_path / "slow.py"
    script.write_text(KILL_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script), "probe", "--data", str(manifest), "--model", "slow",
                             "--out", str(out), "--chunk", "1", "-q"], env=env)
    db = out / "store.sqlite"
    deadline = time.time() + 60
    done = 0
    while time.time() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    done = con.execute("SELECT COUNT(*) FROM items").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= 3:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        kept = con.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    assert 3 <= kept < 10
    # resume with the same fingerprint: only the rest is computed
    from connote.models import MODELS

    class Counting:
        calls = 0

        def describe(self):
            return {"backend": "slow"}

        def match_probability(self, images, captions, pairs):
            Counting.calls += len(pairs)
            return [0.7 for _ in pairs]

    res = run_probe(manifest, out=out, model_obj=Counting(), progress=False)
    assert Counting.calls == 10 - kept
    assert res["n_scored"] == 10
    assert "slow" not in MODELS  # the subprocess's registration did not leak here


@pytest.mark.slow
def test_two_process_run_equals_single_process(tiny_blip_dir, manifest, tmp_path):
    single = run_probe(manifest, f"hf-blip-itm:{tiny_blip_dir}", tmp_path / "one", progress=False,
                       pairs_per_chunk=2)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533",
           "-m", "connote", "probe", "--data", str(manifest), "--model", f"hf-blip-itm:{tiny_blip_dir}",
           "--out", str(tmp_path / "two"), "--chunk", "2", "-q"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    two = json.loads((tmp_path / "two" / "results.json").read_text())
    assert two["world_size"] == 2
    assert two["cells"] == single["cells"] and two["harmonic_mean"] == single["harmonic_mean"]
    one_items = (tmp_path / "one" / "items.jsonl").read_text().splitlines()
    two_items = (tmp_path / "two" / "items.jsonl").read_text().splitlines()
    assert [json.loads(x)["p_match"] for x in one_items] == pytest.approx(
        [json.loads(x)["p_match"] for x in two_items], abs=1e-6)


@pytest.mark.slow
def test_embedded_default_on_the_sample_set(tmp_path, capsys):
    assert main(["probe", "--out", str(tmp_path / "sample"), "-q"]) == 0
    res = json.loads((tmp_path / "sample" / "results.json").read_text())
    assert res["model"] == "objects" and res["n_scored"] == 18 and res["n_errors"] == 0
    # The entity-only baseline cannot see social meaning: it is near chance on the key cell.
    acc = {c: v["accuracy"] for c, v in res["cells"].items()}
    assert acc == pytest.approx({"SG-SG": 0.5, "SG-PG": 0.75, "PG-SG": 0.6, "PG-PG": 0.4})
    assert res["harmonic_mean"] == pytest.approx(4 / (2 + 4 / 3 + 5 / 3 + 2.5))
    assert Path(res["data"]).name == "probes.csv"
