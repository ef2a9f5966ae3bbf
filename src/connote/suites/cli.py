"""``connote suite run|explain``: the field's probe suites (SVO-Probes, VALSE, Winoground, SugarCrepe/ARO)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, check_mmshap_flags, track_option

SUITE_HELP = "svo-probes | valse | winoground | sugarcrepe"


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
) -> int:
    """Score a matching model on a probe suite with the suite's own published metrics."""
    from connote.commands.tracking import run_registered
    from connote.suites import target

    return run_registered(target(suite, 0), model=model, out=out, data=data, seed=seed, progress=progress,
                          track=track, as_json=json_out, check_invariance=check_invariance,
                          options={"images": images, "allow_network": allow_network})


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
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> int:
    """MM-SHAP on a probe suite's pairs, crediting the word the suite changed (verb, swapped or foiled word)."""
    from connote.commands.tracking import run_registered
    from connote.suites import target

    check_mmshap_flags(grid=grid, budget=budget, sample=sample)
    return run_registered(target(suite, 1), model=model, out=out, data=data, seed=seed, progress=progress,
                          track=track, as_json=json_out, options={
                              "images": images, "estimator": estimator, "budget": budget, "sample": sample,
                              "grid": grid, "compat": compat, "allow_network": allow_network})


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The field's probe suites: SVO-Probes, VALSE, Winoground, SugarCrepe/ARO.",
                        no_args_is_help=True)
    group.command("run")(run)
    group.command("explain")(explain)
    app.add_typer(group, name="suite")
