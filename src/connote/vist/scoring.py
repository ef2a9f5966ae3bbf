"""``connote vist score``'s work: a submission (or a ``vist generate`` run folder's) scored under the challenge or
album protocol, optionally against a second submission (paired bootstrap), stored in its run folder, and printed.

:func:`check_settings` refuses bad settings before anything is read; :func:`score_submissions` reads and scores
(exit 2 on bad input, naming the file); :func:`print_scores` and :func:`print_closing` print what the command shows.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.commands import checks
from connote.core.errors import InputError
from connote.vist import protocols


def check_settings(protocol: str, n_boot: int, ci_method: str, meteor: str | None) -> str:
    """The album protocol's METEOR variant (``meteor`` or the default) after checking every setting (exit 2)."""
    if protocol not in protocols.PROTOCOLS:
        raise InputError(f"unknown protocol {protocol!r}; valid protocols: {', '.join(protocols.PROTOCOLS)}")
    checks.at_least("--n-boot", n_boot, 0)
    if ci_method not in protocols.CI_METHODS:
        raise InputError(f"unknown --ci-method {ci_method!r}; valid: {', '.join(protocols.CI_METHODS)}")
    if meteor is not None and protocol != "album":
        raise InputError("--meteor applies to the album protocol (the challenge's METEOR is the jar's -t hter)")
    meteor = meteor or protocols.DEFAULT_ALBUM_METEOR
    if meteor not in protocols.ALBUM_METEOR:
        raise InputError(f"unknown --meteor {meteor!r}; valid: {', '.join(protocols.ALBUM_METEOR)}")
    return meteor


def require_sequences(sub: Any) -> None:
    """Refuse, for the challenge protocol, a file without photo sequences (AREL's album predictions)."""
    if sub.format == "arel":
        raise InputError("an AREL prediction file holds one story per album and no photo sequence; score it "
                         "with --protocol album", path=sub.path)


def submission_file(path: Path) -> tuple[Path, Path | None]:
    """(the submission file, the run folder or None): a folder is a ``vist generate`` run folder."""
    if path.is_dir():
        sub = path / "submission.json"
        if not sub.is_file():
            raise InputError("a folder given as the submission must be a `connote vist generate` run folder "
                             "(no submission.json in it)", path=path)
        return sub, path
    return path, None


def _read(path: Path, protocol: str) -> tuple[Path, Path | None, Any]:
    """(submission file, run folder or None, the submission read), checked for the challenge protocol."""
    from connote.vist.challenge import read_submission

    path, run = submission_file(path)
    sub = read_submission(path)
    if protocol == "challenge":  # one story per sequence is scored; the album protocol takes an album's first
        require_sequences(sub)
        protocols.require_unique_sequences(sub)
    return path, run, sub


def _store(run: Path, res: Any, submission: Path, gold: Path, template: Path | None, tokenize: str | None) -> Path:
    """Store scores in a run folder (keyed by protocol, gold, template and settings); say what was replaced."""
    path, note = protocols.store_scores(run, res, submission=submission, gold=gold, template=template,
                                        tokenize=tokenize)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return path


@dataclass
class Scored:
    """What ``vist score`` computed: the first submission's result, the JSON it prints, the stored files."""

    result: Any
    out: dict[str, Any]
    stored: list[Path] = field(default_factory=list)


def score_submissions(submission: Path, gold: Path, *, protocol: str, meteor: str, template: Path | None = None,
                      allow_missing: bool = False, compare_to: Path | None = None, n_boot: int = 1000,
                      seed: int = 0, per_item_out: Path | None = None, tokenize: str | None = None,
                      ci_method: str = "percentile", save: bool | None = None) -> Scored:
    """Score ``submission`` (and ``compare_to``, with the paired bootstrap test) against ``gold``; store the scores
    in the run folder when ``save`` (default: when ``submission`` is a run folder; a file's beside it)."""
    from connote.vist.challenge import read_gold, read_submission

    submission, run_a, sub = _read(submission, protocol)
    save = run_a is not None if save is None else save
    g = read_gold(gold)
    if g.problems:  # the gold's own problems are said, never left for the submission to be blamed for
        first = g.problems[0]
        print(f"note: {gold}: {len(g.problems)} problem(s) in the gold (first: {first.item}: {first.message}); "
              f"connote vist info {gold} lists them", file=sys.stderr)
    tpl = read_submission(template) if template else None
    other_sub = run_b = None
    if compare_to is not None:
        compare_to, run_b, other_sub = _read(compare_to, protocol)
    kwargs: dict[str, Any] = {"meteor": meteor} if protocol == "album" else {}
    if tokenize:
        if protocol != "album":
            raise InputError("--tokenize applies to the album protocol (the challenge scores text as given)")
        kwargs["corpus_scorer"] = protocols.default_corpus_scorer(tokenize=tokenize, meteor=meteor)
    settings = {"template": tpl, "allow_missing": allow_missing, "n_boot": n_boot, "seed": seed,
                "ci_method": ci_method, **kwargs}
    res = protocols.score(protocol, sub, g, **settings)
    if res.n_covered <= 0:  # a mean over nothing is not METEOR 0
        raise InputError(f"no story was scored ({res.n_items} {'albums' if protocol == 'album' else 'sequences'}"
                         f": {len(res.missing)} missing, {len(res.errors)} failed, {len(res.no_gold)} without "
                         "gold); check that the submission's photo sequences are the gold's", path=submission)
    out = res.to_dict()
    out["submission"] = str(submission)
    out["gold"] = str(gold)
    other = None
    if other_sub is not None:
        other = protocols.score(protocol, other_sub, g, **settings)
        out["compare"] = {"submission_b": str(compare_to), "scores_b": other.scores,
                          "paired_bootstrap": protocols.compare(res, other, n_boot=max(n_boot, 1), seed=seed,
                                                                ci_method=ci_method)}
    if per_item_out is not None:
        from connote.runs import write_json

        write_json(per_item_out, res.per_item)
    scored = Scored(res, out)
    if save:
        scored.stored.append(_store(run_a or submission.parent, res, submission, gold, template, tokenize))
        if other is not None and compare_to is not None:
            scored.stored.append(_store(run_b or compare_to.parent, other, compare_to, gold, template, tokenize))
        out["stored"] = [str(p) for p in scored.stored]
    return scored


def print_scores(scored: Scored, protocol: str, meteor: str) -> None:
    """The scores as ``vist score`` prints them without ``--json``: one line per metric with its interval, the
    paired test, the missing and failed sequences."""
    res, out = scored.result, scored.out
    meteor_s = f" (METEOR {meteor}: {protocols.ALBUM_METEOR[meteor]['jar']})" if protocol == "album" else ""
    print(f"protocol: {protocol}{meteor_s}  scored {res.n_scored}/{res.n_items} "
          f"(missing {len(res.missing)}, errors {len(res.errors)}, empty {res.n_empty})")
    for m, v in res.scores.items():
        ci = res.ci.get(m)
        ci_s = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
        mean = res.item_means.get(m)
        if ci and mean is not None and abs(mean - v) > 1e-12:
            ci_s = f"  (per-{'album' if protocol == 'album' else 'item'} mean {mean:.4f}{ci_s})"
        print(f"  {m:8s} {v:.4f}{ci_s}")
    if "compare" in out:
        for m, t in out["compare"]["paired_bootstrap"].items():
            print(f"  B-A {m}: {t['delta']:+.4f} p={t['p_value']:.4g}")
    if res.missing:
        print(f"missing ({len(res.missing)}): " + ", ".join(res.missing[:10])
              + (" ..." if len(res.missing) > 10 else ""))
    if res.errors:
        print(f"failed ({len(res.errors)}): " + ", ".join(f"{k}: {v}" for k, v in list(res.errors.items())[:5])
              + (" ..." if len(res.errors) > 5 else ""))


def print_closing(scored: Scored, protocol: str) -> int:
    """Where the scores were stored and, when sequences are missing or failed, how much the score covers (stderr);
    returns the exit status: 0 every sequence scored, 1 some missing or failed."""
    res = scored.result
    for p in scored.stored:
        print(f"scores stored in {p}", file=sys.stderr)
    if not res.complete:
        unit = "albums" if protocol == "album" else "sequences"
        print(f"the score covers {res.n_covered} of {res.n_items} {unit} ({len(res.missing)} missing, "
              f"{len(res.errors)} failed); --allow-missing scores them 0", file=sys.stderr)
    return 0 if res.complete else 1
