"""The runner and the store: no stale row is reused, one bad pair never poisons its batch, one writer."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from PIL import Image

from connote.cli import main
from connote.core.errors import InputError
from connote.cv_probes.task import run_probe
from connote.runs import RunStore
from connote.runs.runner import WorkItem, run_items


class Recording:
    """A matcher that records what it was asked, p = 0.9 for "begs" captions, 0.2 otherwise."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.seen: list[str] = []
        self.calls = 0
        self.fail_on = fail_on

    def describe(self) -> dict:
        return {"backend": "recording"}

    def match_probability(self, images, captions, pairs):
        self.calls += 1
        asked = [captions[c] for _, c in pairs]
        if self.fail_on is not None and any(self.fail_on in c for c in asked):
            raise ValueError(f"the tokenizer rejects {self.fail_on!r}")
        self.seen.extend(asked)
        return [0.9 if "begs" in c else 0.2 for c in asked]


def _manifest(folder: Path, captions: dict[str, str], colour=(200, 30, 30)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    img = folder / "a.png"
    if not img.exists():
        Image.new("RGB", (16, 16), colour).save(img)
    rows = ["item_id,image,image_kind,caption,caption_kind"]
    rows += [f"{k},a.png,SG,{c},SG" for k, c in captions.items()]
    path = folder / "probes.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_another_manifest_with_the_same_ids_is_recomputed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _manifest(tmp_path / "one", {"x": "a man begs", "y": "a man begs"})
    run_probe(first, out=out, model_obj=Recording(), progress=False)
    second = _manifest(tmp_path / "two", {"x": "a man sits", "y": "a man sits"})
    m = Recording()
    res = run_probe(second, out=out, model_obj=m, progress=False)
    assert m.seen == ["a man sits", "a man sits"]  # nothing reused from the other manifest
    assert res["n_resumed"] == 0 and res["cells"]["SG-SG"]["accuracy"] == 0.0


def test_an_edited_caption_recomputes_only_that_item(tmp_path: Path) -> None:
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs", "y": "a woman begs", "z": "a child begs"})
    run_probe(path, out=out, model_obj=Recording(), progress=False)
    _manifest(tmp_path / "d", {"x": "a man begs", "y": "a woman sits", "z": "a child begs"})
    m = Recording()
    res = run_probe(path, out=out, model_obj=m, progress=False)
    assert m.seen == ["a woman sits"] and res["n_resumed"] == 2
    items = (out / "items.jsonl").read_text()
    assert "a woman sits" in items and "a woman begs" not in items


def test_a_replaced_image_with_the_old_stamp_is_recomputed(tmp_path: Path) -> None:
    """Same size and mtime (``touch -r``), other bytes: the content hash sees it."""
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs"}, colour=(200, 30, 30))
    run_probe(path, out=out, model_obj=Recording(), progress=False)
    img = tmp_path / "d" / "a.png"
    st = img.stat()
    other = tmp_path / "other.png"
    Image.new("RGB", (16, 16), (30, 30, 200)).save(other)
    data = other.read_bytes()
    assert len(data) == st.st_size  # a same-size replacement
    img.write_bytes(data)
    os.utime(img, ns=(st.st_atime_ns, st.st_mtime_ns))
    m = Recording()
    run_probe(path, out=out, model_obj=m, progress=False)
    assert m.seen == ["a man begs"]


def test_another_model_never_reuses_rows(tmp_path: Path) -> None:
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    run_probe(path, out=out, model_obj=Recording(), progress=False)

    class Other(Recording):
        def describe(self) -> dict:
            return {"backend": "recording", "revision": "v2"}

    m = Other()
    run_probe(path, out=out, model_obj=m, progress=False)
    assert m.seen == ["a man begs"]


def test_one_bad_pair_does_not_poison_its_batch(tmp_path: Path) -> None:
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs", "bad": "a man ☃ begs", "z": "a man sits"})
    m = Recording(fail_on="☃")
    res = run_probe(path, out=out, model_obj=m, progress=False)
    assert res["n_errors"] == 1 and res["n_scored"] == 2
    rows = {r["item_id"]: r for r in map(__import__("json").loads, (out / "items.jsonl").read_text().splitlines())}
    assert "tokenizer rejects" in rows["bad"]["error"] and rows["x"]["p_match"] == 0.9
    # a rerun retries only the bad pair, alone
    m2 = Recording(fail_on="☃")
    res2 = run_probe(path, out=out, model_obj=m2, progress=False)
    assert m2.calls == 1 and m2.seen == [] and res2["n_resumed"] == 2


def test_a_second_run_into_the_same_folder_is_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    holder = RunStore(out, lock=True)  # a run in progress
    try:
        assert main(["probe", "--data", str(path), "--out", str(out), "--model", "objects", "-q"]) == 2
        err = capsys.readouterr().err
        assert "another connote run (pid" in err and "choose another --out" in err
    finally:
        holder.close()
    run_probe(path, out=out, model_obj=Recording(), progress=False)  # free again once it ended


def test_a_damaged_store_is_named(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "store.sqlite").write_bytes(b"this is not a database" * 100)
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    with pytest.raises(InputError, match="store.sqlite: the run store is damaged or not a SQLite file"):
        run_probe(path, out=out, model_obj=Recording(), progress=False)


def test_out_naming_an_existing_file(tmp_path: Path, capsys) -> None:
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    target = tmp_path / "results.txt"
    target.write_text("mine")
    assert main(["probe", "--data", str(path), "--out", str(target), "--model", "objects", "-q"]) == 2
    assert "the run folder is an existing file" in capsys.readouterr().err
    assert target.read_text() == "mine"


def test_rows_of_an_older_store_layout_are_not_reused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    with sqlite3.connect(out / "store.sqlite") as con:  # the layout before items were content-keyed
        con.execute("CREATE TABLE results (fingerprint TEXT, item_id TEXT, data TEXT, error TEXT, created REAL)")
        con.execute("INSERT INTO results VALUES ('x', 'x', '{}', NULL, 0)")
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    m = Recording()
    run_probe(path, out=out, model_obj=m, progress=False)
    assert m.seen == ["a man begs"]


def test_runner_counts_and_keys(tmp_path: Path) -> None:
    """The runner on its own: known-bad items never reach compute; rows carry the content key."""
    seen: list[str] = []

    def compute(batch):
        seen.extend(w.item_id for w in batch)
        return [{"v": w.payload * 2} for w in batch]

    items = [WorkItem("a", "k1", 1), WorkItem("b", "k2", 2, error="unreadable"), WorkItem("c", "k3", 3)]
    out = run_items(tmp_path, {"task": "t"}, items, compute, on_error=lambda w, m: {"v": None, "error": m},
                    progress=False)
    assert seen == ["a", "c"] and (out.total, out.resumed, out.computed, out.failed) == (3, 0, 2, 1)
    assert [r["item_key"] for r in out.rows] == ["k1", "k2", "k3"] and out.rows[1]["error"] == "unreadable"
    again = run_items(tmp_path, {"task": "t"}, items, compute, on_error=lambda w, m: {"v": None, "error": m},
                      progress=False)
    assert seen == ["a", "c"] and again.resumed == 2
    with pytest.raises(InputError, match="item id 'a' occurs more than once"):
        run_items(tmp_path, {"task": "t"}, items + [WorkItem("a", "k9", 9)], compute,
                  on_error=lambda w, m: {"error": m}, progress=False)
    shutil.rmtree(tmp_path)


def test_reusing_out_for_another_model_is_said(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    path = _manifest(tmp_path / "d", {"x": "a man begs"})
    run_probe(path, out=out, model_obj=Recording(), progress=False)

    class Other(Recording):
        def describe(self) -> dict:
            return {"backend": "other"}

    capsys.readouterr()
    run_probe(path, out=out, model_obj=Other(), progress=True)
    err = capsys.readouterr().err
    assert "held the results of another run" in err and "model recording" in err


def test_prepare_runs_one_batch_ahead_on_a_thread_and_a_failure_costs_no_item(tmp_path: Path) -> None:
    """``prepare``: batch k+1 is prepared on a thread while compute holds batch k (compute waits for it: run
    serially, the wait would end at the timeout and the test fail); compute gets each batch's result; a batch
    whose preparation raised, and the items of a failed batch retried one by one, get None and are computed."""
    import threading

    prepared: dict[str, threading.Event] = {}
    threads: set[str] = set()
    calls: list[tuple[list[str], object]] = []

    def prepare(batch):
        threads.add(threading.current_thread().name)
        first = batch[0].item_id
        prepared.setdefault(first, threading.Event()).set()
        if first == "c":
            raise OSError("disk went away")
        return f"ready-{first}"

    def compute(batch, ready):
        ids = [w.item_id for w in batch]
        calls.append((ids, ready))
        following = {"a": "c", "c": "e"}.get(ids[0])
        if ready is not None and following:
            assert prepared.setdefault(following, threading.Event()).wait(10), f"{following} not read ahead"
        if ids == ["e", "f"]:
            raise RuntimeError("one bad item in the batch")
        return [{"v": w.payload, "ready": ready} for w in batch]

    items = [WorkItem(x, f"k{x}", k) for k, x in enumerate("abcdef")]
    out = run_items(tmp_path, {"task": "t"}, items, compute, on_error=lambda w, m: {"v": None, "error": m},
                    batch_size=2, progress=False, prepare=prepare)
    assert threads == {"connote-prefetch"}
    assert calls == [(["a", "b"], "ready-a"), (["c", "d"], None), (["e", "f"], "ready-e"), (["e"], None),
                     (["f"], None)]
    assert [r["v"] for r in out.rows] == [0, 1, 2, 3, 4, 5] and out.failed == 0
    assert [r["ready"] for r in out.rows] == ["ready-a", "ready-a", None, None, None, None]
