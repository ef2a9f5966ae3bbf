"""Visual storytelling (VIST): a story for every photo sequence, in the challenge's submission format.

Any backend with the ``generate`` capability writes the stories (``retrieval``, the offline default;
``hf-vlm``; ``caption-llm``; ``openai``; the paper's ``seq2seq`` baseline). Each request carries the
sequence's photos (when the backend needs them) and photo ids; stories are normalised like the
challenge's ``story_text_normalized`` (lower case, punctuation split off). A sequence's row is reused only
when the run fingerprint and the sequence (album, photo ids, the photos' bytes) are unchanged. The run
folder gets ``stories.jsonl``, the challenge-format ``submission.json`` (an errored sequence appears
with an empty story and an ``error`` key, and is counted by ``connote vist score``) and ``results.json``
(``run.json`` in folders written before; still read).
Scoring is ``connote vist score`` (the challenge and album protocols, :mod:`connote.vist.protocols`), under
the task's one version (:attr:`StorytellingTask.version`, also ``connote.vist.TASK_VERSION``), which enters
both the generation fingerprint and every stored score signature.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError, ItemError
from connote.metrics.options import opt
from connote.models.protocols import GenerationRequest
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl
from connote.tasks.api import Sample, Task
from connote.vist.data import seq_id
from connote.vist.version import VERSION

STORY_PROMPT_VERSION = 1
STORY_PROMPT = ("These photos are in order. Write a short story about them, one sentence per photo, "
                "as if sharing the experience with friends.")


@dataclass
class SequenceInput:
    """One photo sequence to write a story for."""

    album_id: str
    photo_ids: tuple[str, ...]

    @property
    def id(self) -> str:
        return seq_id(self.photo_ids)


def normalize_story(text: str) -> str:
    """Lower-case and split punctuation off words, like the challenge's ``story_text_normalized``.

    >>> normalize_story("We went to the Beach! It was fun, really.")
    'we went to the beach ! it was fun , really .'
    """
    text = text.replace("\n", " ").strip().lower()
    text = re.sub(r"([.,!?;:\"()])", r" \1 ", text)
    return " ".join(text.split())


def load_sequences(path: str | Path) -> list[SequenceInput]:
    """Photo sequences to generate for: a challenge template/submission or an official SIS/DIS file."""
    from connote.vist.challenge import parse_submission
    from connote.vist.data import load_json, read_official

    obj, _ = load_json(path)
    seen: dict[tuple[str, ...], SequenceInput] = {}
    if isinstance(obj, dict) and "output_stories" in obj:
        for e in parse_submission(obj, path).entries:
            seen.setdefault(e.key, SequenceInput(e.album_id, e.key))
    else:
        vf = read_official(path)
        if not vf.stories:
            raise InputError("no photo sequences (stories) in this file", path=path)
        for st in vf.stories:
            seen.setdefault(st.photo_ids, SequenceInput(st.album_id, st.photo_ids))
    return list(seen.values())


@dataclass
class GenerationSummary:
    n_sequences: int
    n_generated_now: int
    n_done_before: int
    n_errors: int
    n_empty: int
    fingerprint: str
    stories_path: str
    submission_path: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _row(s: SequenceInput, story: str, error: str | None) -> dict[str, Any]:
    return {"item_id": s.id, "album_id": s.album_id, "photo_sequence": list(s.photo_ids), "story": story,
            "error": error}


@dataclass(frozen=True)
class StoryOptions:
    """The options of ``vist-storytelling`` (``connote vist generate``'s flags; ``connote run --set``)."""

    images: str | None = opt(None, "folder of photos named <photo id>.<ext>")
    batch_size: int = opt(8, "sequences per generate call", ge=1)
    limit: int | None = opt(None, "only the first N sequences", ge=1)
    team_name: str = opt("connote", "team name in submission.json")


def write_sample(folder: Path) -> Sample:
    """The sample VIST set built from the packaged photos, with the retrieval baseline over its training stories."""
    from connote.vist.sample import sample_retrieval_spec, write_sample_vist

    paths = write_sample_vist(folder)
    return Sample(paths["template"], "sample VIST set", f"template {paths['template']}, photos {paths['images']}",
                  model=sample_retrieval_spec(paths), options={"images": str(paths["images"])})


class StorytellingTask(Task):
    """A story per photo sequence with any ``generate`` backend (VIST; scored by ``connote vist score``)."""

    name = "vist-storytelling"
    #: The one version of the VIST task, also in every stored score signature (history: :mod:`connote.vist.version`)
    version = VERSION
    capability = "generate"
    reads = "photo sequences (a VIST challenge template/submission or an official SIS file) and a photo folder"
    title = "Visual storytelling: a story per photo sequence, written in the VIST challenge format."
    label = "stories"
    report_kind = "vist-storytelling"  # connote.vist.report: the scored protocols' tables
    inputs = ("images", "photo-ids")  # a photo sequence, or its photo ids for feature-based models
    invariance_field = "story"
    options = StoryOptions
    default_model = "retrieval"
    sample_data = staticmethod(write_sample)

    @classmethod
    def from_options(cls, data: Path, options: dict[str, Any], *, seed: int = 0, progress: bool = True) -> Task:
        options = dict(options)
        return cls(load_sequences(data), image_dir=options.pop("images"), **options, progress=progress,
                   meta={"sequences": str(data)})

    def print_result(self, result: Any, *, as_json: bool = False) -> int:
        from connote.commands.output import echo_json

        summary = GenerationSummary(**self.summary(result))
        if as_json:
            echo_json(summary.to_dict())
        else:
            print(f"{summary.n_sequences} sequences: {summary.n_generated_now} generated now, "
                  f"{summary.n_done_before} done before, {summary.n_errors} errors, {summary.n_empty} empty")
            print(f"wrote {summary.submission_path} and {summary.stories_path}")
        return 1 if summary.n_errors else 0

    def __init__(self, sequences: Sequence[SequenceInput], *, image_dir: str | Path | None = None,
                 batch_size: int = 8, limit: int | None = None, prompt: str = STORY_PROMPT,
                 max_new_tokens: int = 120, team_name: str = "connote", progress: bool = True,
                 meta: dict[str, Any] | None = None) -> None:
        seqs = list(sequences)
        self.sequences = seqs[:limit] if limit else seqs
        self.image_dir = Path(image_dir) if image_dir is not None else None
        self.batch_size, self.prompt, self.max_new_tokens = int(batch_size), prompt, int(max_new_tokens)
        self.team_name, self.progress, self.meta = team_name, progress, dict(meta or {})
        self.needs_images = True

    def settings(self) -> dict[str, Any]:
        return {"prompt_version": STORY_PROMPT_VERSION,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "max_new_tokens": self.max_new_tokens, "normalize": "vist-lower-split-punct"}

    def config(self) -> dict[str, Any]:
        return {**self.settings(), "images": str(self.image_dir) if self.image_dir else None,
                "batch_size": self.batch_size, "team_name": self.team_name, **self.meta}

    def _photo_identity(self, photo_id: str) -> Any:
        if not self.needs_images or self.image_dir is None:
            return None
        from connote.core.files import file_sha256
        from connote.media.photos import find_image

        try:
            return file_sha256(find_image(self.image_dir, photo_id))
        except (ItemError, OSError) as exc:
            return f"unreadable: {type(exc).__name__}"

    def work_items(self) -> list[WorkItem]:
        items = []
        for s in self.sequences:
            key = content_key({"album_id": s.album_id, "photos": [[p, self._photo_identity(p)] for p in s.photo_ids]})
            error = None
            if self.needs_images and self.image_dir is None:
                error = "this generator needs photos: pass an image folder (--images)"
            items.append(WorkItem(s.id, key, s, error))
        return items

    def prepare(self, batch: list[WorkItem]) -> list[Any]:
        """Each sequence's photos read and decoded (on a few threads) while the model writes the batch before:
        a list of photos, or the ItemError of a sequence whose photos could not be read."""
        from connote.media.images import load_each
        from connote.media.photos import load_sequence_images

        if not self.needs_images:
            return [[] for _ in batch]
        return load_each(lambda w: load_sequence_images(self.image_dir, w.payload.photo_ids), batch)

    def compute(self, model: Any, batch: list[WorkItem], ready: Any = None) -> list[dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        ready_items: list[WorkItem] = []
        requests: list[GenerationRequest] = []
        for w, images in zip(batch, ready if ready is not None else self.prepare(batch), strict=True):
            s: SequenceInput = w.payload
            if isinstance(images, ItemError):
                rows[w.item_id] = _row(s, "", str(images))
                continue
            ready_items.append(w)
            requests.append(GenerationRequest(images=images, prompt=self.prompt, max_new_tokens=self.max_new_tokens,
                                              image_ids=tuple(s.photo_ids)))
        if requests:
            texts = model.generate(requests)
            for w, text in zip(ready_items, texts, strict=True):
                if isinstance(text, BaseException):
                    rows[w.item_id] = _row(w.payload, "", f"{type(text).__name__}: {text}")
                else:
                    rows[w.item_id] = _row(w.payload, normalize_story(str(text)), None)
        return [rows[w.item_id] for w in batch]

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        return _row(item.payload, "", message)

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {"n_sequences": len(rows), "n_errors": sum(1 for r in rows if r.get("error")),
                "n_empty": sum(1 for r in rows if not r.get("error") and not r.get("story"))}

    def bind(self, model: Any) -> None:
        """The capability check, then whether the model reads photos (its registration and spec say so: nothing is
        built here)."""
        from connote.models.registry import needs_images

        super().bind(model)
        self.needs_images = needs_images(model)

    @classmethod
    def score(cls, out: str | Path, references: str | Path, *, protocol: str = "challenge",
              template: str | Path | None = None, tokenize: str | None = None, **options: Any) -> Any:
        """Score the run's ``submission.json`` against the gold SIS file ``references`` under ``protocol``
        (:func:`connote.vist.protocols.score`; ``options`` are its settings) and store the scores in
        ``out/scores/``; returns (result, stored path, note). The signature carries this task's version."""
        from connote.vist.challenge import read_gold, read_submission
        from connote.vist.protocols import score, store_scores

        submission = Path(out) / "submission.json"
        result = score(protocol, read_submission(submission), read_gold(references),
                       template=None if template is None else read_submission(template), **options)
        path, note = store_scores(out, result, submission=submission, gold=references, template=template,
                                  tokenize=tokenize)
        return result, path, note

    def summary(self, result: Any) -> dict[str, Any]:
        """What ``connote vist generate --json`` prints (:class:`GenerationSummary`)."""
        out, outcome = Path(result.out), result.outcome
        return GenerationSummary(n_sequences=outcome.total, n_generated_now=outcome.computed,
                                 n_done_before=outcome.resumed, n_errors=outcome.failed,
                                 n_empty=int(result.results.get("n_empty", 0)), fingerprint=outcome.fingerprint,
                                 stories_path=str(out / "stories.jsonl"),
                                 submission_path=str(out / "submission.json")).to_dict()

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        from connote.vist.challenge import submission_dict

        write_jsonl(out / "stories.jsonl", ({k: v for k, v in r.items() if k != "item_key"} for r in rows))
        sub = submission_dict(((r["album_id"], r["photo_sequence"], r["story"]) for r in rows),
                              team_name=self.team_name,
                              description=f"connote vist generate, {results['model_fingerprint'].get('backend')}")
        for entry, r in zip(sub["output_stories"], rows, strict=True):
            if r.get("error"):
                entry["error"] = r["error"]
        write_json(out / "submission.json", sub)
        write_json(out / self.results_file, results)


def run_generation(generator: Any, sequences: Sequence[SequenceInput], out_dir: str | Path, *,
                   image_dir: str | Path | None = None, batch_size: int = 8, limit: int | None = None,
                   team_name: str = "connote", meta: dict[str, Any] | None = None,
                   progress: bool = True) -> GenerationSummary:
    """Generate a story for every sequence, resumably (a compatibility name for library callers: the command is
    :func:`connote.tasks.api.run_task` with a :class:`StorytellingTask`)."""
    from connote.tasks.api import run_task

    task = StorytellingTask(sequences, image_dir=image_dir, batch_size=batch_size, limit=limit, team_name=team_name,
                            progress=progress, meta=meta)
    return GenerationSummary(**task.summary(run_task(task, generator, out_dir)))
