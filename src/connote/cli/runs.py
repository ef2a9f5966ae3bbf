"""``connote runs [FOLDER…]``: the run folders under a root (default ``./runs``), one line each: task, model,
data, settings signature (the run fingerprint, and the batch-invariance figure of a run made with
``--check-invariance``), headline numbers, date and state — complete, partial (items failed) or stale (written by
other code than is installed now: another version of its task, or another source of the task's or the model
backend's modules, as the ``code`` digests its results file records). ``--json`` gives the listing that ``connote
report LIST.json`` reads, so a paper's table is one command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from connote.commands.tracking import read_results
from connote.runs.store import RESULTS_FILES

#: Top-level numbers that describe the run, not its result (left out of the headline).
NOT_HEADLINE = ("n_", "seconds", "world_size", "task_version", "seed", "pairs_this_run", "items_this_run")


def run_folders(roots: list[Path]) -> list[Path]:
    """Folders holding a results file, under each root (a root that is one counts itself); sample data and
    score folders inside a run are not runs."""
    found: list[Path] = []
    for root in roots:
        if any((root / name).is_file() for name in RESULTS_FILES):
            found.append(root)
            continue
        for name in RESULTS_FILES:
            found.extend(p.parent for p in sorted(root.rglob(name))
                         if not {"sample", "scores"} & set(p.relative_to(root).parts[:-1]))
    return sorted(dict.fromkeys(found))


def changed_since(results: dict[str, Any]) -> list[str]:
    """What differs between the code that wrote a results file and the code installed now: ``task version``
    (the task's declared version), ``task code`` and ``model code`` (the digests a run records as ``code``,
    :func:`connote.tasks.api.code_digests`). Empty for a kind with no registered task to compare with."""
    from connote.tasks import TASKS
    from connote.tasks.api import code_digests

    task = results.get("task")
    if not isinstance(task, str) or task not in TASKS:  # a suite's or another kind's name
        return []
    changed = []
    if results.get("task_version") not in (None, int(TASKS.get(task).version)):
        changed.append("task version")
    recorded = results.get("code")
    if isinstance(recorded, dict):  # folders written before runs recorded their code have none
        model = results.get("model_fingerprint")
        now = code_digests(task, model.get("backend") if isinstance(model, dict) else None)
        changed += [f"{part} code" for part in ("task", "model")
                    if part in recorded and recorded[part] != now.get(part)]
    return changed


def describe(folder: Path) -> dict[str, Any]:
    """One run folder's line of the listing."""
    from connote.tasks.invariance import invariance_brief

    _, results = read_results(folder)
    task = str(results.get("task"))
    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    model = results.get("model") or (results.get("model_fingerprint") or {}).get("backend")
    data = results.get("data") or next((str(config[k]) for k in ("data", "manifest", "sequences", "videos")
                                        if config.get(k)), None)
    if isinstance(data, dict):
        data = data.get("path") or json.dumps(data, default=str)[:80]
    headline = {k: v for k, v in results.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                and not k.startswith(NOT_HEADLINE) and not k.endswith("_this_run")}
    changed = changed_since(results)
    state = "stale" if changed else "partial" if results.get("n_failed") else "complete"
    return {"folder": str(folder), "task": task, "task_version": results.get("task_version"), "model": model,
            "data": data, "signature": results.get("fingerprint"),
            "batch_invariance": invariance_brief(results.get("batch_invariance")) or None, "headline": headline,
            "date": results.get("created"), "state": state, "changed": changed}


def runs(
    folders: list[Path] = typer.Argument(None, help="Run folders or roots to search (default: ./runs)."),
    json_out: bool = typer.Option(False, "--json", help="Print the listing as JSON (connote report reads it)."),
) -> None:
    """List run folders: task, model, data, settings signature, headline numbers, date, state."""
    from connote.core.errors import InputError

    roots = folders or [Path("runs")]
    for root in roots:
        if not root.is_dir():
            raise InputError("no such folder (expected run folders or a root holding them)", path=root)
    listing = [describe(f) for f in run_folders(roots)]
    if json_out:
        print(json.dumps(listing, indent=2, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("Folder", "Task", "Model", "Data", "Signature", "Headline", "Date", "State")
    for r in listing:
        head = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in r["headline"].items())
        table.add_row(r["folder"], f"{r['task']} v{r['task_version']}", str(r["model"]), str(r["data"]),
                      "\n".join(filter(None, [str(r["signature"]), r["batch_invariance"]])), head, str(r["date"]),
                      r["state"] + (f" ({', '.join(r['changed'])} changed)" if r["changed"] else ""))
    Console().print(table)
    print(f"{len(listing)} run folder(s)")


def register(app: typer.Typer) -> None:
    """Add the ``runs`` command to the connote CLI."""
    app.command("runs")(runs)


def _listing(path: Path) -> list | None:
    """The entries of a ``.json`` file that holds a JSON list; None for anything else (a result file such as a
    study's ``reliability.json`` is a JSON object, and goes to the report's own readers as given)."""
    if path.suffix != ".json" or not path.is_file():
        return None
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return entries if isinstance(entries, list) else None


def expand_run_paths(paths: list[Path]) -> list[Path]:
    """What ``connote report`` was given, as result paths: a listing of ``connote runs --json`` (a .json file
    holding a list of entries with ``folder``) becomes its folders, a glob pattern its matches; anything else
    stays as given."""
    import glob

    from connote.core.errors import InputError

    out: list[Path] = []
    for path in paths:
        entries = _listing(path)
        if entries is not None:  # a JSON list: the output of connote runs --json
            if not all(isinstance(e, dict) and "folder" in e for e in entries):
                raise InputError("expected the output of connote runs --json (a list of entries with 'folder')",
                                 path=path)
            out.extend(Path(e["folder"]) for e in entries)
        elif not path.exists() and glob.has_magic(str(path)):
            matches = sorted(glob.glob(str(path)))
            if not matches:
                raise InputError("the pattern matches no file or folder", path=path)
            out.extend(Path(m) for m in matches)
        else:
            out.append(path)
    return out
