"""``connote vist filter``, ``split`` and ``anonymize``: the paper's dataset construction."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from connote.commands import checks
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import vist_app

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
