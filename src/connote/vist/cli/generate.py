"""``connote vist generate``, ``demo`` and ``backends``: stories for photo sequences with any generator."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.commands.output import echo_json as _echo_json
from connote.core.jsonio import read_jsonl
from connote.vist.cli import _exit, story_app

# --------------------------------------------------------------------------- vist generate


@story_app.command("generate")
def generate_cmd(
    sequences: Annotated[Path | None, typer.Argument(
        help="Photo sequences: challenge template/submission or SIS file. Default: the sample set built from "
             "packaged photos (written to OUT/sample).", show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumable).")] = Path("runs/story"),
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Generator spec, e.g. retrieval?train=TRAIN.json, hf-vlm:DIR, caption-llm:CAP?llm=LLM, "
        "openai:gpt-4o, seq2seq:DIR?features=F.npz&decode=greedy-dups. Default: the offline retrieval baseline "
        "(on the sample set: over its training stories, as `vist demo`).", show_default=False)] = None,
    images: Annotated[Path | None, typer.Option("--images", help="Folder of photos named <photo id>.<ext>.")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N sequences.")] = None,
    team_name: Annotated[str, typer.Option("--team-name")] = "connote",
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[str | None, track_option()] = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Write a story for every photo sequence: submission.json (challenge format) + stories.jsonl."""
    from connote.commands.tracking import run_registered

    checks.at_least("--limit", limit, 1)
    checks.at_least("--batch-size", batch_size, 1)
    checks.folder("--out", out)
    _exit(run_registered("vist-storytelling", model=model, out=out, data=sequences, seed=None, progress=progress,
                         track=track, as_json=as_json, check_invariance=check_invariance, data_flag="SEQUENCES",
                         options={"images": images, "batch_size": batch_size, "limit": limit,
                                  "team_name": team_name}))


@story_app.command("demo")
def demo_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder.")] = Path("runs/story-demo"),
    model: Annotated[str | None, typer.Option("--model", "-m", help="Generator spec (default: the offline "
                                              "retrieval baseline over the sample's training stories).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
    track: Annotated[str | None, track_option()] = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Offline end to end on a tiny sample from packaged photos: write data, generate, score (album protocol)."""
    import contextlib

    from connote.commands.tracking import run_registered
    from connote.vist.sample import sample_paths
    from connote.vist.task import StorytellingTask

    checks.folder("--out", out)
    # `vist generate` without data (the one run path: the folder locked, the sample and its retrieval generator);
    # its summary goes to stderr with the notices, so that stdout holds the scores
    with contextlib.redirect_stdout(sys.stderr):
        status = run_registered("vist-storytelling", model=model, out=out, seed=None, progress=sys.stderr.isatty(),
                                track=track, data_flag="data given")
    result, stored, _ = StorytellingTask.score(out, sample_paths(out / "sample")["test"], protocol="album")
    print(f"scores stored in {stored} (connote report {out})", file=sys.stderr)
    if as_json:
        _echo_json(result.to_dict())
    else:
        typer.echo(f"sample data: {out / 'sample'}; stories: {out / 'stories.jsonl'}")
        for _, row in read_jsonl(out / "stories.jsonl", what="stories"):
            typer.echo(f"  {row.get('album_id')}: {row.get('story') or row.get('story_text_normalized') or ''}")
        typer.echo("album protocol scores (BLEU-1..4, METEOR, ROUGE-L, CIDEr-D; 0-1 scale):")
        for name, value in result.scores.items():
            typer.echo(f"  {name:10s} {value:.4f}")
    if status:  # a story that failed (recorded in stories.jsonl; a rerun tries it again)
        _exit(status)


@story_app.command("backends")
def backends_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the model backends that can write stories (capability ``generate``, from photos or photo ids)."""
    from connote.models.registry import MODELS, backends_with
    from connote.vist.task import StorytellingTask

    rows = [{"name": name, "help": MODELS.describe(name)}
            for name in backends_with(StorytellingTask.capability, StorytellingTask.inputs)]
    if as_json:
        _echo_json(rows)
        return
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size((80, 24)).columns)
    for row in rows:  # the description wrapped under itself, so the list stays readable at 80 columns
        typer.echo(textwrap.fill(row["help"], width, initial_indent=f"{row['name']:14s} ",
                                 subsequent_indent=" " * 15, break_on_hyphens=False, break_long_words=False))
