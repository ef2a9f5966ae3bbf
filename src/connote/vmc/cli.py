"""``connote vmc ...`` (video metaphor captioning; ``connote metaphor`` is its older name) and ``connote agreement``.

Heavy dependencies (PyAV, torch, transformers) are imported inside the commands.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.measures import BootSeed, JudgeOut, JudgeSeed, JudgeTemperature, NBoot, Paired, SaveTo
from connote.commands.options import check_invariance_option, track_option

metaphor_app = typer.Typer(
    name="metaphor", no_args_is_help=True, add_completion=False,
    help="Video metaphor captioning: parse the template, caption videos, score runs, train GIT-LLaVA.",
)


@metaphor_app.command("parse")
def parse_cmd(
    texts: Annotated[list[str] | None, typer.Argument(help="Captions; '-' or none reads stdin lines.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON value per input (null: no template).")]
    = False,
) -> int:
    """Split captions into primary concept, property and secondary concept."""
    from connote.vmc.template import parse_metaphor

    if not texts or texts == ["-"]:
        texts = [line.rstrip("\n") for line in sys.stdin]
    failed = 0
    for text in texts:
        parsed = parse_metaphor(text)
        failed += parsed is None
        if as_json:
            print(json.dumps(parsed.to_dict() if parsed else None, ensure_ascii=False))
        elif parsed is None:
            print(f"(not in the template)\t{text}")
        else:
            neg = " [negated]" if parsed.negated else ""
            print(f"{parsed.primary}\t{parsed.property}\t{parsed.secondary}{neg}")
    return 0


@metaphor_app.command("caption")
def caption_cmd(
    videos: Annotated[Path | None, typer.Option(
        "--videos", help="Folder of videos, question JSONL or CSV manifest. Default: the test clips of the sample "
        "set made from packaged photos (written to OUT/sample).", show_default=False)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Generator spec, e.g. git-llava:runs/x/final. Default on the sample set: the offline "
        "nearest-caption generator over its training clips.", show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Run folder (resumable).")] = Path("runs/metaphor-caption"),
    strategy: Annotated[str | None, typer.Option(help="Frame sampling (default: the model's).")] = None,
    k: Annotated[int | None, typer.Option(help="Frames (uniform) or clips (clips).")] = None,
    prompt: Annotated[str | None, typer.Option(help="Override the prompt.")] = None,
    batch_size: Annotated[int, typer.Option(help="Videos per generate call (git-llava batches them; a killed "
                                              "run loses at most one call's).")] = 16,
    max_new_tokens: Annotated[int, typer.Option(help="Caption length limit in tokens.")] = 48,
    limit: Annotated[int | None, typer.Option(help="Only the first N videos.")] = None,
    samples: Annotated[int, typer.Option(help="Captions per video (several need --temperature > 0; the public "
                                               "evaluation draws 3 at 0.2 and averages the scores).")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.0,
    frames: Annotated[str | None, typer.Option("--frames", help="fixed (connote's positions) | random (the public "
                                               "VMC encoder's seeded draw, one per run). Default: the model's (GIT-"
                                               "LLaVA models trained on random frames), else fixed.")] = None,
    frame_seed: Annotated[int | None, typer.Option("--frame-seed", help="Seed of --frames random.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[Optional[str], track_option()] = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> int:
    """Generate one metaphor caption per video; rerunning resumes where it stopped."""
    from connote.commands.tracking import run_registered

    for option, value in (("--k", k), ("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens),
                          ("--limit", limit), ("--samples", samples)):
        checks.at_least(option, value, 1)
    checks.at_least("--temperature", temperature, 0)
    checks.folder("--out", out)
    return run_registered("vmc-captioning", model=model, out=out, data=videos, seed=None, progress=progress,
                          track=track, check_invariance=check_invariance, data_flag="--videos", options={
                              "strategy": strategy, "k": k, "prompt": prompt, "batch_size": batch_size,
                              "max_new_tokens": max_new_tokens, "limit": limit, "samples": samples,
                              "temperature": temperature, "frames": frames, "frame_seed": frame_seed})


@metaphor_app.command("score")
def score_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Caption run folder(s), or the public evaluation's answer files "
                                           "(JSONL: video_id, text[, true_caption], one row per sample); several "
                                           "are shown side by side.")],
    refs: Annotated[Path | None, typer.Option("--refs", help="VMC caption table (unique_id, annotator_1..3). "
                                              "Default for runs captioned on the sample set (`vmc caption` "
                                              "without --videos): the sample's table, and its test split.",
                                              show_default=False)] = None,
    split: Annotated[Path | None, typer.Option(help="Score only these ids (split file).")] = None,
    metrics: Annotated[str, typer.Option(help="Comma-separated engine metrics (bertscore needs a model).")]
    = "bleu,rouge_l,cider",
    bootstrap: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: no intervals).")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    bertscore_model: Annotated[str | None, typer.Option(help="BERTScore encoder (hub id or folder; 'embedded' = "
                                                        "the shipped all-MiniLM-L6-v2). Adds BERT-F1.")] = None,
    bertscore_layer: Annotated[int | None, typer.Option(help="BERTScore layer (default: bert_score's table for the "
                                                        "model, e.g. microsoft/deberta-xlarge-mnli 40, roberta-large "
                                                        "17; else the last layer). In the signature.")] = None,
    concept_encoder: Annotated[str | None, typer.Option(help="Sentence encoder for ACS/ACD (sentence-transformers id "
                                                        "or folder, e.g. all-mpnet-base-v2 as the paper; 'embedded' "
                                                        "= the shipped MiniLM). Needs --bertscore-model.")] = None,
    concept_split: Annotated[str, typer.Option(help="notebook (the authors' evaluation notebook, quirks included) "
                                               "| public (connote's earlier token split) | improved (multi-word "
                                               "properties).")] = "notebook",
    samples: Annotated[str, typer.Option("--samples", help="Several samples per video: pooled (one corpus of all "
                                         "(video, sample) rows, as the notebook) | mean (score each sample, "
                                         "average).")] = "pooled",
    text: Annotated[str, typer.Option("--text", help="first-line (the notebook's text.split('\\n')[0]) | whole "
                                      "(the whole generation).")] = "first-line",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with per-video scores).")] = False,
    config: Annotated[Path | None, config_option()] = None,
) -> int:
    """Paper Table 1 columns (BLEU-4, ROUGE-L, CIDEr, BERT-F1, ACS, ACD) + template share, per run.

    Each run's scores (with per-video scores) are stored in RUN/scores/vmc-<key>.json, the key hashing the
    references' and split's sha256, the metrics, the encoders and the bootstrap settings: scoring with
    other references or another split adds a file and never replaces the first.
    """
    from connote.vmc.scoring import print_scores, score_and_store

    results, stored, refs = score_and_store(
        runs, refs, split=split, metrics=metrics, n_boot=bootstrap, seed=seed, samples=samples, text=text,
        bertscore_model=bertscore_model, bertscore_layer=bertscore_layer, concept_encoder=concept_encoder,
        concept_split=concept_split)
    if as_json:
        print(json.dumps([{**r.to_dict(), "stored": str(p)} for r, p in zip(results, stored, strict=True)],
                         indent=2))
        return 0
    print_scores(results, refs, samples=samples, text=text)
    return 0


@metaphor_app.command("train")
def train_cmd(
    config: Annotated[Path, typer.Option("--config", "-c", help="Training config (YAML), or the name of a shipped "
                                         "recipe (e.g. paper-git-baseline); see docs/vmc.md.")],
    output_dir: Annotated[str | None, typer.Option("--out", "-o", help="Override output_dir (with --sample: the "
                                                   "folder of the sample, its models and runs).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Override train.max_steps.")] = None,
    sample: Annotated[bool, typer.Option("--sample", help="Run the recipe offline on the packaged sample with tiny "
                                         "random models (a smoke run of its pipeline: data layout, stages, the "
                                         "checkpoint; the weights mean nothing).")] = False,
    track: Annotated[Optional[str], track_option()] = None,
) -> int:
    """Train GIT-LLaVA / GIT-LLaVA-X (stage 1: projector on still images; stage 2: VMC videos) or the GIT baseline.

    Multi-GPU / multi-node: ``accelerate launch -m connote.vmc.train --config c.yaml`` or
    ``torchrun --nproc_per_node N -m connote.vmc.train --config c.yaml``.

    The output folder gets ``training.json`` (the config, the steps, the losses), which ``--track`` logs with the
    step log ``train_log.jsonl`` as its table.
    """
    from connote.commands.tracking import log_run, require_tracker
    from connote.media.embedded import quiet_transformers
    from connote.runs.distributed import launched_rank
    from connote.vmc.train.config import find_config, load_config
    from connote.vmc.train.loop import train

    quiet_transformers()  # the loop prints its steps; transformers' load/save bars and warnings only add noise
    require_tracker(track)
    if max_steps is not None:
        checks.at_least("--max-steps", max_steps, 1)
    path = find_config(config)
    if sample:
        from connote.vmc.train.sample_run import sample_config

        out = Path(output_dir or "runs/vmc-train-sample")
        checks.folder("--out", out)
        cfg = sample_config(path, out, max_steps=max_steps, note=lambda m: print(f"sample run: {m}", file=sys.stderr))
    else:
        overrides: dict = {}
        if output_dir is not None:
            overrides["output_dir"] = output_dir
        if max_steps is not None:
            overrides.setdefault("train", {})["max_steps"] = max_steps
        cfg = load_config(path, overrides)
    result = train(cfg)
    if launched_rank() == 0:
        _write_train_summary(cfg, result)
        log_run(cfg.output_dir, track, results_file=TRAINING_SUMMARY)
    print(json.dumps({"final": result.final_dir, "steps": result.steps, "best_val_loss": result.best_val_loss,
                      "stopped_early": result.stopped_early, **({"sample": True} if sample else {})}))
    return 0


#: What ``vmc train`` writes beside the model: the training's summary (what ``--track`` logs).
TRAINING_SUMMARY = "training.json"


def _write_train_summary(cfg: Any, result: Any) -> None:
    """``OUTPUT_DIR/training.json``: the resolved config, versions and seed (as ``vist train`` writes them in its
    ``train.json``, a name VMC's release gives its LLaVA split files), the steps, the best validation loss and the
    last training loss of this run."""
    from connote.commands.tracking import training_summary
    from connote.runs import write_json

    write_json(Path(cfg.output_dir) / TRAINING_SUMMARY, {
        **training_summary("vmc-train", cfg.to_dict(), cfg.train.seed), "final": result.final_dir,
        "steps": result.steps, "best_val_loss": result.best_val_loss, "stopped_early": result.stopped_early,
        "final_loss": result.losses[-1] if result.losses else None})


def agreement_cmd(
    labels: Annotated[Path, typer.Argument(help="CSV with columns item_id, rater, criterion, label.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> int:
    """Pairwise Cohen's kappa and Fleiss' kappa per human-evaluation criterion (paper Table 3)."""
    from connote.metrics.agreement import agreement_table, read_labels

    rows = agreement_table(read_labels(labels))
    if as_json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return 0
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    def fmt(x: float) -> str:
        return "n/a" if math.isnan(x) else f"{x:.3f}"

    console = Console()
    pairs = list(rows[0].cohen) if rows else []
    table = Table(title=f"Inter-annotator agreement: {labels.name}")
    table.add_column("criterion")
    for a, b in pairs:
        table.add_column(f"Cohen {a}-{b}", justify="right")
    table.add_column("Fleiss", justify="right")
    table.add_column("items (all raters)", justify="right")
    for r in rows:
        table.add_row(r.criterion, *[fmt(r.cohen[p]) for p in pairs], fmt(r.fleiss),
                      f"{r.items} ({r.fleiss_items})")
    legend = []
    if Measurement.get(console, console.options.update_width(10_000), table).minimum > console.width:
        # too wide (many raters or long names): criteria as columns, one row per rater pair, raters by letter
        raters = list(dict.fromkeys(x for pair in pairs for x in pair))
        letter = {name: _letters(k) for k, name in enumerate(raters)}
        table = Table(title=f"Inter-annotator agreement: {labels.name}")
        table.add_column("kappa")
        for r in rows:
            table.add_column(r.criterion, justify="right")
        for p in pairs:
            table.add_row(f"Cohen {letter[p[0]]}-{letter[p[1]]}", *[fmt(r.cohen[p]) for r in rows])
        table.add_row("Fleiss", *[fmt(r.fleiss) for r in rows])
        table.add_row("items (all)", *[f"{r.items} ({r.fleiss_items})" for r in rows])
        legend = [f"{letter[name]} = {name}" for name in raters]
    console.print(table)
    if legend:
        console.print("raters: " + ", ".join(legend), soft_wrap=True)
    console.print(f"labels: {labels}", soft_wrap=True)
    return 0


@metaphor_app.command("correlate")
def correlate_cmd(
    labels: Annotated[Path, typer.Argument(help="The VMC evaluation study's `connote collect import` folder "
                                           "(labels.csv, captions.csv) or its labels.csv.")],
    scores: Annotated[Path | None, typer.Option("--scores", "-s", help="Per-caption scores by item id "
                                                 "(JSON {item: {metric: v}} or CSV), e.g. ACD.")] = None,
    judge: Annotated[list[str] | None, typer.Option("--judge", help="A generation backend as judge (repeatable), "
                                                    "asked VMC A.7's four criteria.")] = None,
    videos: Annotated[Path | None, typer.Option("--videos", help="Folder of the videos (frames for the judge).")]
    = None,
    judge_out: JudgeOut = Path("judges"),
    temperature: JudgeTemperature = 0.0,
    judge_seed: JudgeSeed = None,
    criteria: Annotated[str, typer.Option("--criteria", help="Human criteria to correlate with (comma-separated; "
                                          "default: all in the file).")] = "",
    n_boot: NBoot = 1000,
    seed: BootSeed = 0,
    paired: Paired = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    save: SaveTo = None,
    track: Annotated[Optional[str], track_option()] = None,
) -> None:
    """Which metric or judge agrees with the VMC evaluation study's annotators? Per criterion: Pearson, Spearman
    and Kendall of each metric with the share of annotators saying yes, with bootstrap intervals."""
    from connote.commands.measures import save_correlation, unjudged_exit
    from connote.commands.output import echo_json
    from connote.vmc.correlate import correlate_labels, print_label_correlations

    found = correlate_labels(labels, scores=scores, judge=judge, videos=videos, judge_out=judge_out,
                             temperature=temperature, judge_seed=judge_seed, criteria=criteria, n_boot=n_boot,
                             seed=seed, paired=paired, progress=progress, track=track)
    if save is not None:
        written = save_correlation(save, ratings=labels, kind="vmc-labels", criteria=found.criteria,
                                   scores=found.auto, signatures=found.signatures,
                                   settings={"n_boot": n_boot, "seed": seed, "ci_method": "percentile"})
        typer.echo(f"wrote {written}", err=True)
    if as_json:
        echo_json({"criteria": found.criteria, "signatures": found.signatures,
                   **({"unjudged": found.unjudged} if found.unjudged else {})})
        raise typer.Exit(unjudged_exit(found.unjudged))
    print_label_correlations(found)
    raise typer.Exit(unjudged_exit(found.unjudged))


def _letters(k: int) -> str:
    """A, B, ..., Z, AA, AB, ...: short rater labels for a table legend."""
    out = ""
    k += 1
    while k:
        k, rem = divmod(k - 1, 26)
        out = chr(65 + rem) + out
    return out


def register(app: typer.Typer) -> None:
    """Add ``metaphor`` (sub-commands) and ``agreement`` to the ``connote`` app."""
    from connote.vmc.cli_synth import register_synth

    register_synth(metaphor_app)
    app.add_typer(metaphor_app, name="vmc", help="Video metaphor captioning (VMC): parse the template, caption "
                  "videos, score runs, train GIT-LLaVA.")
    app.add_typer(metaphor_app, name="metaphor")  # the older name
    app.command("agreement")(agreement_cmd)
