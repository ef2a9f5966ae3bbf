"""The task contract: what every task in connote provides, and the one way a task is run.

A task is built with its data and settings (the data is read and validated in the constructor, so bad
input stops the command with exit 2 before any model loads). It then

1. turns its records into :class:`~connote.runs.runner.WorkItem` s, each with a content key
   (``work_items``),
2. computes rows for a batch of items with a model that has the task's capability (``compute``),
3. builds the row of an item that failed (``error_row``),
4. aggregates rows into the paper's numbers (``aggregate``) and renders them as Markdown (``render``),
5. writes its output files (``write_outputs``).

:meth:`Task.run` strings these together through the one runner. ``name`` and ``version`` enter every
stored row's fingerprint; bump ``version`` whenever a prompt, split, metric or aggregation changes a
number, so no stored result of the old definition is reused.

A model never sees tasks: it answers capability calls (``match_probability``, ``generate``,
``masking_game``). A task never sees architectures: it asks the registry for a model by spec and checks
the capability it needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from connote.runs.runner import RunOutcome, WorkItem, run_items
from connote.runs.store import run_metadata

#: What a generator's ``inputs`` kind means, for the message that refuses a mismatch.
INPUT_KINDS = {"images": "any number of images", "video": "the frames of one video clip",
               "photo-ids": "precomputed features of photo ids"}


class Task(ABC):
    """Base class of connote's tasks (see the module docstring for the contract)."""

    #: Registry name, e.g. ``cv-probes``.
    name: ClassVar[str]
    #: Bumped whenever a number this task reports would change.
    version: ClassVar[int]
    #: The model capability the task calls: ``match``, ``generate`` or ``mask``.
    capability: ClassVar[str]
    #: The data the task reads (shown by ``connote tasks``).
    reads: ClassVar[str]
    #: One line for ``connote tasks``.
    title: ClassVar[str]
    #: Label of the progress bar and the closing line.
    label: ClassVar[str] = "items"
    #: The file in the run folder that records the run's fingerprint.
    results_file: ClassVar[str] = "results.json"
    #: The kinds of input a generator may take for this task (its ``inputs`` attribute; default "images").
    inputs: ClassVar[tuple[str, ...]] = ("images", "video", "photo-ids")

    batch_size: int = 8
    progress: bool = True

    # ---- the contract ---------------------------------------------------------------------
    @abstractmethod
    def work_items(self) -> list[WorkItem]:
        """The run's items with content keys (known-bad items carry their error)."""

    @abstractmethod
    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """One row per item of ``batch``; may raise (the runner retries item by item)."""

    @abstractmethod
    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        """The row of an item that could not be computed."""

    @abstractmethod
    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The paper's numbers from the rows (results.json's content, before metadata)."""

    def render(self, results: dict[str, Any]) -> str:
        """The results as Markdown (tables that render on GitHub)."""
        return ""

    def settings(self) -> dict[str, Any]:
        """Settings that change results, hashed into the fingerprint beside the model's."""
        return {}

    def config(self) -> dict[str, Any]:
        """The resolved configuration written into the run folder (defaults to :meth:`settings`)."""
        return self.settings()

    def batches(self, todo: list[WorkItem]) -> list[list[WorkItem]] | None:
        """Group the to-do items into model calls; None means consecutive groups of ``batch_size``."""
        return None

    @abstractmethod
    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        """Write the task's output files (atomically) into the run folder."""

    # ---- running --------------------------------------------------------------------------
    def check_model(self, model: Any) -> None:
        """Refuse (exit 2) a model that lacks this task's capability."""
        from connote.errors import InputError
        from connote.models.registry import require_capability

        require_capability(model, self.capability, task=self.name)
        kind = getattr(model, "inputs", "images")
        if kind not in self.inputs:
            raise InputError(f"model backend {getattr(model, 'backend', type(model).__name__)} works from "
                             f"{INPUT_KINDS.get(kind, kind)}; task {self.name} gives "
                             f"{' or '.join(INPUT_KINDS.get(k, k) for k in self.inputs)}")

    def description(self, model: Any) -> dict[str, Any]:
        return {"task": self.name, "task_version": self.version, "model": model.describe(), **self.settings()}

    def run(self, model: Any, out: str | Path, *, seed: int | None = None,
            extra_results: dict[str, Any] | None = None) -> tuple[dict[str, Any], RunOutcome]:
        """Run the task with ``model`` into ``out``; returns (results, outcome). Results are empty off rank 0."""
        self.check_model(model)
        out = Path(out)
        items = self.work_items()
        from connote.models.lazy import LazyModel

        lazy = isinstance(model, LazyModel)
        if lazy:  # built now unless every row is stored under the description its store remembers
            model.settle(out, self.description, items)
        description = self.description(model)
        memo = model.memo() if lazy else None
        outcome = run_items(out, description, items, lambda batch: self.compute(model, batch),
                            on_error=self.error_row, batches=self._batches, batch_size=self.batch_size,
                            progress=self.progress, label=self.label, model_memo=memo)
        if not outcome.is_main:
            return {}, outcome
        results = self.aggregate(outcome.rows)
        results.update({
            "task": self.name, "task_version": self.version, "fingerprint": outcome.fingerprint,
            "model_fingerprint": description["model"], "n_resumed": outcome.resumed,
            "n_computed_this_run": outcome.computed, "n_failed": outcome.failed,
            f"{self.label}_this_run": outcome.computed,
            "seconds_this_run": round(outcome.seconds, 3), "world_size": outcome.world,
            **(extra_results or {}),
            **run_metadata(self.config(), seed=seed),
        })
        self._say_if_replacing(out / self.results_file, outcome.fingerprint)
        self.write_outputs(out, outcome.rows, results)
        return results, outcome

    def _say_if_replacing(self, path: Path, fingerprint: str) -> None:
        """A run folder reused for another model or setting: say that its summary files now describe this run."""
        import json
        import sys

        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        old = before.get("fingerprint") if isinstance(before, dict) else None
        if old and old != fingerprint and self.progress:
            model = (before.get("model_fingerprint") or {}).get("backend", before.get("model", "?"))
            print(f"note: {path.parent} held the results of another run (fingerprint {old}, model {model}); "
                  f"its rows stay in store.sqlite, {path.name} and the other summary files now describe this run",
                  file=sys.stderr)

    def _batches(self, todo: list[WorkItem]) -> list[list[WorkItem]]:
        from connote.runs.runner import consecutive_batches

        grouped = self.batches(todo)
        return grouped if grouped is not None else consecutive_batches(todo, self.batch_size)
