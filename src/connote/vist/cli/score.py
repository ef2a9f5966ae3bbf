"""``connote vist score``: a submission or a ``vist generate`` run folder under the challenge or album protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands.config import config_option
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import _exit, vist_app


@vist_app.command("score")
def score_cmd(
    submission: Annotated[Path, typer.Argument(help="Challenge-format submission (or generation JSONL), or a "
                                                "`vist generate` run folder (its submission.json).")],
    gold: Annotated[Path, typer.Option("--refs", help="References: the official SIS file or challenge-format "
                                                      "gold.")],
    protocol: Annotated[str, typer.Option("--protocol", "-p", help="challenge | album")] = "challenge",
    template: Annotated[Path | None, typer.Option("--template", "-t", help="Sequences to average over.")] = None,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Score missing sequences 0.")] = False,
    compare_to: Annotated[Path | None,
                          typer.Option("--compare", help="A second submission: paired bootstrap test.")] = None,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: no intervals).")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    per_item_out: Annotated[Path | None, typer.Option("--per-item", help="Write per-item scores (JSON) here.")] = None,
    tokenize: Annotated[str | None, typer.Option(help="album protocol: 'ptb' to PTB-tokenize first "
                                                 "(default: text used as already tokenized).")] = None,
    meteor: Annotated[str | None, typer.Option("--meteor", help="album protocol's METEOR: arel (default; the jar "
                                               "run as AREL's vist_eval runs it, -t hter) | coco (-l en -norm).")]
    = None,
    ci_method: Annotated[str, typer.Option("--ci-method", help="Bootstrap interval: percentile | BCa | basic.")]
    = "percentile",
    save: Annotated[bool | None, typer.Option("--save/--no-save", help="Store the scores (with per-sequence "
                                              "scores) in the run folder's scores/<protocol>-<key>.json "
                                              "(default: when SUBMISSION is a run folder; --save with a "
                                              "file stores beside it).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Score a submission under the ``challenge`` or ``album`` protocol (scores on a 0-1 scale).

    A run folder's scores are stored in it, keyed by the protocol, the gold's and template's sha256 and
    the settings, so scoring against other gold adds a file and never replaces the first (``connote
    report RUN...`` reads them). Exit status: 0 every template sequence scored; 1 some are missing or failed
    (the score covers fewer sequences than the template); 2 bad input (no gold stories, several stories
    for one sequence, ...).
    """
    from connote.vist.scoring import check_settings, print_closing, print_scores, score_submissions

    meteor = check_settings(protocol, n_boot, ci_method, meteor)
    scored = score_submissions(submission, gold, protocol=protocol, meteor=meteor, template=template,
                               allow_missing=allow_missing, compare_to=compare_to, n_boot=n_boot, seed=seed,
                               per_item_out=per_item_out, tokenize=tokenize, ci_method=ci_method, save=save)
    if as_json:
        _echo_json(scored.out)
    else:
        print_scores(scored, protocol, meteor)
    _exit(print_closing(scored, protocol))
