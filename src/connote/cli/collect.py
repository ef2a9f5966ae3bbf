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
    captions: Annotated[str, typer.Option(help="probes-*: simplified (the paper's validation) | original.")]
    = "simplified",
) -> int:
    """Write a ready-to-serve Potato project for one of the studies."""
    from connote.collect import study_module

    module = study_module(study)
    srcs = list(sources or []) + list(more or [])
    common = {"completion": completion_code, "login": login}
    if per_item is not None:
        common["per_item"] = per_item
    if study.startswith("probes-"):
        if len(srcs) != 1:
            raise InputError(f"{study} needs one --data PROBES.csv")
        folder = module.make(srcs[0], out, captions=captions, **common)
    elif study in ("vist-storytelling", "vist-retelling"):
        if len(srcs) != 1:
            raise InputError(f"{study} needs one --data JSON file")
        extra = {"albums": albums} if study == "vist-storytelling" else {}
        folder = module.make(srcs[0], out, images=images, **extra, **common)
    elif study in ("vist-descriptions", "vist-descriptions-in-sequence"):
        if not srcs:
            raise InputError(f"{study} needs --data SIS.json [SIS.json ...] (the first stage's imports)"
                             + (" or --data PHOTO_FOLDER" if study == "vist-descriptions" else ""))
        folder = module.make(srcs, out, images=images, **common)
    elif study == "vmc-synth-check":
        if len(srcs) != 1:
            raise InputError("vmc-synth-check needs one --data (a `vmc synth` run folder or its metaphors.json)")
        folder = module.make(srcs[0], out, images=images, **common)
    elif study == "vmc-annotation":
        if videos is None:
            raise InputError("vmc-annotation needs --videos FOLDER")
        folder = module.make(videos, out, **common)
    else:
        if not srcs or videos is None:
            raise InputError("vmc-evaluation needs --data RUN [RUN ...] and --videos FOLDER")
        folder = module.make(srcs, videos, out, **common)
    from connote.collect.project import read_manifest

    manifest = read_manifest(folder)
    for reason in manifest["left_out"]:
        print(f"left out: {reason}", file=sys.stderr)
    print(json.dumps({"study": study, "folder": str(folder), "items": len(manifest["items"]),
                      "attention_checks": len(manifest["attention"]), "per_item": manifest["per_item"],
                      "completion_code": manifest["completion_code"], "left_out": len(manifest["left_out"])}))
    return 0


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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> int:
    """Items done / in progress / left, per annotator, and attention-check failures."""
    from connote.collect.status import format_status, study_status

    status = study_status(folder)
    print(json.dumps(status, indent=1) if as_json else format_status(status))
    return 0


@collect_app.command("import")
def import_cmd(
    folder: Annotated[Path, typer.Argument(help="Study folder.")],
    out: Annotated[Path, typer.Option("--out", help="Output file (probes, vist) or folder (vmc-annotation).")],
    scores: Annotated[Optional[list[Path]], typer.Option(
        "--scores", help="vmc-evaluation: stored scores of `connote vmc score` (per-video ACD) for the "
        "ACD-creativity correlation; default: the scores `vmc score` stored in the runs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the import report as JSON.")] = False,
) -> int:
    """Turn Potato's answers into connote's formats; lists incomplete items and excluded annotators."""
    from connote.collect.importing import import_study

    report = import_study(folder, out, scores=scores or None)
    data = report.to_dict()
    nothing = report.imported == 0  # exit 1: a finding, not a success - no annotator has finished an answer yet
    if nothing:
        print(f"no complete answer in {folder / 'annotation_output'} yet: nothing was imported", file=sys.stderr)
    if as_json:
        print(json.dumps(data, indent=1))
        return 1 if nothing else 0
    print(f"{report.study}: {report.imported} complete answer(s), {report.items_complete} item(s) complete, "
          f"{len(report.incomplete)} incomplete")
    for path in report.outputs:
        print(f"  wrote {path}")
    for iid, n in report.incomplete.items():
        print(f"  incomplete: {iid} ({n} answer(s) so far)")
    for reason in report.excluded:
        print(f"  excluded {reason}")
    for row in report.agreement:
        fleiss = row["fleiss"]
        print(f"  agreement {row['criterion']}: Fleiss kappa {'n/a' if fleiss is None else f'{fleiss:.3f}'} "
              f"over {row['fleiss_items']} item(s); Cohen " + ", ".join(
                  f"{c['a']}-{c['b']} {'n/a' if c['kappa'] is None else format(c['kappa'], '.3f')}"
                  for c in row["cohen"]))
    for key, value in report.extra.items():
        print(f"  {key}: {json.dumps(value)}")
    return 1 if nothing else 0


def register(app: typer.Typer) -> None:
    """Add ``collect`` (make, serve, status, import) to the ``connote`` app."""
    app.add_typer(collect_app, name="collect")
