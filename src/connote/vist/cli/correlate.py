"""``connote vist correlate``: automatic measures (metrics, reference-free metrics, judges) against human ratings
(the work: :func:`connote.vist.correlate.correlate_ratings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands.config import config_option
from connote.commands.measures import BootSeed, JudgeOut, JudgeSeed, JudgeTemperature, NBoot, Paired, SaveTo
from connote.commands.options import track_option
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import _exit, vist_app

# the options of the reference-free story metrics (GROOViST, RoViST)
_StoryMetrics = Annotated[str, typer.Option("--story-metrics", help="Reference-free metrics for --stories: "
                                            "groovist, rovist_vg (both need --images), rovist_c, rovist_nr.")]
_Images = Annotated[Path | None, typer.Option("--images", help="Photos of the stories (GROOViST, judges).")]
_Encoder = Annotated[str, typer.Option("--encoder", help="GROOViST's image-text encoder: embedded or a "
                                       "dual-encoder spec (hf-clip:openai/clip-vit-base-patch32).")]
_CoherenceModel = Annotated[str | None, typer.Option("--coherence-model", help="RoViST-C: its released "
                                                     "checkpoint (sop_model_epoch4.pth.tar) or weights with a "
                                                     "sentence-order head (else the MiniLM stand-in).")]
_CoherenceAlbert = Annotated[str, typer.Option("--coherence-albert", help="The ALBERT of a RoViST-C "
                                               "checkpoint (config, tokenizer).")]
_Concreteness = Annotated[Path | None, typer.Option("--concreteness", help="GROOViST: concreteness ratings "
                                                    "(Word;Conc.M); without: every weight 1.")]
_VgEncoder = Annotated[str | None, typer.Option("--vg-encoder", help="RoViST-VG's encoder: its released model, "
                                                "rovist-vg:r2p_model_epoch2.pth.tar?glove=glove.6B.300d.txt "
                                                "(default: --encoder, a stand-in).")]
_Idf = Annotated[Path | None, typer.Option("--idf", help="RoViST-VG: IDF weights as JSON {noun: idf} (its "
                                           "idf_dict.pkl's content); without: every weight 1.")]
_Theta = Annotated[float, typer.Option("--theta", help="GROOViST's penalty threshold (its VIST value).")]
_Alignment = Annotated[str, typer.Option("--alignment", help="GROOViST: sequence (any photo, the paper) or "
                                         "sentence (sentence i with photo i).")]
_CoherencePrefix = Annotated[str, typer.Option("--coherence-prefix", help="RoViST-C: previous (RoViST) or "
                                               "accumulated (dHM).")]


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
    n_boot: NBoot = 1000,
    seed: BootSeed = 0,
    ci_method: Annotated[str, typer.Option("--ci-method", help="Bootstrap interval: percentile | BCa | basic.")]
    = "percentile",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    story_metrics: _StoryMetrics = "",
    images: _Images = None,
    encoder: _Encoder = "embedded",
    coherence_model: _CoherenceModel = None,
    coherence_albert: _CoherenceAlbert = "albert-large-v1",
    concreteness: _Concreteness = None,
    vg_encoder: _VgEncoder = None,
    idf: _Idf = None,
    theta: _Theta = 0.6159241924121119,
    alignment: _Alignment = "sequence",
    coherence_prefix: _CoherencePrefix = "previous",
    judge: Annotated[list[str] | None, typer.Option("--judge", help="A generation backend as judge (repeatable), "
                                                    "e.g. openai:gpt-4o.")] = None,
    rubric: Annotated[str, typer.Option("--rubric", help="Judge rubrics: share (1-5) or, for pairwise "
                                        "preferences, pairwise.")] = "",
    judge_out: JudgeOut = Path("judges"),
    temperature: JudgeTemperature = 0.0,
    judge_seed: JudgeSeed = None,
    paired: Paired = False,
    save: SaveTo = None,
    track: Annotated[str | None, track_option()] = None,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Pearson, Spearman and Kendall (p-values, bootstrap intervals) of each metric with the mean human rating.

    Exit status 1 when a judge judged nothing (every call failed or no answer could be read): its row is missing."""
    from connote.commands.measures import unjudged_exit
    from connote.vist.correlate import correlate_ratings, print_correlation

    measures = {"images": images, "encoder": encoder, "coherence_model": coherence_model, "theta": theta,
                "coherence_albert": coherence_albert, "vg_encoder": vg_encoder, "idf": idf, "alignment": alignment,
                "concreteness": concreteness, "prefix": coherence_prefix}
    result = correlate_ratings(ratings, scores=scores, stories=stories, metrics=metrics, n_boot=n_boot, seed=seed,
                               ci_method=ci_method, progress=progress, story_metrics=story_metrics,
                               metric_options=measures, judge=judge, rubric=rubric, judge_out=judge_out,
                               temperature=temperature, judge_seed=judge_seed, paired=paired, track=track)
    if save is not None:
        written = result.save(save, ratings, {"n_boot": n_boot, "seed": seed, "ci_method": ci_method})
        typer.echo(f"wrote {written}", err=True)
    if as_json:
        _echo_json(result.to_json())
        _exit(unjudged_exit(result.unjudged))
    print_correlation(result, n_boot=n_boot, ci_method=ci_method)
    _exit(unjudged_exit(result.unjudged))
