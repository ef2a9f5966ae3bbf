"""The task contract: what every task in connote provides, and the one way a task is run.

A task is built with its data and settings (the data is read and validated in the constructor, so bad
input stops the command with exit 2 before any model loads). It then

1. binds to the model (``bind``): refuses a model that lacks the task's capability or takes other inputs
   (exit 2, before any work), and resolves what the model decides (its frames, its prompt),
2. turns its records into :class:`~connote.runs.runner.WorkItem` s, each with a content key
   (``work_items``),
3. computes rows for a batch of items with the bound model (``compute``),
4. builds the row of an item that failed (``error_row``),
5. aggregates rows into the paper's numbers (``aggregate``) and renders them as Markdown (``render``),
6. writes its output files (``write_outputs``);
7. tells ``connote report`` how its run folders are shown (``report_kind`` / ``report_columns``).

:func:`run_task` (a model spec or a built model) and :meth:`Task.run` (a built model) string these together
through the one runner, seed torch, and return one :class:`RunResult`. ``name`` and ``version`` enter
every stored row's fingerprint and every score signature a task stores; bump ``version`` whenever a prompt,
split, metric, scoring or aggregation changes a number, so no stored result of the old definition is reused.

A model never sees tasks: it answers capability calls (``match_probability``, ``generate``,
``masking_game``). A task never sees architectures: it asks the registry for a model by spec and checks
the capability it needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from connote.runs.runner import RunOutcome, WorkItem, run_items
from connote.runs.store import run_metadata

#: What a generator's ``inputs`` kind means, for the message that refuses a mismatch.
INPUT_KINDS = {"images": "any number of images", "video": "the frames of one video clip",
               "photo-ids": "precomputed features of photo ids", "text": "the prompt alone"}


#: The fields :meth:`Task.run` adds to what :meth:`Task.aggregate` returned (plus ``<label>_this_run``).
RUN_FIELDS = ("task", "task_version", "fingerprint", "model_fingerprint", "n_resumed", "n_computed_this_run",
              "n_failed", "seconds_this_run", "speed", "world_size", "code", "config", "versions", "seed",
              "created")


def _backend_name(described: Any) -> str | None:
    """The backend a model's ``describe()`` names (None for a model that names none)."""
    return described.get("backend") if isinstance(described, dict) else None


def code_digests(task: type[Task] | Task | str, backend: str | None) -> dict[str, str]:
    """The digests of the code a run runs (:func:`connote.core.code.code_digest`: a module and what it imports
    within connote, read from the source files): ``task``, the task's module (a class, an instance or a registered
    name), and ``model``, the module of the backend registered as ``backend`` (left out when none is). A run records
    them in its results file (``code``); ``connote runs`` calls a run folder stale when they differ from the code
    installed now."""
    from connote.core.code import code_digest
    from connote.models.lazy import target_module
    from connote.models.registry import MODELS

    if isinstance(task, str):
        from connote.tasks import TASKS

        task = TASKS.get(task)
    cls = task if isinstance(task, type) else type(task)
    found = {"task": code_digest(cls.__module__)}
    if backend and backend in MODELS:
        found["model"] = code_digest(target_module(MODELS.get(backend).target))
    return found


@dataclass
class RunResult:
    """What running a task gives, for every task: its run folder, its results and what the runner did.

    ``results`` is the content of the task's results file (empty off rank 0 of a distributed run);
    ``outcome`` counts resumed, computed and failed items; ``text`` is the rendered results, as the run wrote them
    to ``results.md`` ("" for a task that renders nothing). Unpacks as ``results, outcome``.
    """

    task: str
    out: Path
    results: dict[str, Any]
    outcome: RunOutcome
    text: str = ""

    @property
    def fingerprint(self) -> str:
        return self.outcome.fingerprint

    @property
    def is_main(self) -> bool:
        return self.outcome.is_main

    def __iter__(self) -> Iterator[Any]:
        yield self.results
        yield self.outcome


@dataclass
class Sample:
    """Sample data a task wrote for a run without ``--data`` (:meth:`Task.sample_data`).

    ``data`` is what the task reads; ``what`` and ``detail`` make the notice the command prints; ``model`` is the
    model spec the run uses on it unless one is given; ``options`` are option values it sets unless given.
    """

    data: Path
    what: str
    detail: str = ""
    model: str | None = None
    options: dict[str, Any] | None = None


def seed_everything(seed: int | None) -> None:
    """Seed torch (when installed) before a model loads or runs; ``None`` seeds 0."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:  # pragma: no cover - every backend that draws needs torch
        return
    import torch

    torch.manual_seed(0 if seed is None else int(seed))


def run_task(task: Task, model: Any, out: str | Path, *, seed: int | None = None,
             extra_results: dict[str, Any] | None = None, check_invariance: int = 0) -> RunResult:
    """Run ``task`` with ``model`` into the run folder ``out``: the one entry point of every task's command.

    ``model`` is a spec (``backend[:weights][?k=v]``: checked before anything loads, then loaded after
    seeding; a :class:`~connote.models.registry.ResolvedSpec` is not checked again) or a built model.
    ``seed`` seeds torch (0 when None) and is recorded in the run's metadata as given. ``extra_results`` are
    added to the results file (e.g. the model spec as typed).
    ``check_invariance`` N > 0 reruns the first N items one per model call and records how many outputs
    changed (``batch_invariance`` in the results; :mod:`connote.tasks.invariance`).
    """
    from connote.models.registry import ResolvedSpec

    if isinstance(model, (str, ResolvedSpec)):
        from connote.models.lazy import lazy_model

        # the spec is checked here (option and weights errors before the seed and any loading); the model is
        # built (after seeding) only if an item is to compute: a fully resumed run loads no model
        model = lazy_model(model, out, before_load=lambda: seed_everything(seed),
                           announce=bool(getattr(task, "progress", True)))
        try:
            return task.run(model, out, seed=seed, extra_results=extra_results, check_invariance=check_invariance)
        finally:
            model.close()  # what the run built for itself ends with it (a served engine's process)
    return task.run(model, out, seed=seed, extra_results=extra_results, check_invariance=check_invariance)


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

    #: How ``connote report`` shows this task's run folders: the name of a run kind of the report (a paper's
    #: own tables) or a lazy ``"module:attr"`` kind object; None: the section every task gets from the
    #: contract (a folder whose results file names this task; one row per run, :attr:`report_columns`).
    report_kind: ClassVar[str | None] = None
    #: The contract section's columns: (title, key path ``a/b`` into the results); empty: every number that
    #: :meth:`aggregate` put at the top level of the results.
    report_columns: ClassVar[tuple[tuple[str, str], ...]] = ()

    #: The row field ``--check-invariance`` compares between the run and batch 1 (a text or numbers); None:
    #: the task offers no such check.
    invariance_field: ClassVar[str | None] = None

    #: The task's typed options: a dataclass of :func:`connote.metrics.options.opt` fields (type, default, help,
    #: bounds), declared once; what ``connote run TASK --set key=value`` accepts, checked by the one option
    #: checker (:func:`connote.metrics.options.parse_options`, pydantic) and passed to :meth:`from_options`.
    #: None: the task takes no options.
    options: ClassVar[type | None] = None
    #: The files a run writes into its folder, named by the run command (default: the results file).
    outputs: ClassVar[tuple[str, ...]] = ()
    #: The model spec a run on given data uses when none is given (None: ``--model`` is needed with ``--data``).
    default_model: ClassVar[str | None] = None

    batch_size: int = 8
    progress: bool = True

    # ---- the contract ---------------------------------------------------------------------
    @abstractmethod
    def work_items(self) -> list[WorkItem]:
        """The run's items with content keys (known-bad items carry their error)."""

    @abstractmethod
    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """One row per item of ``batch``; may raise (the runner retries item by item). A task that defines
        :meth:`prepare` takes a third argument, ``ready``: what it made of the batch, or None (prepare it now)."""

    def prepare(self, batch: list[WorkItem]) -> Any:
        """The part of ``batch``'s work that needs no model (reading and decoding its files), which the runner
        runs on a thread one batch ahead of the model (:func:`connote.runs.runner.run_items`); a task that
        defines it takes the result in :meth:`compute`. The base class prepares nothing."""
        return None

    def _prepares(self) -> bool:
        return type(self).prepare is not Task.prepare

    @abstractmethod
    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        """The row of an item that could not be computed."""

    @abstractmethod
    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The paper's numbers from the rows (results.json's content, before metadata)."""

    def render(self, results: dict[str, Any]) -> str:
        """The results as Markdown (tables that render on GitHub): :meth:`run` writes them to ``results.md`` (with
        the batch-invariance line when checked) and the command prints them; "" (the default): no such file."""
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

    @classmethod
    def score(cls, out: str | Path, references: str | Path, **options: Any) -> Any:
        """Score a run folder against ``references`` and store the scores in it (``out/scores/``), under this
        task's :attr:`version`: the second stage of a generation task (its protocol: ``vist-storytelling``,
        ``vmc-captioning``). A task whose :meth:`aggregate` already is the paper's numbers has none."""
        from connote.core.errors import InputError

        raise InputError(f"task {cls.name} has no scoring stage: its numbers are its aggregate ({cls.results_file})")

    def summary(self, result: RunResult) -> dict[str, Any]:
        """What the task's command prints with ``--json``: by default the results."""
        return result.results

    # ---- how a command runs it (connote run TASK; connote.tasks.running) -------------------
    @classmethod
    def sample_data(cls, folder: Path) -> Sample | None:
        """Write the task's sample data into ``folder`` (a run without ``--data`` uses it); None: the task has
        none, so ``--data`` is needed."""
        return None

    @classmethod
    def from_options(cls, data: Path, options: dict[str, Any], *, seed: int = 0, progress: bool = True) -> Task:
        """The task on ``data`` with its checked ``options`` (the fields of :attr:`options`) and the run's seed and
        progress; the default passes the options to the constructor as keywords."""
        task = cls(data, **options)  # type: ignore[call-arg]
        task.progress = progress
        return task

    def extra_results(self, spec: Any) -> dict[str, Any]:
        """What the results file records beside the numbers (default: nothing; e.g. the model spec as typed).
        ``spec`` is the run's checked spec (a :class:`~connote.models.registry.ResolvedSpec`; ``str(spec)`` is the
        text as given), the one the model is built from."""
        return {}

    def model_results(self, model: Any) -> dict[str, Any]:
        """What the results file records of the run's own model (default: nothing), asked once the items are
        done; ``model`` is the model the run computed with (a :class:`~connote.models.lazy.LazyModel` may be
        unbuilt: every row was resumed)."""
        return {}

    def print_result(self, result: RunResult, *, as_json: bool = False) -> int:
        """Print what the run command shows (``as_json``: :meth:`summary` as JSON; else the rendered results and
        the run folder) and return the command's exit status (0; a task may return 1 when items failed)."""
        import json

        if as_json:
            print(json.dumps(self.summary(result), indent=2, default=str))
            return 0
        if result.text:
            print(result.text)
        print(f"run folder: {result.out} ({', '.join(self.outputs or (self.results_file,))})")
        errors = result.results.get("n_errors")
        if errors and "items.jsonl" in self.outputs:
            import sys

            print(f"{errors} item(s) errored and were excluded; see items.jsonl", file=sys.stderr)
        return 0

    # ---- running --------------------------------------------------------------------------
    def bind(self, model: Any) -> None:
        """Bind the task to ``model`` before any work; called by :meth:`run` for every task.

        The default refuses (exit 2) a model that lacks this task's capability or works from other inputs
        than the task gives. A task that takes settings from the model (frames, prompt, whether photos are
        read) overrides this, calls ``super().bind(model)`` and resolves them here.
        """
        from connote.core.errors import InputError
        from connote.models.registry import require_capability

        require_capability(model, self.capability, task=self.name)
        from connote.models.registry import inputs_of

        kind = inputs_of(model)  # declared at its registration
        if kind not in self.inputs:
            raise InputError(f"model backend {getattr(model, 'backend', type(model).__name__)} works from "
                             f"{INPUT_KINDS.get(kind, kind)}; task {self.name} gives "
                             f"{' or '.join(INPUT_KINDS.get(k, k) for k in self.inputs)}")

    def description(self, model: Any) -> dict[str, Any]:
        return {"task": self.name, "task_version": self.version, "model": model.describe(), **self.settings()}

    def run(self, model: Any, out: str | Path, *, seed: int | None = None,
            extra_results: dict[str, Any] | None = None, check_invariance: int = 0) -> RunResult:
        """Seed, bind to ``model`` and run through the runner into ``out`` (see :func:`run_task`).

        A :class:`~connote.models.lazy.LazyModel` seeds just before it is built (and a fully resumed run, which
        builds none, imports no torch); any other model is seeded here."""
        from connote.models.lazy import LazyModel

        lazy = isinstance(model, LazyModel)
        if check_invariance:
            from connote.core.errors import InputError

            if self.invariance_field is None:
                raise InputError(f"task {self.name} has no batch-invariance check (--check-invariance)")
            if int(check_invariance) < 0:
                raise InputError(f"--check-invariance must be at least 0, got {check_invariance}")
        if not lazy:
            seed_everything(seed)
        self.bind(model)
        out = Path(out)
        items = self.work_items()
        if lazy:  # built now unless every row is stored under the description its store remembers
            model.settle(out, self.description, items)
        description = self.description(model)
        memo = model.memo() if lazy else None
        from connote.runs.current import running_in
        from connote.runs.speed import measuring, speed_block, speed_line
        from connote.runs.store import results_path

        invariance = None
        with running_in(out), measuring() as meter:  # a model may keep files of its own there (a served engine's log)
            prepares = self._prepares()
            outcome = run_items(out, description, items,
                                (lambda batch, ready: self.compute(model, batch, ready)) if prepares
                                else (lambda batch: self.compute(model, batch)),
                                on_error=self.error_row, batches=self._batches, batch_size=self.batch_size,
                                progress=self.progress, label=self.label, model_memo=memo,
                                prepare=self.prepare if prepares else None)
            speed = speed_block(meter, computed=outcome.computed, resumed=outcome.resumed, seconds=outcome.seconds)
            if self.progress and outcome.is_main and outcome.computed:
                import sys

                print(f"speed: {speed_line(speed)}", file=sys.stderr)
            if check_invariance:
                from connote.tasks.invariance import check_batch_invariance, invariance_line

                invariance = check_batch_invariance(self, model, out, description, items, outcome.rows,
                                                    int(check_invariance), lambda batch: self.compute(model, batch))
                if invariance and self.progress:
                    import sys

                    print(invariance_line(invariance), file=sys.stderr)
        if not outcome.is_main:
            return RunResult(self.name, out, {}, outcome)
        results = self.aggregate(outcome.rows)
        if invariance:
            results["batch_invariance"] = invariance
        built = model._model if lazy else model
        if getattr(built, "memory_events", None):  # batches that ran out of memory and were halved
            results["memory_events"] = list(built.memory_events)
        results.update({
            "task": self.name, "task_version": self.version, "fingerprint": outcome.fingerprint,
            "model_fingerprint": description["model"], "n_resumed": outcome.resumed,
            "n_computed_this_run": outcome.computed, "n_failed": outcome.failed,
            f"{self.label}_this_run": outcome.computed,
            "seconds_this_run": round(outcome.seconds, 3), "speed": speed, "world_size": outcome.world,
            "code": code_digests(self, _backend_name(description["model"])),
            **({"n_set_aside": outcome.set_aside} if outcome.set_aside else {}),
            **(extra_results or {}), **self.model_results(model),
            **run_metadata(self.config(), seed=seed),
        })
        self._say_if_replacing(results_path(out, self.results_file), outcome.fingerprint)  # an older run.json too
        self.write_outputs(out, outcome.rows, results)
        text = self.render(results)
        if text:  # rendered once: written here, printed by the command from the RunResult
            from connote.runs.store import write_text

            if invariance:  # the rendered results say it too
                from connote.tasks.invariance import invariance_line

                text = f"{text.rstrip(chr(10))}\n\n{invariance_line(invariance)}\n"
            write_text(out / "results.md", text)
        return RunResult(self.name, out, results, outcome, text)

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
