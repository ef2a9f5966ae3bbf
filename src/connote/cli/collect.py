"""``connote collect``: make, serve, watch and import human-data studies run on Potato."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.core.errors import InputError

collect_app = typer.Typer(help="Collect the papers' human data with Potato: make a study, serve it, import it.",
                          no_args_is_help=True)


def _make(module, study: str, srcs: list[Path], out: Path, *, videos: Path | None, images: Path | None,
          albums: int | None, captions: str, common: dict) -> Path:
    """Call the study module's ``make`` with the sources it takes (bad combinations: exit 2)."""
    if study.startswith("probes-"):
        if len(srcs) != 1:
            raise InputError(f"{study} needs one --data PROBES.csv")
        return module.make(srcs[0], out, captions=captions, **common)
    if study in ("vist-storytelling", "vist-retelling"):
        if len(srcs) != 1:
            raise InputError(f"{study} needs one --data JSON file")
        extra = {"albums": albums} if study == "vist-storytelling" else {}
        return module.make(srcs[0], out, images=images, **extra, **common)
    if study in ("vist-descriptions", "vist-descriptions-in-sequence"):
        if not srcs:
            raise InputError(f"{study} needs --data SIS.json [SIS.json ...] (the first stage's imports)"
                             + (" or --data PHOTO_FOLDER" if study == "vist-descriptions" else ""))
        return module.make(srcs, out, images=images, **common)
    if study == "vmc-synth-check":
        if len(srcs) != 1:
            raise InputError("vmc-synth-check needs one --data (a `vmc synth` run folder or its metaphors.json)")
        return module.make(srcs[0], out, images=images, **common)
    if study == "vmc-annotation":
        if videos is None:
            raise InputError("vmc-annotation needs --videos FOLDER")
        return module.make(videos, out, **common)
    if not srcs or videos is None:
        raise InputError("vmc-evaluation needs --data RUN [RUN ...] and --videos FOLDER")
    return module.make(srcs, videos, out, **common)


def _configure(folder: Path, fresh: bool, **settings) -> dict:
    """Apply the platform, gold items and rule; a refused setting removes the folder this make created."""
    import shutil

    from connote.collect.study_settings import configure_study

    try:
        return configure_study(folder, **settings)
    except InputError:
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
        raise


@collect_app.command("make")
def make_cmd(
    study: Annotated[str, typer.Argument(help="probes-validation | probes-votes | vist-storytelling | "
                                         "vist-retelling | vist-descriptions | vist-descriptions-in-sequence | "
                                         "vmc-annotation | vmc-evaluation | vmc-synth-check")],
    more: Annotated[Optional[list[Path]], typer.Argument(help="More sources after --data (caption runs).",
                                                         show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="New study folder.")] = Path("study"),
    sources: Annotated[Optional[list[Path]], typer.Option(
        "--data", "-d", help="Probe manifest, VIST SIS/storyboards JSON (vist-descriptions*: the first stage's SIS "
        "import(s)), photo folder, or caption run folder(s).")] = None,
    videos: Annotated[Optional[Path], typer.Option(help="Folder of videos (vmc-*).")] = None,
    images: Annotated[Optional[Path], typer.Option(help="Folder of VIST photos named <photo id>.<ext> "
                                                   "(default: 'images' next to the JSON).")] = None,
    albums: Annotated[Optional[int], typer.Option(help="vist-storytelling: at most this many albums.")] = None,
    per_item: Annotated[Optional[int], typer.Option("--per-item", help="Annotators per item (default: the "
                                                    "paper's: 3; vist-storytelling 2).")] = None,
    completion_code: Annotated[Optional[str], typer.Option("--completion-code",
                                                           help="Code shown when done (default: derived).")] = None,
    login: Annotated[str, typer.Option(help="username | prolific (PROLIFIC_PID in the link) | mturk (workerId).")]
    = "username",
    platform: Annotated[Optional[str], typer.Option(
        help="prolific | mturk: ids from the study link, the completion code and redirect, no retakes.")] = None,
    per_participant: Annotated[Optional[int], typer.Option(
        "--per-participant", help="Items one participant is given at most (default: as many as there are).")] = None,
    gold_items: Annotated[Optional[Path], typer.Option(
        "--gold-items", help="CSV item_id,question,answer: items with known answers, shown to every annotator.")]
    = None,
    gold_every: Annotated[int, typer.Option("--gold-every", help="A gold item after every N items.")] = 5,
    min_gold_accuracy: Annotated[Optional[float], typer.Option(
        "--min-gold-accuracy", help="Exclude annotators whose gold accuracy is below this (default 0.7 with "
        "--gold-items).")] = None,
    max_failed_checks: Annotated[Optional[int], typer.Option(
        "--max-failed-checks", help="Exclude annotators who fail more attention checks than this (default 0).")]
    = None,
    captions: Annotated[str, typer.Option(help="probes-*: simplified (the paper's validation) | original.")]
    = "simplified",
) -> int:
    """Write a ready-to-serve Potato project for one of the studies."""
    from connote.collect import study_module
    from connote.collect.crowd import PLATFORMS

    module = study_module(study)
    if platform is not None and platform not in PLATFORMS:
        raise InputError(f"--platform must be one of {', '.join(PLATFORMS)}, got {platform!r}")
    if platform is not None and login not in ("username", platform):
        raise InputError(f"--login {login} and --platform {platform} disagree; --platform sets the login")
    common = {"completion": completion_code, "login": platform or login}
    if per_item is not None:
        common["per_item"] = per_item
    fresh = not out.exists() or not any(out.iterdir())
    folder = _make(module, study, list(sources or []) + list(more or []), out, videos=videos, images=images,
                   albums=albums, captions=captions, common=common)
    manifest = _configure(folder, fresh, platform=platform, per_participant=per_participant, gold_items=gold_items,
                          gold_every=gold_every, min_gold_accuracy=min_gold_accuracy,
                          max_failed_checks=max_failed_checks)
    _print_made(folder, manifest)
    return 0


def _print_made(folder: Path, manifest: dict) -> None:
    """What was left out (stderr), then the study's summary as one JSON line (with the link for a platform)."""
    for reason in manifest["left_out"]:
        print(f"left out: {reason}", file=sys.stderr)
    platform = manifest.get("platform")
    summary = {"study": manifest["study"], "folder": str(folder), "items": len(manifest["items"]),
               "attention_checks": len(manifest["attention"]), "gold_items": len(manifest["quality"]["gold"]),
               "per_item": manifest["per_item"], "completion_code": manifest["completion_code"],
               "platform": platform, "rule": manifest["quality"]["rule"], "left_out": len(manifest["left_out"])}
    if platform is not None:
        from connote.collect.crowd import study_link

        summary["study_link"] = study_link(platform)
    print(json.dumps(summary))


@collect_app.command("sample")
def sample_cmd(
    folder: Annotated[Path, typer.Argument(help="Folder to write the sample inputs into.")],
) -> int:
    """Write the bundled sample photos as inputs: probes.csv, images/, and a VIST album (SIS JSON)."""
    from connote.collect.samples import write_sample_album
    from connote.commands.checks import folder as folder_option

    folder_option("FOLDER", folder)
    album = write_sample_album(folder)
    print(json.dumps({"probes": str(folder / "probes.csv"), "images": str(folder / "images"), "album": str(album)}))
    return 0


@collect_app.command("serve")
def serve_cmd(
    folder: Annotated[Path, typer.Argument(help="Study folder made by `connote collect make`.")],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8000,
) -> int:
    """Run Potato on the study, on 127.0.0.1 (same as `potato start config.yaml` in the folder)."""
    from connote.collect.serving import serve

    return serve(folder, port)


@collect_app.command("status")
def status_cmd(
    folder: Annotated[Path, typer.Argument(help="Study folder.")],
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (over items) for alpha's interval.")]
    = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> int:
    """Items done / in progress / left; per annotator attention checks, gold accuracy, exclusion; alpha so far."""
    from connote.collect.status import format_status, study_status

    status = study_status(folder, n_boot=n_boot)
    print(json.dumps(status, indent=1) if as_json else format_status(status))
    return 0


@collect_app.command("import")
def import_cmd(
    folder: Annotated[Path, typer.Argument(help="Study folder.")],
    out: Annotated[Path, typer.Option("--out", help="Output file (probes, vist) or folder (vmc-annotation).")],
    scores: Annotated[Optional[list[Path]], typer.Option(
        "--scores", help="vmc-evaluation: stored scores of `connote vmc score` (per-video ACD) for the "
        "ACD-creativity correlation; default: the scores `vmc score` stored in the runs.")] = None,
    aggregate: Annotated[str, typer.Option(
        help="One label per item and question: majority (the papers' rule) | dawid-skene | mace.")] = "majority",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (over items) for alpha's interval.")]
    = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and of MACE.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the import report as JSON.")] = False,
) -> int:
    """Turn Potato's answers into connote's formats; excluded annotators, reliability and aggregated labels."""
    from connote.collect.importing import import_study

    report = import_study(folder, out, aggregate=aggregate, n_boot=n_boot, seed=seed, scores=scores or None)
    nothing = report.imported == 0  # exit 1: a finding, not a success - no annotator has finished an answer yet
    if nothing:
        print(f"no complete answer in {folder / 'annotation_output'} yet: nothing was imported", file=sys.stderr)
    if as_json:
        print(json.dumps(report.to_dict(), indent=1))
        return 1 if nothing else 0
    print("\n".join(_import_lines(report)))
    return 1 if nothing else 0


def _import_lines(report) -> list[str]:
    """The plain-text import report."""
    from connote.collect.study_reliability import format_reliability

    lines = [f"{report.study}: {report.imported} complete answer(s), {report.items_complete} item(s) complete, "
             f"{len(report.incomplete)} incomplete"]
    lines += [f"  wrote {path}" for path in report.outputs]
    lines += [f"  incomplete: {iid} ({n} answer(s) so far)" for iid, n in report.incomplete.items()]
    lines += [f"  excluded {reason}" for reason in report.excluded]
    for row in report.agreement:
        fleiss = row["fleiss"]
        lines.append(f"  agreement {row['criterion']}: Fleiss kappa {'n/a' if fleiss is None else f'{fleiss:.3f}'} "
                     f"over {row['fleiss_items']} item(s); Cohen " + ", ".join(
                         f"{c['a']}-{c['b']} {'n/a' if c['kappa'] is None else format(c['kappa'], '.3f')}"
                         for c in row["cohen"]))
    if report.reliability:
        lines += format_reliability(report.reliability)
    lines += [f"  {key}: {json.dumps(value)}" for key, value in report.extra.items()]
    return lines


def register(app: typer.Typer) -> None:
    """Add ``collect`` (make, serve, status, import) to the ``connote`` app."""
    app.add_typer(collect_app, name="collect")
