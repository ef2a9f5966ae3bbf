"""``connote vmc synth``: synthetic metaphor captions for stage-1 pretraining (VMC appendix A.5.2).

Added to the ``metaphor`` group by :func:`register_synth`; the work is :mod:`connote.vmc.synth_task`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands.config import config_option
from connote.commands.options import json_option, track_option


def synth_cmd(
    captions: Annotated[Path | None, typer.Argument(help="MSCOCO captions_*.json, a JSON/JSONL list of {image, "
                                                    "caption} or a CSV/TSV with columns image, caption (optional id). "
                                                    "Default: the sample (12 captions of the packaged photos and "
                                                    "its Batch API output file, written to OUT/sample).",
                                                    show_default=False)] = None,
    model: Annotated[str | None, typer.Option("--model", help="Any generate backend: \"openai:gpt-3.5-turbo\" (the "
                                              "paper's), openai:NAME?base_url=http://127.0.0.1:8000/v1, hf-chat:DIR "
                                              "(any HF chat LM), openai-batch:OUTPUT.jsonl (a Batch API output file "
                                              "of the --write-batch requests). Default on the sample: its output "
                                              "file.", show_default=False)] = None,
    write_batch: Annotated[Path | None, typer.Option("--write-batch", help="Write one OpenAI Batch API request per "
                                                     "caption to this JSONL file (half the price of the API; "
                                                     "model from --model openai:NAME, default gpt-3.5-turbo) and "
                                                     "stop; answer them with --model openai-batch:OUTPUT.jsonl.",
                                                     show_default=False)] = None,
    requests_per_file: Annotated[int, typer.Option(help="With --write-batch: at most this many requests per file "
                                                   "(the Batch API's limit is 50,000); more are written as "
                                                   "STEM.part001.jsonl, ...")] = 50_000,
    max_failed: Annotated[int, typer.Option(help="Exit 1 when more than this many rows failed (they are recorded "
                                            "and retried by a rerun either way).")] = 0,
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
    json_out: Annotated[bool, json_option()] = False,
    track: Annotated[str | None, track_option()] = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> int:
    """Convert image captions to template metaphors with any generation backend and keep those in the template.

    Writes OUT/metaphors.json (the kept image-metaphor pairs, stage-1 data of `vmc train`), OUT/synth.jsonl
    (every row with its answer and why it was dropped or failed) and OUT/results.json (the counts). Rerunning resumes.
    With --write-batch it writes OpenAI Batch API requests instead; --model openai-batch:OUTPUT.jsonl then reads
    the batch's answers. Without CAPTIONS it runs on the packaged sample and its Batch API output file.
    """
    from connote.commands.tracking import run_registered
    from connote.vmc import synth_task

    synth_task.check_synth_flags(out, batch_size=batch_size, max_new_tokens=max_new_tokens, limit=limit,
                                 requests_per_file=requests_per_file, temperature=temperature, max_failed=max_failed)
    options = {"images": str(images) if images is not None else None, "prompt": prompt, "temperature": temperature,
               "max_new_tokens": max_new_tokens, "batch_size": batch_size, "limit": limit, "send_image": send_image,
               "max_failed": max_failed}
    if write_batch is not None:
        if captions is None:
            captions, images, model = synth_task.sample_inputs(out, images, model, write_batch)
        task = synth_task.MetaphorSynthTask.from_options(captions, {**options, "images": images}, progress=progress)
        return synth_task.write_batch_requests(task, write_batch, model, requests_per_file)
    return run_registered("vmc-synth", model=model, out=out, data=captions, seed=None, progress=progress,
                          track=track, as_json=json_out, data_flag="CAPTIONS", options=options)


def register_synth(group: typer.Typer) -> None:
    """Add ``synth`` to the ``metaphor`` group (once, however often the group is registered)."""
    if not any(c.callback is synth_cmd for c in group.registered_commands):
        group.command("synth")(synth_cmd)
