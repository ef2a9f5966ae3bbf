"""The run folder is locked and the spec checked before anything is written or loaded (issue 22, item 5): probe,
explain, story generate, metaphor caption, and the probe suites' run and explain (issue 39, item 12), metaphor synth and
story demo (issue 37, item 1)."""

from __future__ import annotations

import os

import pytest

from connote.cli import main

COMMANDS = {"probe": ["probe", "--quiet"], "explain": ["explain", "--quiet"],
            "story generate": ["story", "generate", "--no-progress"],
            "metaphor caption": ["metaphor", "caption", "--quiet"],
            # issue 39, item 12: the probe suites' runs lock their folder the same way
            "suite run": ["suite", "run", "sugarcrepe", "--no-progress"],
            "suite explain": ["suite", "explain", "valse", "--no-progress"],
            # issue 37, item 1: metaphor synth is an alias of the one run path too
            "metaphor synth": ["metaphor", "synth", "--quiet"], "story demo": ["story", "demo", "--json"]}


def _fail_if_called(*args, **kwargs):
    raise AssertionError("a model was loaded although the run folder is locked")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_second_run_into_a_locked_folder_is_refused_before_writing_or_loading(command, tmp_path, monkeypatch,
                                                                                  capsys):
    from connote.runs.store import _lock_folder

    out = tmp_path / "run"
    out.mkdir()
    lock = _lock_folder(out)  # another run holds the folder
    try:
        monkeypatch.setattr("connote.models.registry.load_model", _fail_if_called)
        code = main([*COMMANDS[command], "--out", str(out)])
        assert sorted(p.name for p in out.iterdir()) == [".connote.lock"]  # the holder's lock; no sample/, no store
    finally:
        lock.release()
    err = capsys.readouterr().err
    assert code == 2 and "another connote run" in err and f"pid {os.getpid()}" in err
    assert list(out.iterdir()) == []  # the holder's lock file went with its release


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_invalid_spec_leaves_no_run_folder(command, tmp_path, capsys):
    out = tmp_path / "x"
    assert main([*COMMANDS[command], "--model", "no-such-backend", "--out", str(out)]) == 2
    assert "no-such-backend" in capsys.readouterr().err
    assert not out.exists()


def test_the_store_uses_the_lock_its_command_holds(tmp_path):
    from connote.runs.store import RunLockedError, RunStore, hold_run_folder

    with hold_run_folder(tmp_path / "r") as folder:
        with RunStore(folder, lock=True) as store:  # same command: no self-refusal
            store.register({"backend": "demo"})
        with pytest.raises(RunLockedError):
            from connote.runs.store import _lock_folder

            _lock_folder(folder)  # anyone else is refused while the command runs
    with RunStore(tmp_path / "r", lock=True):  # released at the end of the command
        pass


def test_a_refused_run_leaves_no_lock_file_and_no_folder_it_made(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,image\n1,a.jpg\n", encoding="utf-8")
    made, kept = tmp_path / "new-run", tmp_path / "existing"
    kept.mkdir()
    for out in (made, kept):
        assert main(["cv-probes", "run", "--data", str(bad), "--out", str(out), "--no-progress"]) == 2
        assert "missing required column" in capsys.readouterr().err
    assert not made.exists()  # made for the run, refused before anything was written: gone
    assert kept.is_dir() and list(kept.iterdir()) == []  # the user's folder stays, without a stale .connote.lock


def test_a_finished_run_leaves_no_lock_file(tmp_path):
    from connote.runs.store import RunStore, hold_run_folder

    with hold_run_folder(tmp_path / "held") as folder, RunStore(folder, lock=True) as store:
        store.register({"backend": "demo"})
        assert (folder / ".connote.lock").is_file()
    with RunStore(tmp_path / "store-only", lock=True) as store:
        store.register({"backend": "demo"})
    for folder in (tmp_path / "held", tmp_path / "store-only"):
        assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("store.sqlite")) == [], folder
