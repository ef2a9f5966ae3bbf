"""``connote models`` and ``connote tasks``: what is registered, and what each can do."""

from __future__ import annotations

import json

import typer


def models(
    capability: str = typer.Option(None, "--capability", "-c", help="Only backends with this capability "
                                   "(match, mask, generate)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the model backends with their capabilities (match, mask, generate)."""
    from connote.core.errors import InputError
    from connote.models.registry import CAPABILITIES, MODELS

    if capability is not None and capability not in CAPABILITIES:
        raise InputError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    rows = []
    for name in MODELS.names():
        b = MODELS.get(name)
        if capability is None or capability in b.capabilities:
            rows.append({"name": name, "capabilities": [c for c in CAPABILITIES if c in b.capabilities],
                         "inputs": b.inputs, "weights": b.weights, "help": b.help})
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows) if rows else 4
    for r in rows:
        print(f"{r['name']:<{width}}  {','.join(r['capabilities']):<20}  {r['help']}")


def tasks(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the tasks with their version, the model capability they need and the data they read."""
    from connote.tasks import TASKS

    rows = []
    for name in TASKS.names():
        t = TASKS.get(name)
        rows.append({"name": name, "version": t.version, "capability": t.capability, "reads": t.reads,
                     "title": t.title})
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        print(f"{r['name']} (version {r['version']}, needs a '{r['capability']}' model)\n  {r['title']}\n"
              f"  reads: {r['reads']}")


def convert(
    kind: str = typer.Argument(..., help="What the file is: albef (an ALBEF/LAVIS checkpoint)."),
    file: str = typer.Argument(..., help="The checkpoint file (.pth)."),
    out: str = typer.Option(None, "--out", "-o", help="Output file (default: FILE with .safetensors)."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
) -> None:
    """Rewrite a released checkpoint that a weights-only load refuses as a safetensors file of its tensors.

    Nothing in the file is run: each object that is not a tensor is read as a stand-in and dropped; the
    command says what it dropped and what it kept.
    """
    from connote.core.errors import InputError

    if kind != "albef":
        raise InputError(f"connote models convert: unknown kind {kind!r}; valid: albef")
    from connote.models.albef import convert_checkpoint

    path, report = convert_checkpoint(file, out)
    if json_out:
        print(json.dumps({"file": str(path), **report}, default=str))
        return
    print(f"wrote {path}: {report['kept_tensors']} tensors ({report['kept_parameters']:,} values) of the ITM model")
    print("dropped entries: " + (", ".join(report["dropped_entries"]) or "none"))
    print("dropped objects (read as stand-ins, never run): " + (", ".join(report["dropped_globals"]) or "none"))


def register(app: typer.Typer) -> None:
    group = typer.Typer(add_completion=False, pretty_exceptions_enable=False, invoke_without_command=True,
                        help="List the model backends with their capabilities (match, mask, generate).")

    @group.callback(invoke_without_command=True)
    def _models(ctx: typer.Context,
                capability: str = typer.Option(None, "--capability", "-c", help="Only backends with this "
                                               "capability (match, mask, generate)."),
                json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """List the model backends with their capabilities (match, mask, generate)."""
        if ctx.invoked_subcommand is None:
            models(capability, json_out)

    group.command("convert")(convert)
    app.add_typer(group, name="models")
    app.command("tasks")(tasks)
