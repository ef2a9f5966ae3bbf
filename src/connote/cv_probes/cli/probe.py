"""``connote cv-probes run`` (``connote report`` lives in :mod:`connote.cli.report`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.commands.tracking import log_run, require_tracker
from connote.core.errors import InputError


def probe(
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Probe manifest (CSV or JSONL). "
                                        "Default: the sample set built from packaged photos."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model spec backend[:weights][?k=v]; "
                                        "default: the embedded offline 'objects' baseline."),
    out: Path = typer.Option(Path("runs/probe"), "--out", "-o", help="Run folder (resumes if it exists)."),
    captions: str = typer.Option("original", "--captions", help="original | simplified (Table 4)."),
    allow_network: bool = typer.Option(False, "--allow-network", help="Fetch http(s) images."),
    pairs_per_chunk: int = typer.Option(256, "--chunk", help="Pairs per stored batch."),
    seed: int = typer.Option(0, "--seed"),
    json_out: bool = typer.Option(False, "--json", help="Print results.json instead of the table."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> None:
    """Evaluate an image-text matching model on contextual verb probes (Tables 3-5)."""
    import json

    from connote.cv_probes.task import ProbeTask
    from connote.models.registry import check_spec
    from connote.runs.launch import hold_run, main_rank_first

    if captions not in ("original", "simplified"):
        raise InputError(f"--captions must be 'original' or 'simplified', got {captions!r}")
    require_tracker(track)
    if data is None:  # a bad spec stops before the sample is written (a manifest given is checked first)
        check_spec(model or "objects")
    with hold_run(out) as dist:  # refused at once if another run writes there (every rank of a launched job)
        if data is None:
            from connote.media.sample import write_sample_probes

            data = main_rank_first(dist, lambda: write_sample_probes(out / "sample"),  # rank 0 writes, says
                                   notice=lambda d: f"no --data: using the sample probe set written to {d}",
                                   first=None if (out / "sample").is_dir() else "writing the sample probe set…")
        from connote.tasks.api import run_task

        task = ProbeTask(data, captions=captions, pairs_per_chunk=pairs_per_chunk, allow_network=allow_network,
                         progress=progress)
        results = run_task(task, model or "objects", out, seed=seed, check_invariance=check_invariance,
                           extra_results=task.extra_results(model or "objects")).results
        if results:
            log_run(out, track)
    if not results:  # non-zero ranks of a distributed run
        return
    if json_out:
        print(json.dumps(results, indent=2, default=str))
    else:
        print((out / "results.md").read_text(encoding="utf-8"))
        print(f"run folder: {out} (results.json, items.jsonl, results.md)")
        if results["n_errors"]:
            print(f"{results['n_errors']} item(s) errored and were excluded; see items.jsonl", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
