"""``connote vmc synth``: synthetic metaphor captions for stage-1 pretraining (VMC appendix A.5.2).

Added to the ``metaphor`` group by :func:`register_synth`. Heavy dependencies are imported inside the command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from connote.commands import checks
from connote.commands.config import config_option


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
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> int:
    """Convert image captions to template metaphors with any generation backend and keep those in the template.

    Writes OUT/metaphors.json (the kept image-metaphor pairs, stage-1 data of `vmc train`), OUT/synth.jsonl
    (every row with its answer and why it was dropped or failed) and OUT/results.json (the counts). Rerunning resumes.
    With --write-batch it writes OpenAI Batch API requests instead; --model openai-batch:OUTPUT.jsonl then reads
    the batch's answers. Without CAPTIONS it runs on the packaged sample and its Batch API output file.
    """
    from connote.core.errors import InputError
    from connote.vmc.synth import SYNTH_PROMPT
    from connote.vmc.synth_task import MetaphorSynthTask, synthesize

    for option, value in (("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens), ("--limit", limit),
                          ("--requests-per-file", requests_per_file)):
        checks.at_least(option, value, 1)
    checks.at_least("--temperature", temperature, 0)
    checks.at_least("--max-failed", max_failed, 0)
    checks.folder("--out", out)
    if captions is None:
        from connote.vmc.sample_synth import write_sample_synth

        paths = write_sample_synth(out / "sample")
        captions, images = paths["captions"], images or paths["images"]
        if model is None and write_batch is None:
            model = f"openai-batch:{paths['batch_output']}"
        print(f"no captions given: using the sample written to {out / 'sample'} (captions {captions}, images "
              f"{images}{f'; model {model}' if model else ''})", file=sys.stderr)
    options = {"images": images, "prompt": prompt or SYNTH_PROMPT, "temperature": temperature,
               "max_new_tokens": max_new_tokens, "batch_size": batch_size, "limit": limit, "send_image": send_image,
               "progress": progress}
    if write_batch is not None:
        return _write_batch(MetaphorSynthTask(captions, **options), write_batch, model, requests_per_file)
    if model is None:
        raise InputError("--model is needed (a generate backend, e.g. openai:gpt-3.5-turbo, hf-chat:DIR or "
                         "openai-batch:OUTPUT.jsonl), or --write-batch to write Batch API requests")
    results = synthesize(captions, model, out, **options)
    print(f"{results['captions']} caption(s): {results['kept']} kept, {results['dropped']} dropped "
          f"{results['dropped_by_reason']}, {results['failed']} failed {results['failed_by_reason']}; "
          f"table {out / 'metaphors.json'}", file=sys.stderr)
    if results.get("unmatched_answers"):
        shown = ", ".join(results["unmatched_custom_ids"][:5])
        print(f"note: {results['unmatched_answers']} answer(s) in the Batch API output match no request of this run "
              f"and were not used ({shown}{', ...' if results['unmatched_answers'] > 5 else ''})", file=sys.stderr)
    summary = {k: results[k] for k in ("captions", "kept", "dropped", "dropped_by_reason", "failed",
                                       "failed_by_reason", "n_resumed", "n_computed_this_run", "unmatched_answers")
               if k in results}
    print(json.dumps({"run": str(out), "table": str(out / "metaphors.json"), **summary}))
    return 1 if results["failed"] > max_failed else 0


def _write_batch(task: Any, path: Path, model: str | None, per_file: int) -> int:
    """``--write-batch``: the task's rows as Batch API request files; prints what it wrote."""
    from connote.core.errors import InputError
    from connote.models.openai_batch import write_request_files
    from connote.models.registry import parse_spec
    from connote.vmc.synth_task import error_kind

    name = "gpt-3.5-turbo"  # the paper's model (A.5.2)
    if model is not None:
        spec = parse_spec(model)
        if spec.backend != "openai" or not spec.weights:
            raise InputError("--write-batch writes requests for OpenAI's Batch API: --model openai:NAME "
                             f"(got {model!r})")
        name = spec.weights
    lines, skipped = task.batch_requests(name)
    if not lines:
        raise InputError("no caption can be sent (every row has an error)", path=task.source)
    files = write_request_files(path, lines, per_file)
    reasons: dict[str, int] = {}
    for w in skipped:
        reasons[error_kind(w.error)] = reasons.get(error_kind(w.error), 0) + 1
    print(f"{len(lines)} request(s) for {name} in {len(files)} file(s) ({', '.join(map(str, files))}); "
          f"{len(skipped)} row(s) left out {dict(sorted(reasons.items()))}. Upload each file (purpose=batch), create "
          f"a batch for /v1/chat/completions, then: --model openai-batch:OUTPUT.jsonl", file=sys.stderr)
    print(json.dumps({"requests": len(lines), "files": [str(f) for f in files], "model": name,
                      "left_out": len(skipped), "left_out_by_reason": dict(sorted(reasons.items()))}))
    return 0


def register_synth(group: typer.Typer) -> None:
    """Add ``synth`` to the ``metaphor`` group (once, however often the group is registered)."""
    if not any(c.callback is synth_cmd for c in group.registered_commands):
        group.command("synth")(synth_cmd)
