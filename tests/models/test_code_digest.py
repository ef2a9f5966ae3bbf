"""The code digest in a model's identity covers the code its backend runs, and only that (issue 37, item 3): an edit to
a command module keeps an hf-blip-itm memory, an edit to the matching engine it imports drops it. The edits are made
to a copy of the package, which the digest is pointed at."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import connote
from connote.core import code
from connote.models.lazy import model_identity
from tests.support import tiny_models


def _forget() -> None:
    for cached in (code.module_file, code.module_closure, code.code_digest):
        cached.cache_clear()


@pytest.fixture()
def package(tmp_path, monkeypatch) -> Path:
    """A copy of the connote package that the digest reads in place of the installed one."""
    copy = tmp_path / "connote"
    shutil.copytree(Path(connote.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    real = code._package_folder
    monkeypatch.setattr(code, "_package_folder", lambda top: copy if top == "connote" else real(top))
    _forget()
    yield copy
    _forget()


def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")


@pytest.fixture(scope="module")
def blip_dir(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    return tiny_models.tiny_blip(tmp_path_factory.mktemp("blip") / "blip")


def test_an_edit_outside_the_backends_code_keeps_its_identity(package, blip_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = f"hf-blip-itm:{blip_dir}"
    before = model_identity(spec)
    assert before is not None
    for outside in ("vist/cli/generate.py", "cv_probes/report.py", "tasks/running.py"):
        _edit(package / outside)
        _forget()
        assert model_identity(spec) == before, outside


@pytest.mark.parametrize("inside", ["models/engine.py", "models/registry.py", "core/files.py", "models/__init__.py"])
def test_an_edit_to_the_code_the_backend_runs_changes_its_identity(package, blip_dir, monkeypatch, inside):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = f"hf-blip-itm:{blip_dir}"
    before = model_identity(spec)
    _edit(package / inside)
    _forget()
    assert model_identity(spec) not in (None, before)


def test_the_walk_follows_imports_inside_functions_and_takes_package_data(package):
    assert "connote.models.hub" in code.module_closure("connote.models.registry")  # imported inside check_weights
    closure = code.module_closure("connote.models.objects")
    assert "connote.media.embedded" in closure and "connote.models.registry" in closure
    assert "connote.vist.cli" not in closure and "connote.cli" not in closure
    before = code.code_digest("connote.models.objects")
    _edit(package / "media" / "assets" / "imagenet_labels.tsv")  # the embedded classifier's labels
    _forget()
    assert code.code_digest("connote.models.objects") != before
