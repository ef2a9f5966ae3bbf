"""``connote score`` asks numpy's OpenBLAS for one thread (its pool costs start-up; the caption metrics do no
matrix products), unless the user set a number."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = ("import typer\nfrom connote.cli.score import register\nregister(typer.Typer())\nimport os, sys\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)\n")


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("2", "2")])
def test_score_command_sets_one_blas_thread_unless_the_user_chose(given, seen):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [seen, "True"]  # set before the flags' option classes import numpy


def test_score_command_freezes_the_collector_only_at_exit(tmp_path):
    """The shutdown collection is skipped (gc.freeze in an exit handler), and only at exit."""
    (tmp_path / "h.json").write_text('{"a": "a cat sat"}', encoding="utf-8")
    (tmp_path / "r.json").write_text('{"a": ["the cat sat"]}', encoding="utf-8")
    code = ("import atexit, gc, io, contextlib, sys\nfrom connote.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['score', '--hyp', {str(tmp_path / 'h.json')!r}, '--refs', {str(tmp_path / 'r.json')!r},"
            " '--metrics', 'bleu,rouge_l', '--json'])\n"
            "print(rc, gc.get_freeze_count() == 0)\natexit._run_exitfuncs()\nprint(gc.get_freeze_count() > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "True", "True"]
