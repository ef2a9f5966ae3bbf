"""``connote models`` and ``connote tasks``: what is registered, and what each can do."""

from __future__ import annotations

import json

import click
import typer
from typer.core import TyperGroup


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
    print("\nconnote models NAME: a backend's options (type, default, help); all of them: docs/models.md")


def show(name: str, json_out: bool = False) -> None:
    """One backend: what it does and declares, and its options with type, default and one line of help."""
    from connote.core.errors import InputError
    from connote.models.options import backend_options, close_matches
    from connote.models.registry import CAPABILITIES, MODELS

    if name not in MODELS.names():
        near = close_matches(name)
        raise InputError(f"no model backend {name!r}" + (f"; did you mean {', '.join(near)}?" if near else "")
                         + " (connote models lists them)")
    backend, options, open_kw = backend_options(name)
    if json_out:
        print(json.dumps({"name": name, "help": backend.help, "capabilities": [c for c in CAPABILITIES
                          if c in backend.capabilities], "inputs": backend.inputs, "weights": backend.weights,
                          "options": [vars(o) for o in options], "more_options": open_kw}, indent=2))
        return
    print(f"{name}: {backend.help}")
    caps = ", ".join(c for c in CAPABILITIES if c in backend.capabilities)
    print(f"capabilities: {caps}; works from: {backend.inputs}; weights: {WEIGHTS[backend.weights]}")
    print(f"spec: {name}{'' if backend.weights == 'none' else '[:WEIGHTS]'}[?option=value&...]")
    if not options:
        print("options: none")
        return
    widths = [max(len(getattr(o, k)) for o in options) for k in ("name", "type", "default")]
    head = ("option", "type", "default")
    widths = [max(w, len(h)) for w, h in zip(widths, head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)) + "  help")
    for o in options:
        print("  ".join(v.ljust(w) for v, w in zip((o.name, o.type, o.default), widths)) + "  " + o.help)
    if open_kw:
        print("(further options are passed on to the encoder it builds)")


#: What a backend's weights are, in words (``Backend.weights``).
WEIGHTS = {"hf": "a hub id or a local folder", "folder": "a local folder", "file": "a local file",
           "name": "a model name or file", "none": "none (embedded)"}


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
    from connote.models.albef_checkpoint import convert_checkpoint

    path, report = convert_checkpoint(file, out)
    if json_out:
        print(json.dumps({"file": str(path), **report}, default=str))
        return
    print(f"wrote {path}: {report['kept_tensors']} tensors ({report['kept_parameters']:,} values) of the ITM model")
    print("dropped entries: " + (", ".join(report["dropped_entries"]) or "none"))
    print("dropped objects (read as stand-ins, never run): " + (", ".join(report["dropped_globals"]) or "none"))


class _ModelsGroup(TyperGroup):
    """``connote models NAME`` shows backend NAME: a word that is not a subcommand goes to the hidden ``show``."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "show", self.commands["show"], args
        return super().resolve_command(ctx, args)


def register(app: typer.Typer) -> None:
    group = typer.Typer(add_completion=False, pretty_exceptions_enable=False, invoke_without_command=True,
                        cls=_ModelsGroup, help="List the model backends and their capabilities; connote models "
                        "NAME shows one backend's options.")

    @group.callback(invoke_without_command=True)
    def _models(ctx: typer.Context,
                capability: str = typer.Option(None, "--capability", "-c", help="Only backends with this "
                                               "capability (match, mask, generate)."),
                json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """List the model backends with their capabilities (match, mask, generate)."""
        if ctx.invoked_subcommand is None:
            models(capability, json_out)

    @group.command("show", hidden=True)
    def _show(name: str = typer.Argument(..., help="A backend's name (connote models lists them)."),
              json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Show one backend: its capabilities and its options with type, default and help."""
        show(name, json_out)

    group.command("convert")(convert)
    app.add_typer(group, name="models")
    app.command("tasks")(tasks)
