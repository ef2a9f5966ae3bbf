"""A fully resumed run loads no model, and a stored row is still reused only when everything that made it is
unchanged (issue 22, item 2): weights bytes, spec options, task version. The model is a tiny random CLIP saved to
a folder and loaded back through ``from_pretrained``; every construction of the backend is counted."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from connote.cli import main  # noqa: E402
from tests.support import tiny_models  # noqa: E402
from tests.support.tiny_manifest import write_manifest  # noqa: E402

pytest.importorskip("transformers")

@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_clip(tmp_path_factory.mktemp("clip") / "clip")


@pytest.fixture()
def builds(monkeypatch) -> list[str]:
    """Every construction of the CLIP backend, by weights."""
    from connote.models.hf_clip import ClipMatcher

    made: list[str] = []
    original = ClipMatcher.__init__

    @functools.wraps(original)
    def counting(self, weights=None, **kwargs):
        made.append(str(weights))
        original(self, weights, **kwargs)

    monkeypatch.setattr(ClipMatcher, "__init__", counting)
    return made


def probe(data: Path, spec: str, out: Path) -> dict:
    assert main(["probe", "--data", str(data), "--model", spec, "--out", str(out), "--quiet"]) == 0
    return json.loads((out / "results.json").read_text())


def p_match(out: Path) -> dict[str, float]:
    return {r["item_id"]: r["p_match"] for r in map(json.loads, (out / "items.jsonl").read_text().splitlines())}


def test_a_fully_resumed_run_never_builds_the_model(tmp_path, clip_dir, builds):
    data, out = write_manifest(tmp_path / "data"), tmp_path / "run"
    first = probe(data, f"hf-clip:{clip_dir}", out)
    assert builds == [str(clip_dir)] and first["n_computed_this_run"] == 6
    again = probe(data, f"hf-clip:{clip_dir}", out)
    assert builds == [str(clip_dir)]  # no second construction
    assert again["n_resumed"] == 6 and again["n_computed_this_run"] == 0
    assert again["fingerprint"] == first["fingerprint"] and again["model_fingerprint"] == first["model_fingerprint"]
    assert again["cells"] == first["cells"] and again["harmonic_mean"] == first["harmonic_mean"]


def test_a_new_item_builds_the_model_and_computes_only_it(tmp_path, clip_dir, builds):
    data, out = write_manifest(tmp_path / "data", n_images=2), tmp_path / "run"
    probe(data, f"hf-clip:{clip_dir}", out)
    before = p_match(out)
    data = write_manifest(tmp_path / "data", n_images=3)  # two more pairs
    results = probe(data, f"hf-clip:{clip_dir}", out)
    assert len(builds) == 2 and results["n_resumed"] == 4 and results["n_computed_this_run"] == 2
    assert {k: v for k, v in p_match(out).items() if k in before} == before


def test_changed_weights_bytes_force_a_recompute(tmp_path, clip_dir, builds):
    import shutil

    weights = tmp_path / "clip"
    shutil.copytree(clip_dir, weights)
    data, out = write_manifest(tmp_path / "data"), tmp_path / "run"
    first = probe(data, f"hf-clip:{weights}", out)
    before = p_match(out)
    tiny_models.tiny_clip(weights, seed=1)  # the same files, other weights
    again = probe(data, f"hf-clip:{weights}", out)
    assert len(builds) == 2 and again["n_resumed"] == 0 and again["n_computed_this_run"] == 6
    assert again["fingerprint"] != first["fingerprint"]
    after = p_match(out)
    assert after.keys() == before.keys() and all(abs(after[k] - before[k]) > 1e-6 for k in before)


def test_a_changed_option_or_task_version_forces_a_recompute(tmp_path, clip_dir, builds, monkeypatch):
    data, out = write_manifest(tmp_path / "data"), tmp_path / "run"
    first = probe(data, f"hf-clip:{clip_dir}", out)
    other = probe(data, f"hf-clip:{clip_dir}?threshold=0.05", out)  # the calibration is an option
    assert len(builds) == 2 and other["n_computed_this_run"] == 6 and other["fingerprint"] != first["fingerprint"]
    from connote.cv_probes.task import ProbeTask

    monkeypatch.setattr(ProbeTask, "version", ProbeTask.version + 1)
    bumped = probe(data, f"hf-clip:{clip_dir}", out)
    assert len(builds) == 3 and bumped["n_computed_this_run"] == 6
    assert bumped["fingerprint"] not in (first["fingerprint"], other["fingerprint"])


@pytest.mark.slow
def test_the_wilson_interval_is_scipys():
    from scipy.stats import binomtest

    from connote.cv_probes.task import accuracy_interval

    for n in range(1, 41):
        for k in range(n + 1):
            for confidence in (0.9, 0.95, 0.99):
                ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
                lo, hi = accuracy_interval(k, n, confidence)
                assert abs(lo - ci.low) < 1e-12 and abs(hi - ci.high) < 1e-12, (k, n, confidence)
    assert accuracy_interval(0, 5)[0] == 0.0 and accuracy_interval(5, 5)[1] == 1.0 and accuracy_interval(0, 0) is None


def test_identity_is_none_where_a_build_could_differ(monkeypatch):
    from connote.models.lazy import model_identity

    assert model_identity("openai:gpt-4o") is None  # a service's model can change behind its name
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("connote.models.hub.hub_unreachable", lambda: None)
    assert model_identity("hf-clip:openai/clip-vit-base-patch32") is None  # online: main may move


def _stderr_events(args: list[str], cwd: Path) -> tuple[list[str], list[str]]:
    """stderr of ``python -X importtime -m connote ARGS`` (not a terminal): the lines connote printed, and
    every line in order with imports marked, so the order of a message and an import can be read."""
    import connote

    env = {**os.environ, "PYTHONPATH": str(Path(connote.__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "connote", *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    return [ln for ln in lines if not ln.startswith("import time:")], lines


def _first_import(lines: list[str], package: str) -> int:
    """Index of the first import-time line of ``package`` or one of its modules (len(lines) if none)."""
    for i, ln in enumerate(lines):
        if ln.startswith("import time:"):
            name = ln.rsplit("|", 1)[-1].strip()
            if name == package or name.startswith(package + "."):
                return i
    return len(lines)


@pytest.mark.slow
def test_the_first_stderr_line_comes_before_the_model_loads(tmp_path, clip_dir):
    """A log (stderr not a terminal) shows a line before the model's imports start; a resumed run's first line
    counts what is stored, and it never imports transformers (no model is built)."""
    data = write_manifest(tmp_path / "data")
    args = ["probe", "--data", str(data), "--model", f"hf-clip:{clip_dir}", "--out", str(tmp_path / "run")]
    said, lines = _stderr_events(args, tmp_path)
    assert said[0] == f"loading model hf-clip:{clip_dir}…"
    first = lines.index(said[0])
    assert first < _first_import(lines, "torch") < len(lines) and first < _first_import(lines, "transformers")
    assert said[1] == "6 pairs: 0 stored, 6 to compute"
    said, lines = _stderr_events(args, tmp_path)
    assert said[0] == "6 pairs: 6 stored, 0 to compute"
    assert _first_import(lines, "transformers") == len(lines)  # nothing of a model was loaded
    assert said[-1] == "pairs: 6 item(s): 6 resumed, 0 computed now, 0 failed"
