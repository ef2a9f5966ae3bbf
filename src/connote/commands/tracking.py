"""Log a finished run folder to an experiment tracker: ``--track mlflow|wandb|trackio`` on every run command.

:func:`log_run` is the one hook, called once a run's files are written. It logs the config (parameters), the
fingerprint, task and model, the headline numbers (every number of the results file, nested keys joined by
``/``, speed included), the per-item table (the run's ``*.jsonl`` files), the figures (``*.png``) and the run
folder's report (``results.md`` and a self-contained ``report.html`` from ``connote report``). Every tracker works
offline: MLflow's local file store (``MLFLOW_TRACKING_URI=file:DIR``), W&B offline mode (``WANDB_MODE=offline``),
trackio's local store (``TRACKIO_DIR``). The libraries come with the ``track`` extra; :func:`require_tracker`
refuses a missing one (exit 2) before the run starts.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_json, read_jsonl

#: Tracker name -> the module it needs (all installed by ``pip install 'connote[track]'``).
TRACKERS = {"mlflow": "mlflow", "wandb": "wandb", "trackio": "trackio"}
#: Fields of a results file that are not headline numbers.
NOT_METRICS = {"config", "versions", "model_fingerprint", "seed", "created", "world_size", "task_version"}
TRACK_HELP = "Log the finished run to an experiment tracker: mlflow, wandb or trackio (extra [track]; offline-capable)."


def require_tracker(name: str | None) -> None:
    """Refuse (exit 2, one line naming the extra) an unknown tracker or one whose library is not installed."""
    if not name:
        return
    if name not in TRACKERS:
        raise InputError(f"--track {name}: expected one of {', '.join(TRACKERS)}")
    if importlib.util.find_spec(TRACKERS[name]) is None:
        raise InputError(f"--track {name} needs the {TRACKERS[name]} package: pip install 'connote[track]'")


def read_results(folder: str | Path, name: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The results file of a run folder (or the file ``name`` in it: a training's ``train.json``) and its content."""
    from connote.runs.store import RESULTS_FILES, results_path

    path = Path(folder) / name if name else results_path(folder)
    if path.is_file():
        data = read_json(path, what="results file")
        if isinstance(data, dict):
            return path, data
    raise InputError(f"not a run folder: no {name or ', '.join(RESULTS_FILES)}", path=folder)


def metrics_of(results: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number of a results file (not its metadata), nested keys joined by ``/``."""
    out: dict[str, float] = {}
    for key, value in results.items():
        if not prefix and key in NOT_METRICS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, dict):
            out.update(metrics_of(value, f"{name}/"))
    return out


def params_of(results: dict[str, Any]) -> dict[str, str]:
    """The run's identity and config as flat string parameters."""
    params = {"task": str(results.get("task")), "fingerprint": str(results.get("fingerprint")),
              "model": str(results.get("model") or (results.get("model_fingerprint") or {}).get("backend"))}
    config = results.get("config")
    if isinstance(config, dict):
        params.update({f"config/{k}": json.dumps(v, default=str)[:250] for k, v in config.items()})
    return params


def item_rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The per-item tables of a run folder: each ``*.jsonl`` file's rows (nested values as JSON text)."""
    tables = {}
    for path in sorted(folder.glob("*.jsonl")):
        rows = [row for _, row in read_jsonl(path, what="run table")]
        tables[path.stem] = [{k: v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v)
                              for k, v in row.items()} for row in rows if isinstance(row, dict)]
    return tables


def _report_files(folder: Path, tmp: Path) -> list[Path]:
    """The run folder's report: results.md and connote report's HTML page of the folder (when a kind reads it)."""
    files = [p for p in (folder / "results.md",) if p.is_file()]
    try:
        from connote.report.load import build_sections, load_runs
        from connote.report.render import to_html
        from connote.runs.store import write_text

        html = to_html(build_sections(load_runs([folder])), title=f"connote report: {folder.name}")
        write_text(tmp / "report.html", html)
        files.append(tmp / "report.html")
    except InputError:
        pass  # a folder no report kind reads: its results.md stands for the report
    return files


def training_summary(task: str, config: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """The head of a training's ``train.json``: its name, the fingerprint of its config (the tracked run's name),
    the config, versions and seed (:func:`connote.runs.run_metadata`)."""
    from connote.runs import run_metadata
    from connote.runs.store import fingerprint

    return {"task": task, "fingerprint": fingerprint(config), **run_metadata(config, seed=seed)}


def log_run(folder: str | Path, tracker: str | None, *, project: str = "connote",
            results_file: str | None = None) -> str | None:
    """Log the run folder to ``tracker``; returns the tracker's run id (None without a tracker). A training's
    folder names its summary (``results_file="train.json"``): its config, numbers and ``*.jsonl`` logs are logged
    as a run's."""
    if not tracker:
        return None
    require_tracker(tracker)
    folder = Path(folder)
    path, results = read_results(folder, results_file)
    name = f"{results.get('task')}-{results.get('fingerprint')}"
    with tempfile.TemporaryDirectory() as tmp:
        files = [path, *sorted(folder.glob("*.png")), *_report_files(folder, Path(tmp))]
        log = {"mlflow": _mlflow, "wandb": _wandb, "trackio": _trackio}[tracker]
        return log(project, name, params_of(results), metrics_of(results), item_rows(folder), files)


def _mlflow(project: str, name: str, params: dict[str, str], metrics: dict[str, float],
            tables: dict[str, list[dict[str, Any]]], files: list[Path]) -> str:
    import mlflow

    mlflow.set_experiment(project)
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params(params)
        mlflow.log_metrics({_mlflow_key(k): v for k, v in metrics.items()})
        for stem, rows in tables.items():
            if rows:
                mlflow.log_table({k: [r.get(k) for r in rows] for k in rows[0]}, artifact_file=f"{stem}.json")
        for f in files:
            mlflow.log_artifact(str(f))
        return run.info.run_id


def _mlflow_key(key: str) -> str:
    """MLflow keys allow letters, digits, ``_-. /``; others become ``_``."""
    return "".join(c if c.isalnum() or c in "_-. /" else "_" for c in key)


def _wandb(project: str, name: str, params: dict[str, str], metrics: dict[str, float],
           tables: dict[str, list[dict[str, Any]]], files: list[Path]) -> str:
    import wandb

    run = wandb.init(project=project, name=name, config=params)
    try:
        run.summary.update(metrics)
        for stem, rows in tables.items():
            if rows:
                columns = list(rows[0])
                run.log({stem: wandb.Table(columns=columns, data=[[r.get(c) for c in columns] for r in rows])})
        import shutil

        for f in files:  # copied into the run's files (wandb links saved files; the report's temp folder goes)
            shutil.copyfile(f, Path(run.dir) / f.name)
            run.save(str(Path(run.dir) / f.name), base_path=run.dir, policy="now")
        return run.id
    finally:
        run.finish()


def _trackio(project: str, name: str, params: dict[str, str], metrics: dict[str, float],
             tables: dict[str, list[dict[str, Any]]], files: list[Path]) -> str:
    import trackio

    run = trackio.init(project=project, name=name, config=params)
    try:
        trackio.log(metrics)
        for stem, rows in tables.items():
            if rows:
                import pandas as pd

                trackio.log({stem: trackio.Table(dataframe=pd.DataFrame(rows))})
        for f in files:
            trackio.log_artifact(f, type="run-file")
        return str(run.name)
    finally:
        trackio.finish()


def run_registered(name: Any, *, out: str | Path, track: str | None = None, **kwargs: Any) -> int:
    """:func:`connote.tasks.running.run_registered` (every run command's one path), then the finished run logged to
    ``track`` by rank 0 (a tracker that is not installed stops the command before anything runs)."""
    from connote.runs.distributed import launched_rank
    from connote.tasks.running import run_registered as run

    require_tracker(track)
    status = run(name, out=out, **kwargs)
    if track and launched_rank() == 0:
        log_run(out, track)
    return status
