"""A missing optional package skips a test on a user's machine and fails it under ``CI=true``
(tests/support/needs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TOP = """
import pytest

pytest.importorskip("no_such_module_x")


def test_a():
    pass
"""

INSIDE = """
import pytest


@pytest.fixture
def av():
    return pytest.importorskip("av.no_such")


def test_fixture(av):
    pass


def test_body():
    pytest.importorskip("openai.no_such")


def test_other_skip():
    pytest.skip("a reason that is not a missing package")
"""


def run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_top.py").write_text(textwrap.dedent(TOP))
    (tmp_path / "test_inside.py").write_text(textwrap.dedent(INSIDE))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if ci is not None:
        env["CI"] = ci
    args = ["-p", "tests.support.needs", "-p", "no:cacheprovider", "-rA", "--continue-on-collection-errors",
            "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)]
    return subprocess.run([sys.executable, "-m", "pytest", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


@pytest.mark.slow
def test_without_ci_a_missing_package_skips_with_its_reason(tmp_path: Path) -> None:
    proc = run(tmp_path, None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 skipped" in proc.stdout and "could not import 'no_such_module_x'" in proc.stdout


@pytest.mark.slow
def test_under_ci_a_missing_package_fails_naming_the_package_and_its_extra(tmp_path: Path) -> None:
    proc = run(tmp_path, "true")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed, 1 skipped, 2 errors" in out, out  # errors: collecting the module, setting up the fixture
    assert "the optional package 'no_such_module_x' is missing: pip install -e '.[dev]'" in out
    assert "the optional package 'av.no_such' is missing: pip install -e '.[video]'" in out
    assert "the optional package 'openai.no_such' is missing: pip install -e '.[api]'" in out
    assert "SKIPPED [1] test_inside.py:" in out and "a reason that is not a missing package" in out


def test_every_folder_beside_the_clone_a_test_reads_is_in_the_readme_skip_table() -> None:
    """A test that reads ``../shared/NAME`` skips without it; the README's table of skips names each such folder (it
    lacked ``../shared/seeds``, which the published-tables test reads)."""
    import re

    read = set()
    for path in (ROOT / "tests").rglob("*.py"):
        read |= set(re.findall(r'"shared" / "([a-z_]+)"', path.read_text(encoding="utf-8")))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = [line for line in readme.splitlines() if line.startswith("| `../shared/")]
    assert read >= {"data", "seeds"}, read
    for name in sorted(read):
        assert any(line.startswith(f"| `../shared/{name}`") for line in table), name
