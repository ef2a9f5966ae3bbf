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
    from connote.errors import InputError
    from connote.models.registry import CAPABILITIES, MODELS

    if capability is not None and capability not in CAPABILITIES:
        raise InputError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    rows = []
    for name in MODELS.names():
        b = MODELS.get(name)
        if capability is None or capability in b.capabilities:
            rows.append({"name": name, "capabilities": [c for c in CAPABILITIES if c in b.capabilities],
                         "weights": b.weights, "help": b.help})
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


def register(app: typer.Typer) -> None:
    app.command("models")(models)
    app.command("tasks")(tasks)
