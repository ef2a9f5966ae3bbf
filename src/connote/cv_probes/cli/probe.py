"""``connote cv-probes run`` (``connote report`` lives in :mod:`connote.cli.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.core.errors import InputError


def probe(
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Probe manifest (CSV or JSONL). "
                                        "Default: the sample set built from packaged photos."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model spec backend[:weights][?k=v]; "
                                        "default: the embedded offline 'objects' baseline."),
    out: Path = typer.Option(Path("runs/probe"), "--out", "-o", help="Run folder (resumes if it exists)."),
    captions: str = typer.Option("original", "--captions", help="original | simplified (Table 4)."),
    allow_network: bool = typer.Option(False, "--allow-network", help="Fetch http(s) images."),
    pairs_per_chunk: Optional[int] = typer.Option(None, "--chunk", help="Pairs per stored batch; default: 256 on "
                                                  "a CPU, 4096 on a GPU (a kill loses at most one)."),
    seed: int = typer.Option(0, "--seed"),
    json_out: bool = typer.Option(False, "--json", help="Print results.json instead of the table."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> int:
    """Evaluate an image-text matching model on contextual verb probes (Tables 3-5)."""
    from connote.commands.tracking import run_registered

    if captions not in ("original", "simplified"):
        raise InputError(f"--captions must be 'original' or 'simplified', got {captions!r}")
    return run_registered("cv-probes", model=model, out=out, data=data, seed=seed, progress=progress,
                          track=track, as_json=json_out, check_invariance=check_invariance,
                          options={"captions": captions, "pairs_per_chunk": pairs_per_chunk,
                                   "allow_network": allow_network})


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
