"""``connote vmc synth``: literal captions -> the A.5.2 prompt -> any ``generate`` backend -> template filter.

One item per caption row (:func:`connote.vmc.synth.read_caption_rows`). Its row is reused only when the
run fingerprint (task version, the backend's ``describe()``, prompt, temperature, length limit, filter version,
whether images are sent) and the item's content (caption, image path, and the image's bytes when images are sent)
are unchanged, so a killed run resumes where it stopped and a rerun asks nothing again. Rows without an image or
caption, and (with an image folder) rows whose image file is missing, are recorded as errors without a model
call; an answer with no text is an error too (retried by a rerun); an answer outside the template is *dropped*
with its reason. Each request carries its row id as ``key``: the ``custom_id`` of the OpenAI Batch API request
file :meth:`MetaphorSynthTask.batch_requests` writes (``--write-batch``), by which ``openai-batch:OUTPUT.jsonl``
answers it (a failed or missing line is that row's error). Text-only backends (``hf-chat``, ``openai-batch``)
are taken; ``--send-image`` needs one that takes images. The run folder gets:

* ``metaphors.json``: the kept pairs as stage-1 records (``data.metaphor_images`` or ``data.synth`` of
  ``connote vmc train``);
* ``synth.jsonl``: every row (source caption, answer, kept caption or the reason it was dropped, error);
* ``results.json``: counts read / kept / dropped (by reason) / failed (by reason), the settings and the image
  folder (``run.json`` in folders written before, still read);
* ``store.sqlite``: the runner's rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.metrics.options import opt
from connote.models.openai_batch import BATCH_FAILED, NOT_IN_OUTPUT, NOT_THIS_REQUEST
from connote.models.protocols import GenerationRequest
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl
from connote.tasks.api import Sample, Task
from connote.vmc.synth import (
    FILTER_VERSION,
    NO_TEXT,
    NOT_TEMPLATE,
    SYNTH_PROMPT,
    CaptionRow,
    filter_answer,
    read_caption_rows,
    stage1_records,
    synth_prompt,
)

#: marker in a row's error -> its reason in results.json (the first that matches; the batch markers first, as their
#: messages quote a prompt)
ERROR_KINDS = ((NOT_THIS_REQUEST, "not this run's request"), (NOT_IN_OUTPUT, "not in the batch output"),
               (BATCH_FAILED, "batch request failed"), ("no caption", "no caption"),
               ("no image for this caption", "no image"), ("image file not found", "image not found"),
               ("unreadable image", "unreadable image"), (NO_TEXT, "no text"))


def error_kind(message: str) -> str:
    """The reason a row failed, as counted in ``results.json``."""
    return next((kind for marker, kind in ERROR_KINDS if marker in message), "generation failed")


@dataclass(frozen=True)
class SynthOptions:
    """The options of ``vmc-synth`` (``connote vmc synth``'s flags; ``connote run --set``)."""

    images: str | None = opt(None, "folder the table's image paths are relative to")
    prompt: str | None = opt(None, "override the A.5.2 prompt (must contain {caption})")
    temperature: float = opt(0.0, "sampling temperature (0: greedy)", ge=0)
    max_new_tokens: int = opt(64, "answer length limit in tokens", ge=1)
    batch_size: int = opt(16, "captions per generate call", ge=1)
    limit: int | None = opt(None, "only the first N captions", ge=1)
    send_image: bool = opt(False, "send the image with the prompt (chat VLMs)")
    max_failed: int = opt(0, "exit 1 when more than this many rows failed (recorded and retried by a rerun)", ge=0)


def write_sample(folder: Path) -> Sample:
    """The sample: 12 captions of the packaged photos and its Batch API output file (the model on it)."""
    from connote.vmc.sample_synth import write_sample_synth

    paths = write_sample_synth(folder)
    return Sample(paths["captions"], "sample", f"captions {paths['captions']}, images {paths['images']}",
                  model=f"openai-batch:{paths['batch_output']}", options={"images": str(paths["images"])})


class MetaphorSynthTask(Task):
    """Synthetic metaphor captions for images (VMC A.5.2), filtered by the template."""

    name = "vmc-synth"
    version = 1
    capability = "generate"
    reads = "captions: MSCOCO captions_*.json, a JSON/JSONL list of {image, caption} or a CSV/TSV image,caption"
    title = "VMC A.5.2: literal captions converted to '<primary> is as <property> as <secondary>' and filtered."
    label = "captions"
    #: the prompt alone (text-only LMs, Batch API answers) or with the image (--send-image)
    inputs = ("images", "text")
    options = SynthOptions
    outputs = ("metaphors.json", "synth.jsonl", "results.json")
    sample_data = staticmethod(write_sample)

    @classmethod
    def from_options(cls, data: Path, options: dict[str, Any], *, seed: int = 0, progress: bool = True) -> Task:
        return cls(data, **{**options, "prompt": options.get("prompt") or SYNTH_PROMPT}, progress=progress)

    def model_results(self, model: Any) -> dict[str, Any]:
        """With a Batch API output file as the model: the answers no request of this run takes (counted and named,
        never used), from the run's own answers model (its output file read once). A run that resumed every row
        built no model (the lazy identity decided): the output file's custom_ids are read for the count instead."""
        from connote.models.lazy import LazyModel
        from connote.models.openai_batch import OpenAIBatchAnswers, output_files, read_output

        if isinstance(model, LazyModel):
            factory = model.resolved.backend.factory()  # the class, or its from_spec
            if getattr(factory, "__self__", factory) is not OpenAIBatchAnswers:
                return {}
            if not model.loaded:
                return self.unmatched(read_output(output_files(model.resolved.weights)))
            model = model.model
        return self.unmatched(model.answers) if isinstance(model, OpenAIBatchAnswers) else {}

    def unmatched(self, custom_ids: Any) -> dict[str, Any]:
        """The answers of a Batch API output (its custom_ids) that no request of this run takes."""
        from connote.models.openai_batch import unmatched_ids

        unmatched = unmatched_ids(custom_ids, self.request_ids())
        return {"unmatched_answers": len(unmatched), "unmatched_custom_ids": unmatched[:20]}

    def print_result(self, result: Any, *, as_json: bool = False) -> int:
        """What ``connote vmc synth`` prints: the counts on stderr (kept, dropped and failed captions by reason, the
        answers no request took) and the summary as one JSON line (``as_json``: the task's summary); exit 1 when
        more than ``max_failed`` rows failed."""
        import json
        import sys

        r, out = result.results, result.out
        status = 1 if r["failed"] > self.max_failed else 0
        if as_json:
            super().print_result(result, as_json=True)
            return status
        print(f"{r['captions']} caption(s): {r['kept']} kept, {r['dropped']} dropped {r['dropped_by_reason']}, "
              f"{r['failed']} failed {r['failed_by_reason']}; table {out / 'metaphors.json'}", file=sys.stderr)
        if r.get("unmatched_answers"):
            shown = ", ".join(r["unmatched_custom_ids"][:5])
            print(f"note: {r['unmatched_answers']} answer(s) in the Batch API output match no request of this run "
                  f"and were not used ({shown}{', ...' if r['unmatched_answers'] > 5 else ''})", file=sys.stderr)
        summary = {k: r[k] for k in ("captions", "kept", "dropped", "dropped_by_reason", "failed",
                                     "failed_by_reason", "n_resumed", "n_computed_this_run", "unmatched_answers")
                   if k in r}
        print(json.dumps({"run": str(out), "table": str(out / "metaphors.json"), **summary}))
        return status

    def __init__(self, captions: str | Path, *, images: str | Path | None = None, prompt: str = SYNTH_PROMPT,
                 temperature: float = 0.0, max_new_tokens: int = 64, batch_size: int = 16,
                 limit: int | None = None, send_image: bool = False, max_failed: int = 0,
                 progress: bool = True) -> None:
        if temperature < 0:
            raise InputError(f"--temperature must be >= 0, got {temperature}")
        synth_prompt("x", prompt)  # a prompt without {caption} is refused before anything loads
        self.source = Path(captions)
        self.rows: list[CaptionRow] = read_caption_rows(captions, limit)
        self.images = Path(images) if images is not None else None
        if self.images is not None and not self.images.is_dir():
            raise InputError("image folder not found", path=self.images)
        if send_image and self.images is None:
            raise InputError("--send-image needs --images (the folder the table's image paths are relative to)")
        self.prompt, self.temperature, self.max_new_tokens = prompt, float(temperature), int(max_new_tokens)
        self.batch_size, self.send_image, self.progress = int(batch_size), bool(send_image), progress
        self.max_failed = int(max_failed)  # how many failed rows the command's exit status lets pass

    def bind(self, model: Any) -> None:
        """The capability and inputs check; a text-only model cannot be sent the image."""
        from connote.models.registry import inputs_of

        super().bind(model)
        if self.send_image and inputs_of(model) == "text":
            raise InputError(f"--send-image: model backend {getattr(model, 'backend', type(model).__name__)} works "
                             "from the prompt alone; send text only (the paper's way) or use an image-text model")

    def batch_requests(self, model: str) -> tuple[list[dict[str, Any]], list[WorkItem]]:
        """One OpenAI Batch API request per usable row (custom_id = the row id, body = the prompt as the
        ``openai`` backend sends it, text only) and the rows left out (their errors set)."""
        from connote.models.openai_batch import batch_custom_id, chat_body, request_line

        if self.send_image:
            raise InputError("--write-batch writes text-only requests (as the paper sent them); drop --send-image")
        lines, skipped = [], []
        for w in self.work_items():
            if w.error is not None:
                skipped.append(w)
                continue
            body = chat_body(model, synth_prompt(w.payload.caption, self.prompt), max_tokens=self.max_new_tokens,
                             temperature=self.temperature, seed=self._seed())
            try:
                lines.append(request_line(batch_custom_id(w.item_id, self._digest(w)), body))
            except InputError as exc:
                raise InputError(f"{w.payload.where}: {exc}") from None
        return lines, skipped

    def _seed(self) -> int | None:
        return 0 if self.temperature > 0 else None

    def _digest(self, w: WorkItem) -> str:
        from connote.models.openai_batch import request_digest

        return request_digest(synth_prompt(w.payload.caption, self.prompt), self.max_new_tokens, self.temperature,
                              self._seed())

    def request_ids(self) -> list[tuple[str, str]]:
        """(row id, request digest) of every row this run sends: what a Batch API output's custom_ids answer."""
        return [(w.item_id, self._digest(w)) for w in self.work_items() if w.error is None]

    def settings(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "filter_version": FILTER_VERSION, "send_image": self.send_image}

    def config(self) -> dict[str, Any]:
        return {**self.settings(), "captions": str(self.source),
                "images": str(self.images.resolve()) if self.images else None, "batch_size": self.batch_size}

    def work_items(self) -> list[WorkItem]:
        from connote.core.files import file_sha256

        items = []
        for row in self.rows:
            error = row.error
            content: dict[str, Any] = {"caption": row.caption, "image": row.image}
            if error is None and self.images is not None:
                path = self.images / str(row.image)
                if not path.is_file():
                    error = f"{row.where}: image file not found: {path}"
                elif self.send_image:
                    content["image_sha256"] = file_sha256(path)
            items.append(WorkItem(row.row_id, content_key(content), row, error=error))
        return items

    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        from PIL import Image

        requests, unreadable = [], {}
        for w in batch:
            images = []
            if self.send_image:
                assert self.images is not None
                path = self.images / str(w.payload.image)
                try:
                    with Image.open(path) as im:
                        images = [im.convert("RGB")]
                except (OSError, ValueError) as exc:  # not an image, truncated: this row's error, not the batch's
                    unreadable[w.item_id] = f"{w.payload.where}: unreadable image {path} ({type(exc).__name__}: {exc})"
                    continue
            requests.append(GenerationRequest(images=images, prompt=synth_prompt(w.payload.caption, self.prompt),
                                              max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                              seed=self._seed(), key=w.item_id))
        answers = iter(model.generate(requests) if requests else [])
        rows = []
        for w in batch:
            base = {"image": w.payload.image, "source_caption": w.payload.caption}
            if w.item_id in unreadable:
                rows.append({**base, "answer": None, "metaphor": None, "dropped": None,
                             "error": unreadable[w.item_id]})
                continue
            answer = next(answers)
            if isinstance(answer, BaseException):
                rows.append({**base, "answer": None, "metaphor": None, "dropped": None,
                             "error": f"generation failed: {type(answer).__name__}: {answer}"})
                continue
            text = "" if answer is None else str(answer)
            if not text.strip():
                rows.append({**base, "answer": text, "metaphor": None, "dropped": None,
                             "error": f"{w.payload.where}: {NO_TEXT}"})
                continue
            kept, parsed = filter_answer(text)
            rows.append({**base, "answer": text, "metaphor": kept, "parsed": parsed,
                         "dropped": None if kept else NOT_TEMPLATE, "error": None})
        return rows

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        row = item.payload
        return {"image": row.image, "source_caption": row.caption, "answer": None, "metaphor": None,
                "dropped": None, "error": message}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        failed = Counter(error_kind(r["error"]) for r in rows if r.get("error"))
        dropped = Counter(r["dropped"] for r in rows if not r.get("error") and r.get("dropped"))
        kept = sum(1 for r in rows if not r.get("error") and r.get("metaphor"))
        answered = kept + sum(dropped.values())
        return {"captions": len(rows), "kept": kept, "dropped": sum(dropped.values()),
                "dropped_by_reason": dict(sorted(dropped.items())), "failed": sum(failed.values()),
                "failed_by_reason": dict(sorted(failed.items())),
                "kept_share_of_answers": round(kept / answered, 6) if answered else None,
                "captions_file": str(self.source), "images": str(self.images.resolve()) if self.images else None,
                "table": "metaphors.json"}

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_json(out / "metaphors.json", stage1_records(rows))
        write_jsonl(out / "synth.jsonl", ({"id": r["item_id"], "image": r.get("image"),
                                           "source_caption": r.get("source_caption"), "answer": r.get("answer"),
                                           "metaphor": r.get("metaphor"), "dropped": r.get("dropped"),
                                           "error": r.get("error")} for r in rows))
        write_json(out / self.results_file, results)


def synthesize(captions: str | Path, model: str | Any, out: str | Path, **options: Any) -> dict[str, Any]:
    """Run :class:`MetaphorSynthTask` with ``model`` (a spec or a generator) into ``out``; returns ``results.json``."""
    from connote.models.registry import load_model

    task = MetaphorSynthTask(captions, **options)
    if isinstance(model, str):
        model = load_model(model)
    results, _ = task.run(model, out)  # the answers no request takes: counted by the task's model_results
    return results


# --------------------------------------------------------------------------- connote vmc synth


def check_synth_flags(out: Path, *, batch_size: int, max_new_tokens: int, limit: int | None,
                      requests_per_file: int, temperature: float, max_failed: int) -> None:
    """The counts >= 1, the temperature and ``--max-failed`` >= 0 and ``--out`` a folder (else exit 2)."""
    from connote.commands import checks

    for option, value in (("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens), ("--limit", limit),
                          ("--requests-per-file", requests_per_file)):
        checks.at_least(option, value, 1)
    checks.at_least("--temperature", temperature, 0)
    checks.at_least("--max-failed", max_failed, 0)
    checks.folder("--out", out)


def sample_inputs(out: Path, images: Path | None, model: str | None,
                  write_batch: Path | None) -> tuple[Path, Path, str | None]:
    """(captions, images, model) of the packaged sample, written to ``OUT/sample``: its captions, its photos (unless
    ``images`` is given) and, unless a model is given or requests are to be written, its Batch API output file."""
    import sys

    from connote.vmc.sample_synth import write_sample_synth

    paths = write_sample_synth(out / "sample")
    captions, images = paths["captions"], images or paths["images"]
    if model is None and write_batch is None:
        model = f"openai-batch:{paths['batch_output']}"
    print(f"no captions given: using the sample written to {out / 'sample'} (captions {captions}, images "
          f"{images}{f'; model {model}' if model else ''})", file=sys.stderr)
    return captions, images, model


def write_batch_requests(task: MetaphorSynthTask, path: Path, model: str | None, per_file: int) -> int:
    """``--write-batch``: the task's rows as Batch API request files; prints what it wrote."""
    import json
    import sys

    from connote.models.openai_batch import write_request_files
    from connote.models.registry import parse_spec

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
