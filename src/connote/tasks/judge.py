"""Judges: any registered generation backend asked a versioned question with a rubric, through the runner.

A judge is a model spec with the ``generate`` capability (``openai:MODEL`` against any OpenAI-compatible
server, ``hf-vlm:...`` chat VLMs, ...) and one or more :class:`Rubric` s. The papers register their rubrics
(:data:`RUBRICS`, from ``RUBRICS`` in their plugin modules): VIST's question about a story and its pairwise
preference (:mod:`connote.vist.rubrics`), VMC's appendix A.7 criteria of a metaphor caption
(:mod:`connote.vmc.rubrics`). This module holds what every rubric shares: the versioned :class:`Rubric`, the
reading of a rating (:func:`parse_rating`) and the judge task.

Every judge call is one runner item: the run fingerprint holds the judge (the model's ``describe()``) and
the sampling (temperature, seed, token budget); the item key holds the rubric's name, version and prompt
hash and the item's content (texts, the photos' bytes). So a rerun calls nothing, and a changed prompt or a
new rubric recomputes only its own items. An answer that cannot be parsed is kept (the answer, the
``parse_error``, no score): asking again at temperature 0 would give the same answer. A call that fails
(the server, after the client's retries) is an item error and is retried on the next run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.plugins import named_targets
from connote.core.registry import Registry
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl
from connote.tasks.api import Task


class ParseError(ValueError):
    """A judge's answer that does not follow the rubric's answer format."""


#: What the share rubric's question accepts as its answer: the whole reply, or its first line, is the rating (bold or
#: quoted, a closing period allowed: "4" then a paragraph of reasons); or the reply starts with it and its label
#: ("4 - agree", "4 (agree)", "4. The story ..."); or it is stated as the rating ("I would rate this story a 4",
#: "Rating: 4", "my answer is 4", "4/5", "4 out of 5"). A number anywhere else (the scale "1-5", its legend "answer
#: with one number: 1 = strongly disagree", an echoed story "5 5 5 ...", "5 friends went ...") is not a rating, and
#: two different stated ratings are none.
_WHOLE = re.compile(r"(\d+)\s*[.!]?")
_LEADING = re.compile(r"(\d+)\s*(?:[-\u2013\u2014:.)(]|=)\s*[^\d\s]")
_STATED = re.compile(r"\b(?:rate|rating|rated|score|scored|answer|give)\b[^.\d\n]{0,40}?(?<![\d.])(\d+)"
                     r"(?!\d|\.\d|\s*(?:-|\u2013|to)\s*\d|\s*=)", flags=re.IGNORECASE)  # "1 = ...": a scale's legend
_OUT_OF = r"(?<![\d.])(\d+)\s*(?:/|out\s+of)\s*{hi}\b"


def parse_rating(answer: str, lo: int, hi: int) -> int:
    """The rating a reply gives to a ``lo``-``hi`` question, in the answer format above; else ``ParseError``."""
    text = answer.strip().strip("*_`\"' \n")
    found: set[int] = set()
    first_line = text.split("\n", 1)[0].strip().strip("*_`\"' ")
    if m := _WHOLE.fullmatch(text) or _WHOLE.fullmatch(first_line) or _LEADING.match(text):
        found = {int(m.group(1))}
    else:
        found = {int(x) for x in _STATED.findall(text)} | {int(x) for x in re.findall(_OUT_OF.format(hi=hi), text)}
    if len(found) != 1:
        why = "two different ratings" if found else "no rating"
        raise ParseError(f"expected a rating {lo}-{hi} as the answer, got {why} in {answer[:80]!r}")
    (value,) = found
    if not lo <= value <= hi:
        raise ParseError(f"expected a rating {lo}-{hi}, got {value} in {answer[:80]!r}")
    return value


def read_answer(rubric: Rubric, prompt: str, answer: str) -> dict[str, float]:
    """The scores in a judge's ``answer`` to ``prompt``, read by the rubric. A judge that repeats the prompt
    first (a plain LM continuing its input) is read from what follows it, so the prompt's own example answer or
    scale is never taken for the judge's: the prompt alone is no answer (``ParseError``)."""
    text, asked = answer.lstrip(), prompt.strip()
    if asked and text.startswith(asked):
        text = text[len(asked):]
    return rubric.parse(text)


@dataclass(frozen=True)
class Rubric:
    """A versioned question: its prompt template, what it scores and how its answer is read."""

    name: str
    version: int
    kind: str  # "story", "story-pair" or "caption"
    template: str
    parse: Callable[[str], dict[str, float]]
    max_new_tokens: int = 16

    def prompt_sha(self) -> str:
        return hashlib.sha256(self.template.encode()).hexdigest()[:12]

    def key(self) -> dict[str, Any]:
        return {"rubric": self.name, "version": self.version, "prompt_sha": self.prompt_sha()}

    def tag(self) -> str:
        return f"{self.name}@v{self.version}#{self.prompt_sha()}"


#: The rubrics, by name: each paper's, declared by its plugin module (``RUBRICS`` in ``connote/<paper>/plugin.py``:
#: name -> ``("module:attr", help)``, see :mod:`connote.core.plugins`), registered on the first lookup or listing.
RUBRICS: Registry[Rubric] = Registry("rubric", plugins=named_targets("RUBRICS"))


def rubric(name: str) -> Rubric:
    """The rubric registered as ``name`` (an unknown name lists the valid ones, exit 2)."""
    found = RUBRICS.get(name)
    if not isinstance(found, Rubric) or found.name != name:
        raise InputError(f"rubric {name!r} is registered as {found!r}, not a Rubric of that name")
    return found


def rubrics_from(names: str | Sequence[str], kinds: Sequence[str]) -> list[Rubric]:
    """The named rubrics (comma-separated or a list), each of one of ``kinds``; unknown names exit 2."""
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    bad = [n for n in wanted if n not in RUBRICS or rubric(n).kind not in kinds]
    if bad or not wanted:
        valid = ", ".join(n for n in RUBRICS.names() if rubric(n).kind in kinds)
        raise InputError(f"unknown rubric {', '.join(bad) or '(none given)'}; valid here: {valid}")
    return [rubric(n) for n in wanted]


@dataclass
class JudgeInput:
    """One thing to judge: its id, text (and a second text for a pair), and where its images are."""

    item_id: str
    text: str
    text_b: str | None = None
    photo_ids: tuple[str, ...] = ()
    video: str | None = None


def _digest(path: Path) -> str:
    from connote.core.files import file_sha256

    return file_sha256(path)[:16]


class JudgeTask(Task):
    """Ask a judge each rubric's question about each item (see the module docstring)."""

    #: 2: an answer that repeats the prompt is read from what follows it (:func:`read_answer`)
    name, version, capability = "judge", 2, "generate"
    reads, title = "stories or captions with their photos or videos", "LLM/VLM judge with a versioned rubric."
    label = "judge calls"
    #: ``judge.json`` before 2026-12: readers of run folders accept both (``connote.runs.store.results_path``)
    results_file = "results.json"

    def __init__(self, items: Sequence[JudgeInput], rubrics: Sequence[Rubric], *, image_dir: str | Path | None = None,
                 temperature: float = 0.0, seed: int | None = None, frames: int = 6, batch_size: int = 8,
                 progress: bool = True) -> None:
        if not items:
            raise InputError("nothing to judge")
        self.items, self.rubrics = list(items), list(rubrics)
        self.image_dir = Path(image_dir) if image_dir else None
        self.temperature, self.seed, self.frames = float(temperature), seed, int(frames)
        self.batch_size, self.progress = int(batch_size), progress

    def settings(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "frames": self.frames}

    def _media_key(self, it: JudgeInput) -> list[Any]:
        from connote.media.photos import find_image

        out: list[Any] = []
        for pid in it.photo_ids:
            try:
                out.append([pid, _digest(find_image(self.image_dir, pid))] if self.image_dir else [pid, None])
            except (OSError, InputError) as exc:  # ItemError is an InputError: recorded when computed
                out.append([pid, f"missing: {exc}"])
        if it.video:
            try:
                out.append(["video", _digest(Path(it.video))])
            except OSError:
                out.append(["video", f"missing: {it.video}"])
        return out

    def work_items(self) -> list[WorkItem]:
        out = []
        for r in self.rubrics:
            for it in self.items:
                key = content_key({**r.key(), "text": it.text, "text_b": it.text_b, "media": self._media_key(it)})
                error = None
                if r.kind == "story-pair" and it.text_b is None:
                    error = "a pairwise rubric needs two stories"
                out.append(WorkItem(f"{r.name}:{it.item_id}", key, (r, it), error))
        return out

    def _images(self, it: JudgeInput) -> list[Any]:
        if it.photo_ids and self.image_dir is not None:
            from connote.media.photos import load_sequence_images

            return load_sequence_images(self.image_dir, it.photo_ids)
        if it.video:
            from connote.media.frames import read_frames

            sampled = read_frames(it.video, "segments", k=self.frames, per_clip=self.frames)
            return [im for clip in sampled.images for im in clip]
        return []

    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        from connote.models.protocols import GenerationRequest

        rows: dict[str, dict[str, Any]] = {}
        ready, requests = [], []
        for w in batch:
            rubric, it = w.payload
            try:
                images = self._images(it)
            except (InputError, OSError, ValueError) as exc:
                rows[w.item_id] = self.error_row(w, str(exc))
                continue
            prompt = rubric.template.format(text=it.text, text_b=it.text_b or "")
            ready.append(w)
            requests.append(GenerationRequest(images=images, prompt=prompt, max_new_tokens=rubric.max_new_tokens,
                                              image_ids=tuple(it.photo_ids), temperature=self.temperature,
                                              seed=self.seed))
        if requests:
            answers = model.generate(requests)
            for w, request, answer in zip(ready, requests, answers, strict=True):
                rubric, it = w.payload
                if isinstance(answer, BaseException):
                    rows[w.item_id] = self.error_row(w, f"{type(answer).__name__}: {answer}")
                    continue
                row = {"rubric": rubric.tag(), "item": it.item_id, "answer": str(answer), "scores": None,
                       "parse_error": None}
                try:
                    row["scores"] = read_answer(rubric, request.prompt, str(answer))
                except ParseError as exc:
                    row["parse_error"] = str(exc)
                rows[w.item_id] = row
        return [rows[w.item_id] for w in batch]

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        rubric, it = item.payload
        return {"rubric": rubric.tag(), "item": it.item_id, "answer": None, "scores": None, "parse_error": None,
                "error": message}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in self.rubrics:
            mine = [x for x in rows if x.get("rubric") == r.tag()]
            scored = [x["scores"] for x in mine if x.get("scores")]
            names = sorted({k for s in scored for k in s})
            out[r.name] = {"rubric": r.tag(), "n": len(mine), "n_scored": len(scored),
                           "n_parse_failed": sum(1 for x in mine if x.get("parse_error")),
                           "n_errors": sum(1 for x in mine if x.get("error")),
                           "means": {k: sum(s[k] for s in scored if k in s) / max(1, sum(k in s for s in scored))
                                     for k in names}}
        return {"rubrics": out, "temperature": self.temperature, "seed": self.seed}

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_jsonl(out / "judgements.jsonl", rows)
        write_json(out / self.results_file, results)


def judge_label(model: Any) -> str:
    """``backend:model`` of a judge, for score names."""
    d = model.describe()
    return f"{d.get('backend', type(model).__name__)}:{d.get('model') or d.get('weights') or ''}".rstrip(":")


def judge_signature(model: Any, rubric: Rubric, temperature: float, seed: int | None) -> str:
    from connote import __version__

    return (f"judge|model:{judge_label(model)}|rubric:{rubric.tag()}|temperature:{temperature:g}|seed:{seed}"
            f"|connote-{__version__}")


def run_judges(model: Any, items: Sequence[JudgeInput], rubrics: Sequence[Rubric], out: str | Path, *,
               image_dir: str | Path | None = None, temperature: float = 0.0, seed: int | None = None,
               progress: bool = True) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Run the rubrics with ``model`` (cached in the run folder ``out``).

    Returns per-item scores ``{item id: {"<score>[<judge>]": value}}`` and a summary: the results, a signature
    per rubric, and the parse failures and errors by item.
    """
    from connote.tasks.api import run_task

    task = JudgeTask(items, rubrics, image_dir=image_dir, temperature=temperature, seed=seed, progress=progress)
    results, outcome = run_task(task, model, out)  # the judge's seed is its own (in the request); torch gets 0
    label = judge_label(model)
    scores: dict[str, dict[str, float]] = {}
    failures: dict[str, str] = {}
    for row in outcome.rows:
        if row.get("scores"):
            for k, v in row["scores"].items():
                scores.setdefault(row["item"], {})[f"{k}[{label}]"] = float(v)
        problem = row.get("error") or row.get("parse_error")
        if problem:
            failures[row["item_id"]] = problem
    summary = {"results": results, "computed": outcome.computed, "resumed": outcome.resumed,
               "signatures": {r.name: judge_signature(model, r, temperature, seed) for r in rubrics},
               "failures": failures}
    return scores, summary
