"""The one runner: work items -> batches -> model -> rows in the run store.

Every task (probes, MM-SHAP, storytelling, metaphor captioning) runs through :func:`run_items`:

* items that are already done — same run fingerprint *and* same item content key, no error — are
  reused ("resumed N of M"); everything else is computed;
* items known to be bad before any model call (unreadable line, empty caption) are recorded with
  their error and never sent to the model;
* a batch whose model call raises is retried item by item, so one bad pair (a caption the tokenizer
  rejects, an overflowing log-probability) is the only error and the rest of its batch is kept;
* each batch's rows are committed as soon as they exist, so a kill loses at most the batch in flight;
* under ``torchrun``/``accelerate launch`` the batches are sharded over ranks and rank 0 collects;
* one progress style, and a closing line that counts failures honestly.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import ConnoteError
from connote.core.prefetch import prefetch
from connote.core.progress import progress_bar
from connote.runs.distributed import Dist, init_distributed
from connote.runs.store import RunStore


@dataclass
class WorkItem:
    """One unit of work: its id, the hash of its content, what the task needs, or a known error."""

    item_id: str
    key: str
    payload: Any = None
    error: str | None = None


@dataclass
class RunOutcome:
    """What a run did; ``rows`` (in item order) only on the main rank."""

    fingerprint: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    resumed: int = 0
    computed: int = 0
    failed: int = 0
    seconds: float = 0.0
    world: int = 1
    is_main: bool = True
    #: damaged stored rows moved aside and computed again
    set_aside: int = 0

    def summary_line(self, label: str) -> str:
        return (f"{label}: {self.total} item(s): {self.resumed} resumed, {self.computed} computed now, "
                f"{self.failed} failed" + (f" ({self.set_aside} damaged row(s) set aside and computed again)"
                                            if self.set_aside else ""))


def error_message(exc: BaseException) -> str:
    """How an exception is recorded in an item's ``error`` field."""
    from connote.core.errors import ConnoteError

    return str(exc) if isinstance(exc, ConnoteError) else f"{type(exc).__name__}: {exc}"


def consecutive_batches(items: Sequence[WorkItem], size: int) -> list[list[WorkItem]]:
    size = max(1, int(size))
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def _compute_with_retry(compute: Callable[[list[WorkItem]], list[dict[str, Any]]], batch: list[WorkItem],
                        on_error: Callable[[WorkItem, str], dict[str, Any]]) -> list[dict[str, Any]]:
    try:
        rows = compute(batch)
        if len(rows) != len(batch):
            raise RuntimeError(f"the task returned {len(rows)} rows for {len(batch)} items")
        return rows
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - one failing call must not lose the rest of the run
        if len(batch) == 1:
            return [on_error(batch[0], error_message(exc))]
    out: list[dict[str, Any]] = []
    for item in batch:  # find the bad item(s): only they become errors
        out.extend(_compute_with_retry(compute, [item], on_error))
    return out


def run_items(out: str | Path, description: Mapping[str, Any], items: Sequence[WorkItem],
              compute: Callable[[list[WorkItem]], list[dict[str, Any]]], *,
              on_error: Callable[[WorkItem, str], dict[str, Any]],
              batches: Callable[[list[WorkItem]], list[list[WorkItem]]] | None = None, batch_size: int = 8,
              progress: bool = True, label: str = "items", dist: Dist | None = None,
              log: Callable[[str], None] | None = None,
              model_memo: tuple[str, Mapping[str, Any]] | None = None,
              prepare: Callable[[list[WorkItem]], Any] | None = None) -> RunOutcome:
    """Compute every item not already stored with the same fingerprint and content key.

    ``compute(batch)`` returns one row (a dict) per item, in order; the runner adds ``item_id``,
    ``item_key`` and ``error`` (None unless the row sets one). ``on_error(item, message)`` builds the
    row of an item that failed. ``description`` is everything that makes the run's numbers (task,
    version, model fingerprint, settings); it is hashed into the run fingerprint.

    ``prepare(batch)``, when given, is the part of a batch's work that needs no model (reading and decoding
    its files): it runs on a thread one batch ahead, so the next batch's files are read while the model works
    on this one, and ``compute(batch, ready)`` gets its result. A batch whose preparation raised, and the
    items of a failed batch retried one by one, get ``ready=None`` (``compute`` then prepares them itself).
    """
    kwargs = dict(on_error=on_error, batches=batches, batch_size=batch_size, progress=progress, label=label,
                  log=log, model_memo=model_memo, prepare=prepare)
    if dist is not None:
        return _run_items(out, description, items, compute, dist=dist, **kwargs)
    dist = init_distributed()
    try:  # the process group is closed on every way out: a rank that exits with it open aborts (gloo's threads)
        return _run_items(out, description, items, compute, dist=dist, **kwargs)
    finally:
        dist.close()


def _prepared(units: Sequence[list[WorkItem]],
              prepare: Callable[[list[WorkItem]], Any] | None) -> Iterator[tuple[list[WorkItem], Any]]:
    """``(unit, what prepare made of it)``, prepared one unit ahead on a thread; None without ``prepare``, or
    where it raised (the error is the items' to meet when ``compute`` prepares them itself)."""
    if prepare is None:
        yield from ((unit, None) for unit in units)
        return

    def ready(unit: list[WorkItem]) -> Any:
        try:
            return prepare(unit)
        except Exception:  # noqa: BLE001 - compute prepares the unit again and meets the error per item
            return None

    yield from prefetch(units, ready, depth=1)


def _run_items(out: str | Path, description: Mapping[str, Any], items: Sequence[WorkItem],
               compute: Callable[[list[WorkItem]], list[dict[str, Any]]], *,
               on_error: Callable[[WorkItem, str], dict[str, Any]],
               batches: Callable[[list[WorkItem]], list[list[WorkItem]]] | None, batch_size: int,
               progress: bool, label: str, dist: Dist, log: Callable[[str], None] | None,
               model_memo: tuple[str, Mapping[str, Any]] | None,
               prepare: Callable[[list[WorkItem]], Any] | None = None) -> RunOutcome:
    if log is None:
        def log(msg: str) -> None:
            if progress:
                print(msg, file=sys.stderr)
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        from connote.core.errors import InputError

        raise InputError(f"item id {dup!r} occurs more than once; ids must be unique")
    if Path(out).exists() and not Path(out).is_dir():
        from connote.core.errors import InputError

        raise InputError("the run folder is an existing file, not a folder", path=out)
    store = None
    refusal = None
    if dist.is_main:  # rank 0 creates (or migrates) the store and holds the folder's lock
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            store = RunStore(out, lock=True)
        except ConnoteError as exc:  # another run holds the folder, or its store is damaged
            refusal = exc
        except OSError as exc:  # the folder cannot be made
            from connote.core.errors import InputError

            refusal = InputError(f"the run folder cannot be created ({exc.strerror})", path=out)
    # every rank learns of rank 0's refusal and stops with it, instead of waiting at a barrier for a rank
    # that is gone (under srun/mpirun nothing else would stop them)
    message = dist.agree(None if refusal is None else str(refusal))
    if refusal is not None:
        raise refusal
    if message is not None:
        from connote.core.errors import InputError

        raise InputError(f"rank 0 refused the run folder: {message}")
    if store is None:
        store = RunStore(out)
    try:
        fp = store.register(description)
        if model_memo is not None and dist.is_main:
            store.remember_model(*model_memo)
        set_aside = store.set_aside_damaged(fp) if dist.is_main else {}
        if set_aside:  # computed again below; said now (also without progress), and in the closing line
            shown = "; ".join(f"{i}: {why}" for i, why in list(set_aside.items())[:3])
            print(f"note: {store.path}: {len(set_aside)} damaged row(s) set aside (table set_aside) and computed "
                  f"again ({shown}{'; ...' if len(set_aside) > 3 else ''})", file=sys.stderr, flush=True)
        dist.barrier()  # the rows set aside are gone before any rank decides what to compute
        keys = {it.item_id: it.key for it in items}
        reusable = store.reusable(fp, keys)
        dist.barrier()  # every rank must shard the same to-do list, before any rank writes
        bad = [it for it in items if it.error is not None]
        todo = [it for it in items if it.error is None and it.item_id not in reusable]
        if dist.is_main and bad:
            store.put(fp, [_finish(on_error(it, it.error or "error"), it) for it in bad])
        units = dist.shard((batches or (lambda xs: consecutive_batches(xs, batch_size)))(todo))
        started = time.time()
        n_todo = sum(len(u) for u in units)
        resumed = len(reusable)
        text = f"{label}: {len(todo)} to compute" + (f", resumed {resumed} of {len(items)}" if resumed else "")
        if dist.world > 1:  # rank 0 shows its own share; the others compute theirs alongside
            text += f"; rank 0's share of {dist.world}"
        if progress and dist.is_main and not sys.stderr.isatty():  # a log shows this at once, not at the end
            print(f"{len(items)} {label}: {resumed} stored, {len(todo)} to compute"
                  + (f", {len(bad)} known bad" if bad else ""), file=sys.stderr, flush=True)
        with progress_bar(n_todo, text, enabled=progress and dist.is_main) as bar:
            for unit, ready in _prepared(units, prepare):
                call = compute if prepare is None else (
                    lambda batch, unit=unit, ready=ready: compute(batch, ready if batch is unit else None))
                rows = _compute_with_retry(call, unit, on_error)
                store.put(fp, [_finish(r, it) for r, it in zip(rows, unit)])
                bar.advance(len(unit), stored=True)
        elapsed = time.time() - started
        dist.barrier()
        outcome = RunOutcome(fingerprint=fp, total=len(items), resumed=resumed, computed=len(todo),
                             seconds=elapsed, world=dist.world, is_main=dist.is_main, set_aside=len(set_aside))
        if dist.is_main:
            stored = store.rows(fp)
            rows = []
            for it in items:
                row = stored.get(it.item_id)
                if row is None or row.get("item_key") != it.key:
                    row = _finish(on_error(it, "not computed (a rank stopped before this item)"), it)
                rows.append(row)
            outcome.rows = rows
            outcome.failed = sum(r.get("error") is not None for r in rows)
            log(outcome.summary_line(label))
    finally:
        store.close()
    dist.barrier()
    return outcome


def _finish(row: dict[str, Any], item: WorkItem) -> dict[str, Any]:
    row = dict(row)
    row["item_id"] = item.item_id
    row["item_key"] = item.key
    row.setdefault("error", None)
    return row
