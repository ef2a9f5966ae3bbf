"""``connote cv-probes explain``: MM-SHAP modality and verb attributions with a cap on model calls."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import track_option
from connote.commands.tracking import log_run, require_tracker
from connote.core.errors import InputError


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
) -> None:
    """Explain image-text matching decisions with MM-SHAP (Table 6)."""
    from connote.cv_probes.explain import ExplainTask
    from connote.explain.shapley import ESTIMATORS
    from connote.models.masking import check_compat

    if estimator is not None and estimator not in ESTIMATORS:
        raise InputError(f"unknown estimator {estimator!r}; valid: {', '.join(ESTIMATORS.names())}")
    check_compat(compat)
    for name, value in (("--grid", grid), ("--budget", budget), ("--sample", sample)):
        if value is not None and value < 1:
            raise InputError(f"{name} must be a positive integer, got {value}")
    from connote.models.registry import check_spec
    from connote.runs.launch import hold_run, main_rank_first

    require_tracker(track)
    if data is None:  # a bad spec stops before the sample is written (a manifest given is checked first)
        check_spec(model)
    with hold_run(out) as dist:  # refused at once if another run writes there (every rank of a launched job)
        if data is None:
            from connote.media.sample import write_sample_probes

            data = main_rank_first(dist, lambda: write_sample_probes(out / "sample"),  # rank 0 writes, says
                                   notice=lambda d: f"no --data: using the sample probe set written to {d}",
                                   first=None if (out / "sample").is_dir() else "writing the sample probe set…")
        from connote.tasks.api import run_task

        task = ExplainTask(data, captions=captions, estimator=estimator, budget=budget, sample=sample, seed=seed,
                           grid=grid, allow_network=allow_network, progress=progress, compat=compat, figures=figures)
        results = run_task(task, model, out, seed=seed, extra_results={"model": model}).results
        if results:
            log_run(out, track)
    if not results:  # non-zero ranks of a distributed run
        return
    if json_out:
        import json

        print(json.dumps(results, indent=2, default=str))
        return
    print((out / "results.md").read_text(encoding="utf-8"))
    print(f"{results['n_pairs']} pairs, {results['calls_total']} model calls, {results['n_errors']} errors, "
          f"{results['n_no_verb']} without a verb, {results['n_verb_not_found']} whose manifest verb is not in "
          f"the caption (in the T-SHAP means, not the verb means); run folder: {out}")


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
