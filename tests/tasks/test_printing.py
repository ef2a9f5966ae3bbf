"""A run command prints the results it rendered (issue 37, item 3): the task keeps the text it wrote to results.md
(the batch-invariance line included) and never reads the file back to print it."""

from __future__ import annotations

import pathlib
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from connote.cli import main  # noqa: E402
from tests.support import tiny_models  # noqa: E402
from tests.support.tiny_manifest import write_manifest  # noqa: E402


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_clip(tmp_path_factory.mktemp("clip") / "clip")


@pytest.fixture()
def no_read_back(monkeypatch) -> None:
    read_text = pathlib.Path.read_text

    def refusing(self, *args, **kwargs):
        if self.name == "results.md":
            pytest.fail(f"read back {self}")
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", refusing)


@pytest.mark.parametrize("invariance", [[], ["--check-invariance", "2"]])
def test_the_printed_results_are_what_results_md_holds(tmp_path, clip_dir, no_read_back, capsys, invariance):
    data, out = write_manifest(tmp_path / "data"), tmp_path / "run"
    for _ in range(2):  # fresh, then resumed
        assert main(["cv-probes", "run", "--data", str(data), "--model", f"hf-clip:{clip_dir}", "--out", str(out),
                     "--no-progress", *invariance]) == 0
        printed = capsys.readouterr().out
        with open(out / "results.md", encoding="utf-8") as f:
            written = f.read()
        assert "| " in written and printed.startswith(written)
        assert ("batch invariance" in written.lower()) == bool(invariance)
