"""``connote vist info`` and ``vist validate``: what a VIST file holds, and whether a submission is complete."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import _exit, vist_app

# --------------------------------------------------------------------------- vist info


@vist_app.command("info")
def info_cmd(
    path: Annotated[Path, typer.Argument(help="An official VIST file (SIS/DII/DIS) or a challenge-format file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    show: Annotated[int, typer.Option(help="List at most this many problems.")] = 10,
) -> None:
    """Summarise a VIST file: albums, photos, stories, sequences and problems found."""
    from connote.vist.challenge import parse_submission
    from connote.vist.data import load_json, read_official

    obj, problems = load_json(path)
    if isinstance(obj, dict) and "output_stories" in obj:
        sub = parse_submission(obj, path)
        probs = problems + sub.problems
        seqs = sub.by_sequence()
        summary = {"path": str(path), "format": "challenge", "team_name": sub.team_name,
                   "stories": len(sub.entries), "photo_sequences": len(seqs),
                   "albums": len({e.album_id for e in sub.entries}),
                   "empty_stories": sum(1 for e in sub.entries if not e.text.strip()),
                   "sequences_with_several_stories": sum(1 for v in seqs.values() if len(v) > 1)}
    else:
        vf = read_official(path)
        probs = vf.problems
        lengths: dict[int, int] = {}
        for s in vf.stories:
            lengths[s.n_storylets] = lengths.get(s.n_storylets, 0) + 1
        summary = {"path": str(path), "format": "official", "tier": vf.tier, "albums": len(vf.albums),
                   "images": len(vf.images), "stories": len(vf.stories),
                   "photo_sequences": len(vf.sequences()),
                   "described_photos": len(vf.descriptions),
                   "pairs": len(vf.pairs()), "storylets_per_story": dict(sorted(lengths.items()))}
    summary["n_problems"] = len(probs)
    summary["problems"] = [str(p) for p in probs[:show]]
    if as_json:
        _echo_json(summary)
    else:
        for k, v in summary.items():
            if k != "problems":
                typer.echo(f"{k}: {v}")
        for p in summary["problems"]:
            typer.echo(f"  problem: {p}")


# --------------------------------------------------------------------------- vist validate


@vist_app.command("validate")
def validate_cmd(
    submission: Annotated[Path, typer.Argument(help="Challenge submission JSON.")],
    template: Annotated[Path | None, typer.Option("--template", "-t", help="The challenge template JSON.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    show: Annotated[int, typer.Option(help="List at most this many items per kind.")] = 20,
) -> None:
    """Check a submission: JSON syntax (exit 2), missing/extra/duplicate sequences (exit 1), valid (0)."""
    from connote.vist.validate import validate_submission

    report = validate_submission(submission, template)
    if as_json:
        _echo_json(report.to_dict())
    elif report.malformed:  # bad input: the one "error:" line every command gives it (exit 2)
        from connote.core.errors import InputError

        m = report.malformed
        raise InputError(f"malformed JSON: {m['message']}", path=submission, line=m["line"], column=m["column"])
    else:
        stream = sys.stderr if report.malformed else sys.stdout
        for line in report.lines(limit=show):
            print(line, file=stream)
    _exit(report.exit_status)
