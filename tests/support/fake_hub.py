"""A Hugging Face hub cache in a temporary folder, laid out as huggingface_hub writes it (``models--ORG--NAME``
with ``snapshots/COMMIT``, ``refs/main`` and ``.no_exist/COMMIT/FILE`` for a file the repository lacks), so that
hub ids load offline through ``from_pretrained`` and a test can move an id to a new commit as a later download
would."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def reindent(folder: Path) -> None:
    """Change one file of a snapshot and keep it loadable: its ``config.json`` (else ``tokenizer_config.json``)
    written with another indentation."""
    path = folder / "config.json" if (folder / "config.json").is_file() else folder / "tokenizer_config.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=3) + "\n")


class FakeHub:
    """The cache every hub lookup of this process uses (``huggingface_hub.constants.HF_HUB_CACHE``, patched)."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from huggingface_hub import constants

        self.root = root
        root.mkdir(parents=True)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
        self.commits: dict[str, list[str]] = {}

    def repo(self, repo_id: str) -> Path:
        return self.root / ("models--" + repo_id.replace("/", "--"))

    def publish(self, folder: Path, name: str) -> str:
        """``folder`` as the first commit of ``connote-test/NAME``; returns the id."""
        repo_id = f"connote-test/{name}"
        self._commit(repo_id, folder)
        return repo_id

    def commit(self, repo_id: str) -> str:
        """The commit ``main`` points to."""
        return self.commits[repo_id][-1]

    def _commit(self, repo_id: str, folder: Path) -> str:
        made = self.commits.setdefault(repo_id, [])
        commit = hashlib.sha1(f"{repo_id}#{len(made)}".encode()).hexdigest()
        shutil.copytree(folder, self.repo(repo_id) / "snapshots" / commit, ignore=shutil.ignore_patterns(".*"))
        if not (folder / "config.json").is_file():  # a tokenizer's repository: the download records the absence
            absent = self.repo(repo_id) / ".no_exist" / commit
            absent.mkdir(parents=True)
            (absent / "config.json").touch()
        (self.repo(repo_id) / "refs").mkdir(exist_ok=True)
        (self.repo(repo_id) / "refs" / "main").write_text(commit)
        made.append(commit)
        return commit

    def move(self, repo_id: str, change: Callable[[Path], None] = reindent) -> str:
        """A new commit of ``repo_id`` (``change`` applied to a copy of the current one) becomes ``main``, as a
        later download leaves the cache; returns the new commit."""
        staged = self.root / "staged"
        shutil.copytree(self.repo(repo_id) / "snapshots" / self.commit(repo_id), staged)
        change(staged)
        commit = self._commit(repo_id, staged)
        shutil.rmtree(staged)
        return commit
