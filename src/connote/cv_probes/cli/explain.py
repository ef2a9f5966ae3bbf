"""``connote cv-probes explain``: MM-SHAP modality and verb attributions with a cap on model calls."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import check_mmshap_flags, track_option


def explain(
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Probe manifest (CSV or JSONL). Default: the "
                                        "sample set built from packaged photos."),
    model: str = typer.Option("objects", "--model", "-m", help="Model spec, e.g. "
                              "hf-blip-itm:Salesforce/blip-itm-base-coco; default: the embedded offline 'objects' "
                              "baseline."),
    out: Path = typer.Option(Path("runs/explain"), "--out", "-o", help="Run folder (resumes)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Max model calls per pair."),
    estimator: Optional[str] = typer.Option(
        None, "--estimator",
        help="permutation (10 antithetic permutations, as the public MM-SHAP code; default under --compat mmshap) | "
             "adaptive (antithetic Latin-square permutations until T-SHAP is within 0.01, at most 20; default "
             "under --compat connote) | "
             "stratified | kernel (paired KernelSHAP) | exact"),
    compat: str = typer.Option(
        "mmshap", "--compat",
        help="mmshap (default: features, patch grid and masked id as the public MM-SHAP code) | connote "
             "(maskable tokens only, the tokenizer's mask token, a grid that tiles the image); see docs/explain.md"),
    sample: Optional[int] = typer.Option(None, "--sample", help="Explain a seeded random sample of N pairs."),
    seed: int = typer.Option(0, "--seed"),
    captions: str = typer.Option("simplified", "--captions", help="simplified (as the paper) | original"),
    grid: Optional[int] = typer.Option(None, "--grid", help="Patch grid p (default ceil(sqrt(#text features)))."),
    figures: int = typer.Option(5, "--figures", help="Save heat-map figures for the first N pairs."),
    allow_network: bool = typer.Option(False, "--allow-network"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    json_out: bool = typer.Option(False, "--json", help="Print results.json instead of the table."),
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> int:
    """Explain image-text matching decisions with MM-SHAP (Table 6)."""
    from connote.commands.tracking import run_registered

    check_mmshap_flags(grid=grid, budget=budget, sample=sample)
    return run_registered("cv-probes-mmshap", model=model, out=out, data=data, seed=seed, progress=progress,
                          track=track, as_json=json_out, options={
                              "captions": captions, "estimator": estimator, "budget": budget, "sample": sample,
                              "grid": grid, "allow_network": allow_network, "compat": compat, "figures": figures})


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
