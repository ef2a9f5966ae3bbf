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
