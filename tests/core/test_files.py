"""``reachable_files``: every file a reader of a folder reaches, through links, each real folder once."""

from __future__ import annotations

import os
from pathlib import Path


def test_links_are_followed_and_loops_end(tmp_path: Path) -> None:
    from connote.core.files import reachable_files

    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "weights.bin").write_bytes(b"w")
    (outside / "tokenizer.json").write_text("{}")
    root = tmp_path / "model"
    root.mkdir()
    (root / "config.json").write_text("{}")
    (root / ".hidden").write_text("x")
    (root / "llm").symlink_to(outside)  # a linked sub-folder (Path.rglob does not enter it)
    (root / "again").symlink_to(outside)  # a second link to a folder already listed
    (root / "loop").symlink_to(root)  # back to the top
    (outside / "up").symlink_to(tmp_path)  # a loop through the parent, which holds the model itself
    (root / "self").symlink_to(root / "self")  # a link to itself (ELOOP)
    (root / "gone").symlink_to(tmp_path / "nothing")  # dangling
    (root / "tokens.json").symlink_to(outside / "tokenizer.json")  # a linked file
    os.mkfifo(root / "fifo")  # never opened
    files, real = reachable_files(root)
    listed = [rel for rel, _ in files]
    # "again" comes first in sorted order and takes the folder; "llm" is then a second link to it, not entered
    assert listed == ["again/deep/weights.bin", "again/tokenizer.json", "config.json", "tokens.json"]
    assert str(outside.resolve()) in real and str(root.resolve()) in real
    assert all(p.is_file() for _, p in files)


def test_a_folder_that_is_not_there_lists_nothing(tmp_path: Path) -> None:
    from connote.core.files import reachable_files

    assert reachable_files(tmp_path / "nothing") == ([], set())


def test_a_path_through_a_link_loop_is_made_absolute_as_written(tmp_path: Path) -> None:
    """Item 7 for every path a reader names: ``Path.resolve`` raises ``RuntimeError: Symlink loop`` (Python 3.11);
    ``resolved`` gives the path as written, so reading it is that file's error (a suite's image, a probe row)."""
    from connote.core.files import resolved
    from connote.suites.base import suite_image

    (tmp_path / "loop.jpg").symlink_to(tmp_path / "loop.jpg")
    (tmp_path / "real.jpg").write_bytes(b"x")
    (tmp_path / "link.jpg").symlink_to(tmp_path / "real.jpg")
    assert resolved(tmp_path / "loop.jpg") == str(tmp_path / "loop.jpg")
    assert resolved(tmp_path / "link.jpg") == str((tmp_path / "real.jpg").resolve())
    assert suite_image("loop.jpg", [tmp_path]) == str(tmp_path / "loop.jpg")
