"""``connote vist train``, ``train-captioner`` and ``features``: the seq2seq baseline, the +Grounded captioner and
their photo features."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands import checks
from connote.commands.config import config_option
from connote.commands.options import track_option
from connote.vist.cli import _exit, story_app

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
_Track = Annotated[str | None, track_option()]


def _training_options(steps: int, batch_size: int, lr: float, out: Path, track: str | None) -> None:
    from connote.commands.tracking import require_tracker

    require_tracker(track)
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
    track: _Track = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Train the paper's seq2seq baseline (GRU over photo features, read in reverse -> GRU story decoder) on SIS."""
    from connote.commands.tracking import log_run, training_summary
    from connote.core.errors import InputError, ItemError
    from connote.runs import write_json
    from connote.vist import TASK_VERSION
    from connote.vist.data import read_official
    from connote.vist.seq2seq import ENCODER_ORDERS, load_features, sequence_features, train

    if encoder_order not in ENCODER_ORDERS:
        raise InputError(f"unknown --encoder-order {encoder_order!r}; valid: {', '.join(ENCODER_ORDERS)}")
    _training_options(steps, batch_size, lr, out, track)
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
    write_json(out / "train.json", {**training_summary("vist-train", config, seed),
                                    "n_examples": len(examples), "n_skipped": len(skipped), "skipped": skipped,
                                    "final_loss": losses[-1], "losses": losses})
    log_run(out, track, results_file="train.json")
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
    track: _Track = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> None:
    """Train the captioner baseline of +Grounded on DII (one photo's features -> its description)."""
    from connote.commands.tracking import log_run, training_summary
    from connote.core.errors import InputError
    from connote.runs import write_json
    from connote.vist.data import read_official
    from connote.vist.grounding import train_captioner
    from connote.vist.seq2seq import load_features

    _training_options(steps, batch_size, lr, out, track)
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
    write_json(out / "train.json", {**training_summary("vist-train-captioner", config, seed),
                                    "n_skipped_photos": len(skipped), "skipped": skipped, "final_loss": losses[-1],
                                    "losses": losses})
    log_run(out, track, results_file="train.json")
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
