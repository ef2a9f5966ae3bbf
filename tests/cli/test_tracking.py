"""``--track mlflow|wandb|trackio``: each real library in its offline mode logs the run folder, and what is read
back from the tracker's own files equals the run's results.json (params, headline numbers, files)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from connote.cli import main
from connote.commands.tracking import metrics_of
from tests.report.test_kind_and_study_contract import Writer


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("track") / "probes"
    assert main(["cv-probes", "run", "--out", str(out), "--no-progress"]) == 0  # the sample probes, offline
    return out


def wandb_records(path: Path) -> list[bytes]:
    """The records of a W&B offline run file: a LevelDB-style log (``:W&B`` header, 32 KiB blocks, each record
    in chunks with a 7-byte header: CRC, length, type FULL 1 / FIRST 2 / MIDDLE 3 / LAST 4)."""
    import struct

    data, out, chunk, pos, block = path.read_bytes(), [], b"", 7, 32768
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:
            break
        chunk += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            out.append(chunk)
            chunk = b""
    return out


def _track(probe_run: Path, tracker: str, capsys: pytest.CaptureFixture) -> dict:
    results = json.loads((probe_run / "results.json").read_text())
    capsys.readouterr()
    # a rerun resumes every row and logs the same results (written again by the run, so read after it)
    assert main(["cv-probes", "run", "--out", str(probe_run), "--no-progress", "--track", tracker]) == 0
    again = json.loads((probe_run / "results.json").read_text())
    assert again["fingerprint"] == results["fingerprint"]
    return again


def test_mlflow_file_store_holds_the_results(probe_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file:{tmp_path / 'mlruns'}")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    results = _track(probe_run, "mlflow", capsys)
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("connote").experiment_id])
    assert run.data.params["fingerprint"] == results["fingerprint"] and run.data.params["task"] == "cv-probes"
    expected = metrics_of(results)
    assert run.data.metrics == pytest.approx(expected) and "speed/items" in expected
    assert expected["harmonic_mean"] == results["harmonic_mean"]
    files = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"results.json", "results.md", "report.html", "items.json"} <= files
    logged = json.loads(Path(client.download_artifacts(run.info.run_id, "results.json", str(tmp_path))).read_text())
    assert logged == results
    table = json.loads(Path(client.download_artifacts(run.info.run_id, "items.json", str(tmp_path))).read_text())
    assert len(table["data"]) == results["n_items"]


def test_wandb_offline_run_holds_the_results(probe_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("wandb")
    for key, value in {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}.items():
        monkeypatch.setenv(key, value)
    results = _track(probe_run, "wandb", capsys)
    from wandb.proto import wandb_internal_pb2

    (folder,) = (tmp_path / "wandb").glob("offline-run-*")
    summary, config = {}, {}
    for data in wandb_records(next(folder.glob("*.wandb"))):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "summary":
            summary.update({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "run":
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
    assert config["fingerprint"] == results["fingerprint"]
    expected = metrics_of(results)
    assert {k: summary[k] for k in expected} == pytest.approx(expected)
    assert summary["items/_type"] == "table-file" and summary["items/nrows"] == results["n_items"]  # per-item table
    assert json.loads((folder / "files" / "results.json").read_text()) == results
    assert (folder / "files" / "report.html").stat().st_size > 1000


def test_trackio_local_store_holds_the_results(probe_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("trackio")
    import subprocess
    import sys

    # trackio reads TRACKIO_DIR when it is imported: the run and the read-back each get a fresh process
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "connote", "cv-probes", "run", "--out", str(probe_run), "--no-progress",
                    "--track", "trackio"], env=env, check=True, capture_output=True)
    results = json.loads((probe_run / "results.json").read_text())
    read = ("import json; from trackio.sqlite_storage import SQLiteStorage as S; (r,) = S.get_runs('connote'); "
            "print(json.dumps({'logs': S.get_logs('connote', r), 'config': S.get_run_config('connote', r)}, "
            "default=str))")
    back = json.loads(subprocess.run([sys.executable, "-c", read], env=env, check=True, capture_output=True,
                                     text=True).stdout)
    logged = {k: v for row in back["logs"] for k, v in row.items() if isinstance(v, (int, float))}
    expected = metrics_of(results)
    assert {k: logged[k] for k in expected} == pytest.approx(expected)
    assert back["config"]["fingerprint"] == results["fingerprint"]
    assert any("items" in row for row in back["logs"])  # the per-item table


def test_a_missing_or_unknown_tracker_is_one_line_and_exit_2(probe_run: Path, capsys: pytest.CaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["cv-probes", "run", "--out", str(probe_run), "--no-progress", "--track", "neptune"]) == 2
    assert "expected one of mlflow, wandb, trackio" in capsys.readouterr().err
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    assert main(["cv-probes", "run", "--out", str(probe_run), "--no-progress", "--track", "wandb"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'connote[track]'" in err and "Traceback" not in err


#: Every run command (each runs a registered task through the one run path) with what it needs besides --out.
RUN_COMMANDS = {
    "connote run": ["run", "cv-probes"], "cv-probes run": ["cv-probes", "run"],
    "cv-probes explain": ["cv-probes", "explain"], "explain --suite": ["explain", "--suite", "valse"],
    "suite run": ["suite", "run", "winoground"], "suite explain": ["suite", "explain", "valse"],
    "vist generate": ["vist", "generate"], "vist demo": ["vist", "demo"], "vmc caption": ["vmc", "caption"],
    "vmc synth": ["vmc", "synth"],
}


@pytest.mark.parametrize("command", sorted(RUN_COMMANDS))
def test_every_run_command_takes_track_and_checks_it_before_running(command: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    """Issue 41, item 3: ``--track`` on every run command, checked before anything is written (``connote explain
    --suite`` once dropped it and ran untracked)."""
    out = tmp_path / "run"
    assert main([*RUN_COMMANDS[command], "--out", str(out), "--track", "neptune"]) == 2
    assert "--track neptune: expected one of mlflow, wandb, trackio" in capsys.readouterr().err
    assert not out.exists()


# ---- the commands that run something besides a registered task: the judges of correlate, the trainings ----


class LengthJudge(Writer):
    """A judge a test adds (``generate``): its answers from the prompt's length, no weights."""

    backend = "track-judge"

    def generate(self, requests):
        return [self._answer(r.prompt or "") for r in requests]

    @staticmethod
    def _answer(prompt: str) -> str:
        if "creativity" in prompt:  # VMC A.7's four criteria, as JSON
            said = "yes" if len(prompt) % 2 else "no"
            return json.dumps({k: said for k in ("fluency", "primary_concept_consistency", "consistency",
                                                 "creativity")})
        return str(1 + len(prompt) % 5)  # a 1-5 rating


@pytest.fixture()
def length_judge():
    from connote.models.registry import MODELS, register_model

    register_model(LengthJudge.backend, LengthJudge, capabilities={"generate"}, weights="none")
    yield LengthJudge.backend
    MODELS._entries.pop(LengthJudge.backend, None)
    MODELS._help.pop(LengthJudge.backend, None)


def _vmc_labels(folder: Path) -> Path:
    """A VMC evaluation import (labels.csv, captions.csv) of four captions."""
    folder.mkdir(parents=True)
    (folder / "labels.csv").write_text("item_id,rater,criterion,label\n" + "".join(
        f"v{i}_run,{r},creativity,{(i + (r == 'b')) % 2}\n" for i in range(4) for r in "ab"), encoding="utf-8")
    (folder / "captions.csv").write_text("item_id,video_id,run,caption\n" + "".join(
        f"v{i}_run,v{i},run,the car is as fast as {'a cheetah' * (i % 2) or 'a jeep'}\n" for i in range(4)),
        encoding="utf-8")
    return folder


def _vist_sample(root: Path) -> dict[str, Path]:
    import numpy as np

    from connote.vist.data import read_official
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(root / "sample")
    ids = sorted(set(read_official(paths["train"]).images) | set(read_official(paths["test"]).images))
    paths["features"] = root / "f.npz"
    np.savez(paths["features"], **{p: np.random.default_rng(0).normal(size=4).astype(np.float32) for p in ids})
    return paths


#: Each command beside the run commands that takes --track: (arguments, the folder it would write), from a root.
OTHER_COMMANDS = {
    "vist correlate --judge": lambda t: (
        ["vist", "correlate", str(_vist_sample(t)["ratings"]), "--stories",
         str(t / "sample" / "test.story-in-sequence.json"), "--metrics", "none", "--judge", LengthJudge.backend,
         "--judge-out", str(t / "judges"), "--n-boot", "0"],
        t / "judges"),
    "vmc correlate --judge": lambda t: (
        ["vmc", "correlate", str(_vmc_labels(t / "import")), "--judge", LengthJudge.backend, "--judge-out",
         str(t / "judges"), "--n-boot", "0"], t / "judges"),
    "vist train": lambda t: (
        ["vist", "train", "--sis", str(_vist_sample(t)["train"]), "--features", str(t / "f.npz"), "--steps", "2",
         "--embed-dim", "8", "--hidden-dim", "8", "--out", str(t / "m")], t / "m"),
    "vist train-captioner": lambda t: (
        ["vist", "train-captioner", "--dii", str(t / "dii.json"), "--features", str(t / "f.npz"), "--steps", "2",
         "--out", str(t / "c")], t / "c"),
    "vmc train": lambda t: (["vmc", "train", "--config", "paper-git-baseline", "--sample", "--out", str(t / "s")],
                            t / "s"),
}


@pytest.mark.parametrize("command", sorted(OTHER_COMMANDS))
def test_the_judges_and_trainings_take_track_and_check_it_before_running(command: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    """``--track`` on the commands left without it: the judge runs of ``vist correlate`` / ``vmc correlate`` and
    the trainings; a tracker that cannot log is refused before anything is written."""
    args, out = OTHER_COMMANDS[command](tmp_path)
    assert main([*args, "--track", "neptune"]) == 2
    err = capsys.readouterr().err
    assert "--track neptune: expected one of mlflow, wandb, trackio" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["vist correlate", "vmc correlate"])
def test_correlate_track_without_a_judge_is_refused(command: str, tmp_path: Path, capsys) -> None:
    args, _ = OTHER_COMMANDS[f"{command} --judge"](tmp_path)
    cut = args.index("--judge")
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"1": {"m": 0.1}}), encoding="utf-8")
    assert main([*args[:cut], *args[cut + 2:], "--scores", str(scores), "--track", "mlflow"]) == 2
    assert "--track mlflow logs the judges' runs: give --judge" in capsys.readouterr().err


def _mlflow_runs(root: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list]:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file:{root / 'mlruns'}")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")

    def runs() -> list:
        from mlflow.tracking import MlflowClient

        client = MlflowClient()
        experiment = client.get_experiment_by_name("connote")
        return [] if experiment is None else client.search_runs([experiment.experiment_id])

    return runs


@pytest.mark.parametrize("command", ["vist correlate --judge", "vmc correlate --judge"])
def test_a_judge_run_inside_correlate_is_logged(command: str, length_judge: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    runs = _mlflow_runs(tmp_path, monkeypatch)
    args, judges = OTHER_COMMANDS[command](tmp_path)
    assert main([*args, "--no-progress", "--track", "mlflow"]) == 0, capsys.readouterr().err
    (folder,) = [p.parent for p in judges.glob("*/results.json")]
    results = json.loads((folder / "results.json").read_text())
    (run,) = runs()
    assert run.data.params["task"] == "judge" and run.data.params["fingerprint"] == results["fingerprint"]
    assert run.data.metrics == pytest.approx(metrics_of(results))
    assert any(k.endswith("/n_scored") and v > 0 for k, v in run.data.metrics.items()), run.data.metrics


def test_a_training_is_logged_with_its_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    runs = _mlflow_runs(tmp_path, monkeypatch)
    args, out = OTHER_COMMANDS["vist train"](tmp_path)
    assert main([*args, "--no-progress", "--track", "mlflow"]) == 0, capsys.readouterr().err
    summary = json.loads((out / "train.json").read_text())
    (run,) = runs()
    assert run.data.params["task"] == "vist-train" and run.data.params["fingerprint"] == summary["fingerprint"]
    assert run.data.params["config/steps"] == "2"
    assert run.data.metrics == pytest.approx(metrics_of(summary)) and "final_loss" in run.data.metrics
    from mlflow.tracking import MlflowClient

    assert "train.json" in {a.path for a in MlflowClient().list_artifacts(run.info.run_id)}


@pytest.mark.slow  # trains the recipe's tiny random GIT on the sample clips
def test_vmc_train_is_logged_with_its_step_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    pytest.importorskip("accelerate")
    pytest.importorskip("av")
    runs = _mlflow_runs(tmp_path, monkeypatch)
    args, out = OTHER_COMMANDS["vmc train"](tmp_path)
    assert main([*args, "--max-steps", "2", "--track", "mlflow"]) == 0, capsys.readouterr().err
    (folder,) = [p.parent for p in out.glob("*/training.json")]
    summary = json.loads((folder / "training.json").read_text())
    assert summary["task"] == "vmc-train" and summary["steps"] == 2
    (run,) = runs()
    assert run.data.params["fingerprint"] == summary["fingerprint"] and run.data.metrics["steps"] == 2
    assert run.data.metrics == pytest.approx(metrics_of(summary))
    from mlflow.tracking import MlflowClient

    files = {a.path for a in MlflowClient().list_artifacts(run.info.run_id)}
    assert {"training.json", "train_log.json"} <= files  # the step log as the run's table
