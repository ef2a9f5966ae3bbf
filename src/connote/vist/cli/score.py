"""``connote vist score``: a submission or a ``vist generate`` run folder under the challenge or album protocol."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import _exit, vist_app

# --------------------------------------------------------------------------- vist score


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
    from connote.core.errors import InputError
    from connote.vist import protocols
    from connote.vist.challenge import read_gold, read_submission
    from connote.vist.protocols import CI_METHODS, PROTOCOLS, compare, require_unique_sequences, score

    if protocol not in PROTOCOLS:
        raise InputError(f"unknown protocol {protocol!r}; valid protocols: {', '.join(PROTOCOLS)}")
    checks.at_least("--n-boot", n_boot, 0)
    if ci_method not in CI_METHODS:
        raise InputError(f"unknown --ci-method {ci_method!r}; valid: {', '.join(CI_METHODS)}")
    if meteor is not None and protocol != "album":
        raise InputError("--meteor applies to the album protocol (the challenge's METEOR is the jar's -t hter)")
    meteor = meteor or protocols.DEFAULT_ALBUM_METEOR
    if meteor not in protocols.ALBUM_METEOR:
        raise InputError(f"unknown --meteor {meteor!r}; valid: {', '.join(protocols.ALBUM_METEOR)}")
    submission, run_a = _submission_file(submission)
    save = run_a is not None if save is None else save
    sub = read_submission(submission)
    if protocol == "challenge":  # one story per sequence is scored; the album protocol takes an album's first
        _require_sequences(sub)
        require_unique_sequences(sub)
    g = read_gold(gold)
    if g.problems:  # the gold's own problems are said, never left for the submission to be blamed for
        first = g.problems[0]
        print(f"note: {gold}: {len(g.problems)} problem(s) in the gold (first: {first.item}: {first.message}); "
              f"connote vist info {gold} lists them", file=sys.stderr)
    tpl = read_submission(template) if template else None
    other_sub = None
    run_b = None
    if compare_to is not None:
        compare_to, run_b = _submission_file(compare_to)
        other_sub = read_submission(compare_to)
        if protocol == "challenge":
            _require_sequences(other_sub)
            require_unique_sequences(other_sub)
    kwargs: dict[str, Any] = {"meteor": meteor} if protocol == "album" else {}
    if tokenize:
        if protocol != "album":
            raise InputError("--tokenize applies to the album protocol (the challenge scores text as given)")
        kwargs["corpus_scorer"] = protocols.default_corpus_scorer(tokenize=tokenize, meteor=meteor)
    res = score(protocol, sub, g, template=tpl, allow_missing=allow_missing, n_boot=n_boot, seed=seed,
                ci_method=ci_method, **kwargs)
    if res.n_covered <= 0:  # a mean over nothing is not METEOR 0
        raise InputError(f"no story was scored ({res.n_items} {'albums' if protocol == 'album' else 'sequences'}"
                         f": {len(res.missing)} missing, {len(res.errors)} failed, {len(res.no_gold)} without "
                         "gold); check that the submission's photo sequences are the gold's", path=submission)
    out = res.to_dict()
    out["submission"] = str(submission)
    out["gold"] = str(gold)
    if other_sub is not None:
        other = score(protocol, other_sub, g, template=tpl, allow_missing=allow_missing,
                      n_boot=n_boot, seed=seed, ci_method=ci_method, **kwargs)
        out["compare"] = {"submission_b": str(compare_to), "scores_b": other.scores,
                          "paired_bootstrap": compare(res, other, n_boot=max(n_boot, 1), seed=seed,
                                                      ci_method=ci_method)}
    if per_item_out is not None:
        from connote.runs import write_json

        write_json(per_item_out, res.per_item)
    stored = []
    if save:
        stored.append(_store(run_a or submission.parent, res, submission, gold, template, tokenize))
        if other_sub is not None and compare_to is not None:
            stored.append(_store(run_b or compare_to.parent, other, compare_to, gold, template, tokenize))
        out["stored"] = [str(p) for p in stored]
    if as_json:
        _echo_json(out)
    else:
        meteor_s = f" (METEOR {meteor}: {protocols.ALBUM_METEOR[meteor]['jar']})" if protocol == "album" else ""
        typer.echo(f"protocol: {protocol}{meteor_s}  scored {res.n_scored}/{res.n_items} "
                   f"(missing {len(res.missing)}, errors {len(res.errors)}, empty {res.n_empty})")
        for m, v in res.scores.items():
            ci = res.ci.get(m)
            ci_s = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
            mean = res.item_means.get(m)
            if ci and mean is not None and abs(mean - v) > 1e-12:
                ci_s = f"  (per-{'album' if protocol == 'album' else 'item'} mean {mean:.4f}{ci_s})"
            typer.echo(f"  {m:8s} {v:.4f}{ci_s}")
        if "compare" in out:
            for m, t in out["compare"]["paired_bootstrap"].items():
                typer.echo(f"  B-A {m}: {t['delta']:+.4f} p={t['p_value']:.4g}")
        if res.missing:
            typer.echo(f"missing ({len(res.missing)}): " + ", ".join(res.missing[:10])
                       + (" ..." if len(res.missing) > 10 else ""))
        if res.errors:
            typer.echo(f"failed ({len(res.errors)}): " + ", ".join(f"{k}: {v}" for k, v in list(res.errors.items())[:5])
                       + (" ..." if len(res.errors) > 5 else ""))
    for p in stored:
        print(f"scores stored in {p}", file=sys.stderr)
    if not res.complete:
        unit = "albums" if protocol == "album" else "sequences"
        print(f"the score covers {res.n_covered} of {res.n_items} {unit} ({len(res.missing)} missing, "
              f"{len(res.errors)} failed); --allow-missing scores them 0", file=sys.stderr)
    _exit(0 if res.complete else 1)




def _require_sequences(sub: Any) -> None:
    """Refuse, for the challenge protocol, a file without photo sequences (AREL's album predictions)."""
    from connote.core.errors import InputError

    if sub.format == "arel":
        raise InputError("an AREL prediction file holds one story per album and no photo sequence; score it "
                         "with --protocol album", path=sub.path)


def _submission_file(path: Path) -> tuple[Path, Path | None]:
    """(the submission file, the run folder or None): a folder is a ``vist generate`` run folder."""
    from connote.core.errors import InputError

    if path.is_dir():
        sub = path / "submission.json"
        if not sub.is_file():
            raise InputError("a folder given as the submission must be a `connote vist generate` run folder "
                             "(no submission.json in it)", path=path)
        return sub, path
    return path, None


def _store(run: Path, res: Any, submission: Path, gold: Path, template: Path | None, tokenize: str | None) -> Path:
    """Store scores in a run folder (keyed by protocol, gold, template and settings); say what was replaced."""
    from connote.vist.protocols import store_scores

    path, note = store_scores(run, res, submission=submission, gold=gold, template=template, tokenize=tokenize)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return path
