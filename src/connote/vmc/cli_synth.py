"""``connote vmc synth``: synthetic metaphor captions for stage-1 pretraining (VMC appendix A.5.2).

Added to the ``metaphor`` group by :func:`register_synth`. Heavy dependencies are imported inside the command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from connote.commands import checks
from connote.commands.config import config_option


def synth_cmd(
    captions: Annotated[Path, typer.Argument(help="MSCOCO captions_*.json, a JSON/JSONL list of {image, caption} "
                                             "or a CSV/TSV with columns image, caption (optional id).")],
    model: Annotated[str, typer.Option("--model", help="Any generate backend, e.g. \"openai:gpt-3.5-turbo\" (the "
                                       "paper's) or openai:NAME?base_url=http://127.0.0.1:8000/v1.")],
    images: Annotated[Path | None, typer.Option("--images", help="Folder the table's image paths are relative to "
                                                "(e.g. train2014/): rows whose image is missing are recorded, not "
                                                "sent; stage 1 finds the images through it.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Run folder (resumable).")] = Path("runs/metaphor-synth"),
    prompt: Annotated[str | None, typer.Option(help="Override the A.5.2 prompt (must contain {caption}).")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.0,
    max_new_tokens: Annotated[int, typer.Option(help="Answer length limit in tokens.")] = 64,
    batch_size: Annotated[int, typer.Option(help="Captions per generate call (an API backend sends them "
                                            "concurrently); each call's rows are stored at once.")] = 16,
    limit: Annotated[int | None, typer.Option(help="Only the first N captions.")] = None,
    send_image: Annotated[bool, typer.Option("--send-image", help="Send the image with the prompt (for chat VLMs "
                                             "such as hf-vlm, which need one; the paper sent text only).")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> int:
    """Convert image captions to template metaphors with any generation backend and keep those in the template.

    Writes OUT/metaphors.json (the kept image-metaphor pairs, stage-1 data of `metaphor train`), OUT/synth.jsonl
    (every row with its answer and why it was dropped or failed) and OUT/run.json (the counts). Rerunning resumes.
    """
    from connote.vmc.synth import SYNTH_PROMPT
    from connote.vmc.synth_task import synthesize

    for option, value in (("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens), ("--limit", limit)):
        checks.at_least(option, value, 1)
    checks.at_least("--temperature", temperature, 0)
    checks.folder("--out", out)
    results = synthesize(captions, model, out, images=images, prompt=prompt or SYNTH_PROMPT,
                         temperature=temperature, max_new_tokens=max_new_tokens, batch_size=batch_size, limit=limit,
                         send_image=send_image, progress=progress)
    print(f"{results['captions']} caption(s): {results['kept']} kept, {results['dropped']} dropped "
          f"{results['dropped_by_reason']}, {results['failed']} failed {results['failed_by_reason']}; "
          f"table {out / 'metaphors.json'}", file=sys.stderr)
    summary = {k: results[k] for k in ("captions", "kept", "dropped", "dropped_by_reason", "failed",
                                       "failed_by_reason", "n_resumed", "n_computed_this_run")}
    print(json.dumps({"run": str(out), "table": str(out / "metaphors.json"), **summary}))
    return 1 if results["failed"] else 0


def register_synth(group: typer.Typer) -> None:
    """Add ``synth`` to the ``metaphor`` group (once, however often the group is registered)."""
    if not any(c.callback is synth_cmd for c in group.registered_commands):
        group.command("synth")(synth_cmd)
