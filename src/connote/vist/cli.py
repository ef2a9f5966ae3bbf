"""``connote vist ...``: data, validation, scoring, analysis, and the story generators (train, generate; also
under their older group ``connote story``).

Heavy dependencies (torch, transformers, spaCy) are imported inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.commands.output import echo_columns as _echo_columns
from connote.commands.output import echo_json as _echo_json

vist_app = typer.Typer(help="Visual storytelling (VIST): read, validate, score and analyse.",
                       no_args_is_help=True)
story_app = typer.Typer(help="Visual storytelling models: train the seq2seq baseline, generate stories.",
                        no_args_is_help=True)


VIST_HELP = ("Visual storytelling (VIST): read, validate, score, analyse; train and run story generators.")


def register(app: typer.Typer) -> None:
    """Add ``vist`` (every VIST command) and ``story`` (the older group of the model commands) to the app."""
    merged = typer.Typer(help=VIST_HELP, no_args_is_help=True)
    merged.registered_commands = [*vist_app.registered_commands, *story_app.registered_commands]
    app.add_typer(merged, name="vist")
    app.add_typer(story_app, name="story")


def _exit(code: int) -> None:
    raise typer.Exit(code)


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


# --------------------------------------------------------------------------- vist stats


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


def _tier_texts(path: Path) -> tuple[str, list[str]]:
    from connote.vist.challenge import parse_submission
    from connote.vist.data import load_json, read_official

    obj, _ = load_json(path)
    if isinstance(obj, dict) and "output_stories" in obj:
        name = path.name.removesuffix(".json")
        return name, [e.text for e in parse_submission(obj, path).entries if e.text.strip()]
    vf = read_official(path)
    return vf.tier.upper(), vf.texts()


@vist_app.command("stats")
def stats_cmd(
    files: Annotated[list[Path], typer.Argument(help="Official VIST files (one per tier) or challenge files.")],
    lm: Annotated[str | None, typer.Option("--lm", help="Causal LM (hub id or local dir) for perplexity.")] = None,
    lexicon: Annotated[Path | None, typer.Option(help="Concreteness lexicon CSV/TSV (word, rating); default: the "
                                                 "suffix/list proxy (see the legend under the table).")] = None,
    threshold: Annotated[float, typer.Option(help="Lexicon rating below which a noun is abstract.")] = 3.0,
    parse: Annotated[bool, typer.Option("--parse/--no-parse",
                                        help="Parse with spaCy (abstract, Frazier, Yngve).")] = True,
    spacy_model: Annotated[str | None, typer.Option("--spacy", help="spaCy pipeline name.")] = None,
    max_parse: Annotated[int, typer.Option(help="Parse at most this many texts per tier (seeded sample).")] = 2000,
    min_count: Annotated[int, typer.Option(help="Exclude words seen fewer times (vocabulary, NPMI).")] = 2,
    top: Annotated[int, typer.Option(help="Top words per tier for Table 3.")] = 10,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Table 2 (pairs, vocabulary, tokens, % abstract, Frazier, Yngve, perplexity) and Table 3 (NPMI)."""
    from connote.core.errors import InputError
    from connote.core.progress import progress_bar
    from connote.vist.stats import load_lexicon, load_spacy, npmi_top_words, table2_legend, tier_stats, tier_work

    seen: set[Path] = set()
    for f in files:
        if f.resolve() in seen:
            raise InputError("the same file is given twice", path=f)
        seen.add(f.resolve())
    read = [(f, *_tier_texts(f)) for f in files]
    names = [name for _, name, _ in read]
    tiers: dict[str, list[str]] = {}
    for f, name, texts in read:  # two files of one tier are labelled by their files (SIS:train), not SIS and SIS'
        label = f"{name}:{f.name.split('.')[0]}" if names.count(name) > 1 else name
        tiers[label if label not in tiers else f"{name}:{f.name}"] = texts
    nlp = load_spacy(spacy_model) if parse else None
    lex = load_lexicon(lexicon) if lexicon else None
    work = sum(tier_work(texts, parse=parse, lm=lm is not None, max_parse=max_parse) for texts in tiers.values())
    label = " + ".join(x for x, on in (("parsing", parse), ("perplexity", lm is not None)) if on)
    with progress_bar(work, f"{label} {len(tiers)} tier(s)", enabled=progress and work > 0) as bar:
        rows = [tier_stats(name, texts, nlp=nlp, lm=lm, lexicon=lex, lexicon_name=lexicon.name if lexicon else "",
                           threshold=threshold, min_count=min_count, max_parse=max_parse, seed=seed,
                           bar=bar).to_dict()
                for name, texts in tiers.items()]
    table3 = npmi_top_words(tiers, k=top, min_count=min_count) if len(tiers) > 1 else {}
    if as_json:
        _echo_json({"table2": rows, "table3": {t: [[w, s] for w, s in ws] for t, ws in table3.items()}})
        return
    cols = ["tier", "pairs", "vocab", "avg_tokens", "pct_abstract", "frazier", "yngve", "perplexity"]
    _echo_columns(cols, [["-" if r[c] is None else (f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]))
                          for c in cols] for r in rows])
    import textwrap

    typer.echo("\n".join(textwrap.wrap(table2_legend(rows, min_count=min_count), 78)))
    if table3:
        typer.echo(f"Table 3, the top {top} words of each tier by normalized PMI:")
    for t, ws in table3.items():
        typer.echo(f"{t}: " + " ".join(w for w, _ in ws))


# --------------------------------------------------------------------------- vist correlate


@vist_app.command("correlate")
def correlate_cmd(
    ratings: Annotated[Path, typer.Argument(help="Human ratings CSV: story id, rating, rater.")],
    scores: Annotated[Path | None, typer.Option("--scores", "-s", help="Per-story metric scores (JSON or CSV).")]
    = None,
    stories: Annotated[Path | None, typer.Option("--stories", help="Official SIS file: score each rated story "
                                                  "against the other stories of its photo sequence.")] = None,
    metrics: Annotated[str, typer.Option(help="Measures for --stories: the paper's meteor, smoothed_bleu "
                                         "(Lin & Och 2004), embedding (MiniLM cosine, the stand-in for "
                                         "Skip-Thoughts); also bleu, rouge_l, cider.")]
    = "meteor,smoothed_bleu,embedding",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: no intervals).")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    ci_method: Annotated[str, typer.Option("--ci-method", help="Bootstrap interval: percentile | BCa | basic.")]
    = "percentile",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    story_metrics: Annotated[str, typer.Option("--story-metrics", help="Reference-free metrics for --stories: "
                                               "groovist, rovist_vg (both need --images), rovist_c, rovist_nr.")]
    = "",
    images: Annotated[Path | None, typer.Option("--images", help="Photos of the stories (GROOViST, judges).")]
    = None,
    encoder: Annotated[str, typer.Option("--encoder", help="GROOViST's image-text encoder: embedded or a "
                                         "dual-encoder spec (hf-clip:openai/clip-vit-base-patch32).")]
    = "embedded",
    coherence_model: Annotated[str | None, typer.Option("--coherence-model", help="RoViST-C: its released "
                                                        "checkpoint (sop_model_epoch4.pth.tar) or weights with a "
                                                        "sentence-order head (else the MiniLM stand-in).")] = None,
    coherence_albert: Annotated[str, typer.Option("--coherence-albert", help="The ALBERT of a RoViST-C "
                                                  "checkpoint (config, tokenizer).")] = "albert-large-v1",
    concreteness: Annotated[Path | None, typer.Option("--concreteness", help="GROOViST: concreteness ratings "
                                                      "(Word;Conc.M); without: every weight 1.")] = None,
    vg_encoder: Annotated[str | None, typer.Option("--vg-encoder", help="RoViST-VG's encoder: its released model, "
                                                   "rovist-vg:r2p_model_epoch2.pth.tar?glove=glove.6B.300d.txt "
                                                   "(default: --encoder, a stand-in).")] = None,
    idf: Annotated[Path | None, typer.Option("--idf", help="RoViST-VG: IDF weights as JSON {noun: idf} (its "
                                             "idf_dict.pkl's content); without: every weight 1.")] = None,
    theta: Annotated[float, typer.Option("--theta", help="GROOViST's penalty threshold (its VIST value).")]
    = 0.6159241924121119,
    alignment: Annotated[str, typer.Option("--alignment", help="GROOViST: sequence (any photo, the paper) or "
                                           "sentence (sentence i with photo i).")] = "sequence",
    coherence_prefix: Annotated[str, typer.Option("--coherence-prefix", help="RoViST-C: previous (RoViST) or "
                                                  "accumulated (dHM).")] = "previous",
    judge: Annotated[list[str] | None, typer.Option("--judge", help="A generation backend as judge (repeatable), "
                                                    "e.g. openai:gpt-4o.")] = None,
    rubric: Annotated[str, typer.Option("--rubric", help="Judge rubrics: share (1-5) or, for pairwise "
                                        "preferences, pairwise.")] = "",
    judge_out: Annotated[Path, typer.Option("--judge-out", help="Run folder caching the judge calls.")]
    = Path("judges"),
    temperature: Annotated[float, typer.Option("--temperature", help="Judge sampling temperature.")] = 0.0,
    judge_seed: Annotated[int | None, typer.Option("--judge-seed", help="Judge sampling seed.")] = None,
    paired: Annotated[bool, typer.Option("--paired/--no-paired", help="Paired tests between metrics.")] = False,
    save: Annotated[Path | None, typer.Option("--out", "-o", help="Also write OUT/correlation.json (for "
                                              "connote report).")] = None,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Pearson, Spearman and Kendall (p-values, bootstrap intervals) of each metric with the mean human rating.

    Exit status 1 when a judge judged nothing (every call failed or no answer could be read): its row is missing."""
    from connote.commands.measures import unjudged_exit
    from connote.core.errors import InputError
    from connote.metrics.correlation import (
        correlate,
        pairwise_agreement,
        pairwise_dataset,
        ratings_kind,
        read_metric_scores,
        read_preferences,
        read_ratings,
    )
    from connote.vist.correlate import leave_one_out_scores
    from connote.vist.protocols import CI_METHODS

    if (scores is None) == (stories is None):
        raise InputError("give exactly one of --scores (precomputed) and --stories (an SIS file)")
    checks.at_least("--n-boot", n_boot, 0)
    if ci_method not in CI_METHODS:
        raise InputError(f"unknown --ci-method {ci_method!r}; valid: {', '.join(CI_METHODS)}")
    kind = ratings_kind(ratings)
    prefs = None
    if kind == "vmc-labels":
        raise InputError("these are VMC evaluation labels: use connote vmc correlate", path=ratings)
    if kind == "pairwise":
        prefs = read_preferences(ratings)
        human = {s: [0.0] for _, a, b, _ in prefs for s in (a, b)}
    else:
        human = read_ratings(ratings)
    if not human:
        raise InputError("no ratings in this file", path=ratings)
    if scores is not None:
        auto = read_metric_scores(scores)
        source = scores
    else:
        from connote.vist.data import read_official

        vf = read_official(stories)
        known = {"bleu", "meteor", "rouge_l", "cider", "smoothed_bleu", "embedding"}
        wanted = tuple(m.strip() for m in metrics.split(",") if m.strip() and m.strip() != "none")
        unknown = [m for m in wanted if m not in known]
        if unknown or not (wanted or story_metrics or judge):
            raise InputError(f"--metrics: unknown {', '.join(unknown) or '(none given)'}; "
                             f"valid: {', '.join(sorted(known))}")
        from connote.core.progress import progress_bar

        with progress_bar(len(wanted), "scoring rated stories", enabled=progress) as bar:
            auto = leave_one_out_scores({s.id: (s.photo_ids, s.text) for s in vf.stories}, metrics=wanted,
                                        only=set(human), bar=bar) if wanted else {}
        source = stories
    signatures: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    if story_metrics or judge:
        from connote.commands import measures
        from connote.vist.measures import story_metric_scores

        if stories is None:
            raise InputError("--story-metrics and --judge need the stories' text: --stories SIS.json")
        rated = {s.id: (s.photo_ids, s.text) for s in vf.stories if s.id in human}
        if story_metrics:
            per, sigs = story_metric_scores(
                rated, story_metrics, images=images, encoder=encoder, coherence_model=coherence_model,
                coherence_albert=coherence_albert, vg_encoder=vg_encoder, idf=idf,
                concreteness=concreteness, theta=theta, alignment=alignment, prefix=coherence_prefix,
                progress=progress)
            signatures.update(sigs)
            for sid, row in per.items():
                auto.setdefault(sid, {}).update(row)
        if judge:
            from connote.tasks.judge import JudgeInput

            if prefs is not None:
                pairs = {pid: (a, b) for pid, a, b, _ in prefs if a in rated and b in rated}
                items = [JudgeInput(pid, rated[a][1], rated[b][1], tuple(rated[a][0])) for pid, (a, b) in pairs.items()]
            else:
                items = [JudgeInput(sid, text, None, tuple(photos)) for sid, (photos, text) in rated.items()]
            per, sigs, unjudged = measures.judge_scores(
                judge, items, rubric or ("pairwise" if prefs is not None else "share"),
                ("story-pair",) if prefs is not None else ("story",), out=judge_out, image_dir=images,
                temperature=temperature, seed=judge_seed, progress=progress)
            signatures.update(sigs)
            for sid, row in per.items():
                auto.setdefault(sid, {}).update(row)
    agreement = None
    if prefs is not None:
        human, auto = pairwise_dataset(prefs, auto)
        agreement = pairwise_agreement(human, auto)
    if not set(human) & {i for i, row in auto.items() if row}:
        if unjudged:  # the judges were all there was to correlate, or all that could have been
            from connote.core.errors import ConnoteError

            raise ConnoteError("nothing to correlate: nothing was judged (" + "; ".join(
                f"{spec}: {why}" for spec, why in unjudged.items()) + ")")
        rated_in_sis = [s.id for s in vf.stories if s.id in human] if stories is not None else []
        if rated_in_sis:
            what = (f"{len(rated_in_sis)} rated stories are in the file, but none has another story on its "
                    "photo sequence to be scored against")
        else:
            ids = sorted(s.id for s in vf.stories) if stories is not None else sorted(auto)
            what = (f"no story id is in both: {ratings.name} rates {len(human)} (e.g. "
                    f"{', '.join(sorted(human)[:3])}), this file has {len(ids)} (e.g. {', '.join(ids[:3]) or 'none'})")
        raise InputError(f"nothing to correlate: {what}", path=source)
    from connote.core.progress import progress_bar

    n_metrics = len({m for row in auto.values() for m in row})
    with progress_bar(3 * n_metrics, f"bootstrap ({n_boot} resamples)", enabled=progress and n_boot > 0) as bar:
        res = correlate(human, auto, n_boot=n_boot, seed=seed, ci_method=ci_method, bar=bar)
    tests = None
    if paired:
        from connote.metrics.correlation import paired_tests

        tests = paired_tests(human, auto, n_boot=n_boot, seed=seed)
    if save is not None:
        from connote.commands.measures import save_correlation

        written = save_correlation(save, ratings=ratings, kind=kind, scores=auto, signatures=signatures,
                                   criteria={"rating" if prefs is None else "preference": {
                                       "correlations": res, "paired": tests, "pairwise_agreement": agreement}},
                                   settings={"n_boot": n_boot, "seed": seed, "ci_method": ci_method})
        typer.echo(f"wrote {written}", err=True)
    if as_json:
        extra = {k: v for k, v in (("paired", tests), ("pairwise_agreement", agreement),
                                   ("signatures", signatures)) if v}
        _echo_json({"correlations": res, **extra, **({"unjudged": unjudged} if unjudged else {})}
                   if extra or unjudged else res)
        _exit(unjudged_exit(unjudged))
    coefficients = ("pearson", "spearman", "kendall")
    _echo_columns(["metric", "n", *(f"{c} (p)" for c in coefficients)],
                  [[m, str(r["n"]), *(f"{r[c]:.3f} ({r[c + '_p']:.3g})" for c in coefficients)]
                   for m, r in res.items()])
    if n_boot > 0:
        typer.echo(f"{1 - 0.05:.0%} bootstrap intervals ({ci_method}, {n_boot} resamples of stories):")
        _echo_columns(["metric", *coefficients],
                      [[m, *(f"[{r[c + '_ci'][0]:.3f}, {r[c + '_ci'][1]:.3f}]" for c in coefficients)]
                       for m, r in res.items()])
    for m, r in res.items():
        if r.get("note"):
            typer.echo(f"{m}: {r['note']}")
    if agreement:
        typer.echo("pairwise preferences: agreement with the majority of people (ties 1/2) and tau over pairs")
        _echo_columns(["metric", "pairs", "accuracy", "tau"],
                      [[m, str(a["n_pairs"]), f"{a['accuracy']:.3f}", f"{a['tau']:.3f}"] for m, a in agreement.items()])
    if tests:
        from connote.commands.measures import echo_paired

        echo_paired(tests, _echo_columns)
    if signatures:
        from connote.commands.measures import echo_signatures

        echo_signatures(signatures)
    _exit(unjudged_exit(unjudged))


# --------------------------------------------------------------------------- vist train


# the options `vist train` and `vist train-captioner` share
_Features = Annotated[Path, typer.Option("--features", help=".npz: photo id -> image feature vector.")]
_Steps = Annotated[int, typer.Option(help="Optimisation steps.")]
_BatchSize = Annotated[int, typer.Option("--batch-size", help="Examples per step.")]
_Lr = Annotated[float, typer.Option(help="Learning rate.")]
_EmbedDim = Annotated[int, typer.Option("--embed-dim", help="Word embedding size.")]
_HiddenDim = Annotated[int, typer.Option("--hidden-dim", help="GRU hidden size.")]
_MinCount = Annotated[int, typer.Option("--min-count", help="Vocabulary: words seen at least this often.")]
_Seed = Annotated[int, typer.Option(help="Random seed (initialisation and batch order).")]
_LogEvery = Annotated[int, typer.Option("--log-every", help="Record the loss every N steps.")]


def _training_options(steps: int, batch_size: int, lr: float, out: Path) -> None:
    checks.at_least("--steps", steps, 1)
    checks.at_least("--batch-size", batch_size, 1)
    checks.positive_number("--lr", lr)
    checks.folder("--out", out)


@story_app.command("train")
def train_cmd(
    sis: Annotated[Path, typer.Option("--sis", help="Official story-in-sequence training file.")],
    features: _Features,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the trained model.")],
    steps: _Steps = 1000,
    batch_size: _BatchSize = 32,
    lr: _Lr = 1e-3,
    embed_dim: _EmbedDim = 256,
    hidden_dim: _HiddenDim = 512,
    min_count: _MinCount = 1,
    seed: _Seed = 0,
    log_every: _LogEvery = 100,
    encoder_order: Annotated[str, typer.Option("--encoder-order", help="How the encoder reads the photos: reverse "
                                               "(the paper's baseline) or forward.")] = "reverse",
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Train the paper's seq2seq baseline (GRU over photo features, read in reverse -> GRU story decoder) on SIS."""
    from connote.core.errors import InputError, ItemError
    from connote.runs import run_metadata, write_json
    from connote.vist import TASK_VERSION
    from connote.vist.data import read_official
    from connote.vist.seq2seq import ENCODER_ORDERS, load_features, sequence_features, train

    if encoder_order not in ENCODER_ORDERS:
        raise InputError(f"unknown --encoder-order {encoder_order!r}; valid: {', '.join(ENCODER_ORDERS)}")
    _training_options(steps, batch_size, lr, out)
    vf = read_official(sis)
    if vf.tier != "sis":
        raise InputError(f"training needs a story-in-sequence file, this is {vf.tier}", path=sis)
    feats = load_features(features)
    examples, skipped = [], {}
    for s in vf.stories:
        try:
            examples.append((sequence_features(s.photo_ids, feats), s.text))
        except ItemError as exc:
            skipped[s.id] = str(exc)
    if not examples:
        raise InputError(f"no story has features for all its photos ({len(skipped)} skipped)", path=features)
    from connote.core.progress import progress_bar

    with progress_bar(steps, "training", enabled=progress) as bar:
        model, losses = train(examples, steps=steps, batch_size=batch_size, lr=lr, embed_dim=embed_dim,
                              hidden_dim=hidden_dim, min_count=min_count, seed=seed, log_every=log_every,
                              encoder_order=encoder_order, bar=bar)
    model.save(out)
    config = {"sis": str(sis), "features": str(features), "steps": steps, "batch_size": batch_size, "lr": lr,
              "embed_dim": embed_dim, "hidden_dim": hidden_dim, "min_count": min_count,
              "encoder_order": encoder_order, "task_version": TASK_VERSION}
    write_json(out / "train.json", {**run_metadata(config, seed=seed), "n_examples": len(examples),
                                    "n_skipped": len(skipped), "skipped": skipped,
                                    "final_loss": losses[-1], "losses": losses})
    typer.echo(f"trained on {len(examples)} stories ({len(skipped)} skipped); final loss {losses[-1]:.4f}; "
               f"saved to {out}")


@story_app.command("train-captioner")
def train_captioner_cmd(
    dii: Annotated[Path, typer.Option("--dii", help="Official description-in-isolation training file.")],
    features: _Features,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the trained captioner.")],
    steps: _Steps = 1000,
    batch_size: _BatchSize = 32,
    lr: _Lr = 1e-3,
    embed_dim: _EmbedDim = 256,
    hidden_dim: _HiddenDim = 512,
    min_count: _MinCount = 1,
    seed: _Seed = 0,
    log_every: _LogEvery = 100,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Train the captioner baseline of +Grounded on DII (one photo's features -> its description)."""
    from connote.core.errors import InputError
    from connote.runs import run_metadata, write_json
    from connote.vist.data import read_official
    from connote.vist.grounding import train_captioner
    from connote.vist.seq2seq import load_features

    _training_options(steps, batch_size, lr, out)
    vf = read_official(dii)
    if vf.tier != "dii":
        raise InputError(f"the captioner trains on a description-in-isolation file, this is {vf.tier}", path=dii)
    from connote.core.progress import progress_bar

    with progress_bar(steps, "training", enabled=progress) as bar:
        model, losses, skipped = train_captioner(vf, load_features(features), steps=steps, batch_size=batch_size,
                                                 lr=lr, embed_dim=embed_dim, hidden_dim=hidden_dim,
                                                 min_count=min_count, seed=seed, log_every=log_every, max_len=30,
                                                 bar=bar)
    model.save(out)
    config = {"task": "captioner", "dii": str(dii), "features": str(features), "steps": steps,
              "batch_size": batch_size, "lr": lr, "embed_dim": embed_dim, "hidden_dim": hidden_dim,
              "min_count": min_count}
    write_json(out / "train.json", {**run_metadata(config, seed=seed), "n_skipped_photos": len(skipped),
                                    "skipped": skipped, "final_loss": losses[-1], "losses": losses})
    typer.echo(f"captioner trained ({len(skipped)} photos without features skipped); final loss {losses[-1]:.4f}; "
               f"saved to {out}")


@story_app.command("features")
def features_cmd(
    source: Annotated[Path, typer.Argument(help="Official VIST file (its images/stories) or a challenge file.")],
    images: Annotated[Path, typer.Option("--images", help="Folder of photos named <photo id>.<ext>.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output .npz (photo id -> vector).")],
    batch_size: Annotated[int, typer.Option("--batch-size")] = 32,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Image features for ``vist train``/``seq2seq``, from the embedded image encoder (offline)."""
    import numpy as np

    from connote.core.errors import InputError
    from connote.media.embedded import EmbeddedEncoder
    from connote.vist.challenge import parse_submission
    from connote.vist.data import load_json, read_official
    from connote.vist.seq2seq import extract_features

    if not images.is_dir():  # bad input (exit 2) before anything is read, not every photo "missing" (exit 1)
        raise InputError("--images: photo folder not found", path=images)
    checks.at_least("--batch-size", batch_size, 1)
    obj, _ = load_json(source)
    if isinstance(obj, dict) and "output_stories" in obj:
        ids = [p for e in parse_submission(obj, source).entries for p in e.photo_sequence]
    else:
        vf = read_official(source)
        ids = list(vf.images) or [p for s in vf.stories for p in s.photo_ids]
    from connote.core.progress import progress_bar

    encoder = EmbeddedEncoder()
    with progress_bar(len(dict.fromkeys(ids)), "embedding photos", enabled=progress) as bar:
        feats, errors = extract_features(ids, images, encoder, batch_size=batch_size, bar=bar)
    np.savez(out, **feats)
    typer.echo(f"{len(feats)} photos embedded, {len(errors)} missing or unreadable -> {out}")
    for pid, err in list(errors.items())[:20]:
        typer.echo(f"  {pid}: {err}")
    _exit(1 if errors else 0)


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
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Offline end to end on a tiny sample from packaged photos: write data, generate, score (album protocol)."""
    from connote.tasks.api import run_task
    from connote.vist.sample import sample_retrieval_spec, write_sample_vist
    from connote.vist.task import GenerationSummary, StorytellingTask, load_sequences

    checks.folder("--out", out)
    paths = write_sample_vist(out / "sample")
    spec = model or sample_retrieval_spec(paths)  # the same generator as `vist generate` without data
    print(f"sample VIST set written to {out / 'sample'}; model {spec}", file=sys.stderr)
    task = StorytellingTask(load_sequences(paths["template"]), image_dir=paths["images"],
                            meta={"sequences": str(paths["template"])}, progress=sys.stderr.isatty())
    summary = GenerationSummary(**task.summary(run_task(task, spec, out)))
    result, stored, _ = StorytellingTask.score(out, paths["test"], protocol="album")
    print(f"scores stored in {stored} (connote report {out})", file=sys.stderr)
    if as_json:
        _echo_json(result.to_dict())
        return
    typer.echo(f"sample data: {out / 'sample'}; stories: {summary.stories_path}")
    for line in Path(summary.stories_path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        typer.echo(f"  {row.get('album_id')}: {row.get('story') or row.get('story_text_normalized') or ''}")
    typer.echo("album protocol scores (BLEU-1..4, METEOR, ROUGE-L, CIDEr-D; 0-1 scale):")
    for name, value in result.scores.items():
        typer.echo(f"  {name:10s} {value:.4f}")


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


# --------------------------------------------------------------------------- dataset construction


@vist_app.command("filter")
def filter_cmd(
    path: Annotated[Path, typer.Argument(help="Official VIST file with images and albums.")],
    min_photos: Annotated[int, typer.Option("--min-photos")] = 10,
    max_photos: Annotated[int, typer.Option("--max-photos")] = 50,
    max_hours: Annotated[float, typer.Option("--max-hours", help="All photos taken within this span.")] = 48.0,
    require_cc: Annotated[bool, typer.Option("--cc/--any-license", help="Require Creative Commons.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Apply the paper's album filters (10-50 photos, 48 hours, CC licence) and report rejections."""
    from connote.vist.construct import filter_albums
    from connote.vist.data import read_official

    vf = read_official(path)
    kept, rejected = filter_albums(vf.albums, vf.images, min_photos=min_photos, max_photos=max_photos,
                                   max_span_hours=max_hours, require_cc=require_cc)
    if as_json:
        _echo_json({"kept": kept, "rejected": rejected, "n_kept": len(kept), "n_rejected": len(rejected)})
        return
    typer.echo(f"{len(kept)} albums kept, {len(rejected)} rejected")
    for aid, reasons in list(rejected.items())[:50]:
        typer.echo(f"  {aid}: {'; '.join(reasons)}")


@vist_app.command("split")
def split_cmd(
    files: Annotated[list[Path], typer.Argument(help="Official files; albums come from the first (SIS).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for <split>.<file name>.")],
    seed: Annotated[int, typer.Option()] = 0,
    ratios: Annotated[str, typer.Option(help="train,val,test shares.")] = "0.8,0.1,0.1",
    json_out: Annotated[bool, typer.Option("--json", help="Print the albums per split as one JSON object.")] = False,
) -> None:
    """Split official files 80/10/10 by album (seeded); every file is cut along the same albums."""
    import math

    from connote.core.errors import InputError
    from connote.runs import write_json
    from connote.vist.construct import split_albums
    from connote.vist.data import load_json, read_official

    try:
        shares = [float(x) for x in ratios.split(",")]
    except ValueError:
        raise InputError(f"--ratios must be three numbers, got {ratios!r}") from None
    if len(shares) != 3 or not all(math.isfinite(x) and x >= 0 for x in shares) or sum(shares) <= 0:
        raise InputError(f"--ratios must be three shares >= 0 (not all 0), got {ratios!r}")
    checks.folder("--out", out)
    first = read_official(files[0])
    album_ids = set(first.albums) | {s.album_id for s in first.stories}
    parts = split_albums(album_ids, ratios=shares, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        obj, _ = load_json(f)
        for name, ids in parts.items():
            keep = set(ids)
            sub = dict(obj)
            sub["images"] = [i for i in obj.get("images") or [] if str(i.get("album_id")) in keep]
            sub["albums"] = [a for a in obj.get("albums") or [] if str(a.get("id")) in keep]
            sub["annotations"] = [a for a in obj.get("annotations") or []
                                  if str((a[0] if isinstance(a, list) and a else a).get("album_id")) in keep]
            write_json(out / f"{name}.{f.name}", sub)
    if json_out:
        import json

        typer.echo(json.dumps({"out": str(out), "albums": {k: len(v) for k, v in parts.items()}}))
        return
    typer.echo(", ".join(f"{k}: {len(v)} albums" for k, v in parts.items()) + f" -> {out}")


@vist_app.command("anonymize")
def anonymize_cmd(
    path: Annotated[Path, typer.Argument(help="Text file, one text per line.")],
    names: Annotated[list[Path], typer.Option("--names", help="Names list(s): name,sex,count (SSA format).")],
    min_count: Annotated[int, typer.Option("--min-count", help="Keep names seen at least this often.")] = 10_000,
    ner: Annotated[bool, typer.Option("--ner/--no-ner", help="Replace spaCy named entities by their type.")] = True,
    spacy_model: Annotated[str | None, typer.Option("--spacy", help="spaCy pipeline name.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Replace people's names by [male]/[female] and named entities by their type, line by line."""
    from connote.vist.construct import NameList, anonymize
    from connote.vist.data import read_text
    from connote.vist.stats import load_spacy

    name_list = NameList.read(names, min_count=min_count)
    nlp = load_spacy(spacy_model) if ner else None
    text, problems = read_text(path)
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    lines = [anonymize(line, name_list, nlp=nlp) for line in text.splitlines()]
    if out is not None:
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        for line in lines:
            typer.echo(line)
