"""``connote vist correlate``: automatic measures (metrics, reference-free metrics, judges) against human ratings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.output import echo_columns as _echo_columns
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import _exit, vist_app

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
