"""``connote suite run|explain``: the field's probe suites (SVO-Probes, VALSE, Winoground, SugarCrepe/ARO)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.commands.tracking import log_run, require_tracker
from connote.core.errors import InputError

SUITE_HELP = "svo-probes | valse | winoground | sugarcrepe"


@contextlib.contextmanager
def _held(suite: str, data: Optional[Path], model: str, out: Path) -> Iterator[Path]:
    """Check the spec, then lock the run folder for the whole command (as ``cv-probes run`` does: a second run
    into it is refused before anything is written or loaded) and yield the data: ``--data``, or the suite's
    sample written into the folder (by rank 0 of a launched job)."""
    from connote.models.registry import check_spec
    from connote.runs.launch import hold_run, main_rank_first
    from connote.suites import target

    write_sample = target(suite, 2)  # an unknown suite is refused before the folder is made
    check_spec(model)
    with hold_run(out) as dist:
        if data is None:
            data = main_rank_first(dist, lambda: write_sample(out / "sample"),
                                   notice=lambda d: f"no --data: using the {suite} sample written to {d}")
        yield data


def run(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="The suite's released file or folder. "
                                        "Default: a sample in its layout built from packaged photos."),
    images: Optional[Path] = typer.Option(None, "--images", help="Folder of the suite's images (default: as "
                                          "the release lays them out beside the data)."),
    model: str = typer.Option("objects", "--model", "-m", help="Model spec backend[:weights][?k=v]; default: the "
                              "embedded offline 'objects' baseline."),
    out: Path = typer.Option(Path("runs/suite"), "--out", "-o", help="Run folder (resumes if it exists)."),
    allow_network: bool = typer.Option(False, "--allow-network", help="Fetch http(s) images."),
    seed: int = typer.Option(0, "--seed"),
    json_out: bool = typer.Option(False, "--json", help="Print results.json instead of the table."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> None:
    """Score a matching model on a probe suite with the suite's own published metrics."""
    from connote.suites import target

    cls = target(suite, 0)
    require_tracker(track)
    with _held(suite, data, model, out) as data:
        task = cls(data, images=images, allow_network=allow_network, progress=progress)
        results = _run(task, model, out, seed, json_out, check_invariance, track)
    if not results:
        return
    print(f"run folder: {out} (results.json, items.jsonl, results.md)")
    if results["n_errors"]:
        print(f"{results['n_errors']} item(s) errored and were excluded; see items.jsonl", file=sys.stderr)


def _run(task: Any, model: str, out: Path, seed: int, json_out: bool, check_invariance: int = 0,
         track: str | None = None) -> dict | None:
    """Check the spec, load the model and run the task; print results.json (``--json``, then None) or the
    results table. None also off rank 0 of a distributed run."""
    import json

    from connote.media.embedded import quiet_transformers
    from connote.tasks.api import run_task

    quiet_transformers()
    results = run_task(task, model, out, seed=seed, extra_results={"model": model},
                       check_invariance=check_invariance).results
    if not results:
        return None
    log_run(out, track)
    if json_out:
        print(json.dumps(results, indent=2, default=str))
        return None
    print((out / "results.md").read_text(encoding="utf-8"))
    return results


def explain(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="The suite's released file or folder. "
                                        "Default: a sample in its layout built from packaged photos."),
    images: Optional[Path] = typer.Option(None, "--images", help="Folder of the suite's images."),
    model: str = typer.Option("objects", "--model", "-m", help="Model spec; default: the 'objects' baseline."),
    out: Path = typer.Option(Path("runs/suite-explain"), "--out", "-o", help="Run folder (resumes)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Max model calls per pair."),
    estimator: Optional[str] = typer.Option(None, "--estimator", help="As connote cv-probes explain (default: the "
                                            "--compat mode's estimator)."),
    compat: str = typer.Option("mmshap", "--compat", help="mmshap (default) | connote; see docs/explain.md"),
    sample: Optional[int] = typer.Option(None, "--sample", help="Explain a seeded random sample of N pairs."),
    seed: int = typer.Option(0, "--seed"),
    grid: Optional[int] = typer.Option(None, "--grid", help="Patch grid p (default ceil(sqrt(#text features)))."),
    allow_network: bool = typer.Option(False, "--allow-network"),
    json_out: bool = typer.Option(False, "--json", help="Print results.json instead of the table."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> None:
    """MM-SHAP on a probe suite's pairs, crediting the word the suite changed (verb, swapped or foiled word)."""
    from connote.explain.shapley import ESTIMATORS
    from connote.suites import target

    if estimator is not None and estimator not in ESTIMATORS:
        raise InputError(f"unknown estimator {estimator!r}; valid: {', '.join(ESTIMATORS.names())}")
    for name, value in (("--grid", grid), ("--budget", budget), ("--sample", sample)):
        if value is not None and value < 1:
            raise InputError(f"{name} must be a positive integer, got {value}")
    cls = target(suite, 1)
    with _held(suite, data, model, out) as data:
        task = cls(data, images=images, estimator=estimator, budget=budget, sample=sample, seed=seed, grid=grid,
                   compat=compat, allow_network=allow_network, progress=progress)
        results = _run(task, model, out, seed, json_out)
    if not results:
        return
    print(f"{results['n_pairs']} pairs, {results['calls_total']} model calls, {results['n_errors']} errors; "
          f"run folder: {out}")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The field's probe suites: SVO-Probes, VALSE, Winoground, SugarCrepe/ARO.",
                        no_args_is_help=True)
    group.command("run")(run)
    group.command("explain")(explain)
    app.add_typer(group, name="suite")
