"""The README's and docs' ``connote`` examples run on a fresh offline install.

The rule (also in docs/DEVELOPING.md):

* An **example** is a line starting with ``connote `` inside a fenced code block whose info string is
  ``bash``, ``sh``, ``shell`` or ``console`` (in ``console`` blocks the line starts with ``$ connote ``).
  A trailing backslash continues it on the next line. Lines in blocks without one of these info
  strings (output, usage synopses such as ``connote vist info FILE [--json]``) are not examples.
* An example is **run** unless it is marked as needing something a fresh offline install does not have
  (the papers' data, hub weights, a GPU, a browser, a server that runs until stopped):
  - a trailing shell comment containing ``needs:`` marks that line, e.g.
    ``connote probe --data probes.csv   # needs: a CV-Probes manifest``;
  - an HTML comment ``<!-- needs: ... -->`` on the line right before the opening fence marks every
    line of that block.
* The examples of one document run in the order they appear, in-process (``connote.cli.main(argv)``),
  in one fresh working directory per document, so a later line can use the run folders of an earlier
  one. Each must exit with status 0 and print something on stdout (its table or summary). An unmarked
  example that fails fails this test, with the document, line and output.

Only the packaged sample data and the embedded models are used, so the test needs no network.
"""

from __future__ import annotations

import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_INFO = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
_NEEDS_BLOCK = re.compile(r"<!--\s*needs:\s*(?P<what>.+?)\s*-->")


@dataclass
class Example:
    path: Path
    line: int
    text: str  # the command as written, continuation lines joined
    needs: str | None  # why it is not run; None: it is run

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _split_comment(command: str) -> tuple[list[str], str]:
    """The shell words of ``command`` and its trailing comment, split as a shell does: quotes are honoured
    in the words, and a comment is free text (an apostrophe in it opens no quote)."""
    lexer = shlex.shlex(io.StringIO(command), posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words, end = [], 0
    while (word := lexer.get_token()) != lexer.eof:
        words.append(word)
        end = lexer.instream.tell()  # just past the word (and the one character that ended it)
    rest = command[end:].lstrip()
    return words, rest if rest.startswith("#") else ""


def extract_examples(path: Path) -> list[Example]:
    """Every ``connote`` example of a Markdown file, with its mark (see the module docstring)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    fence: str | None = None
    info, block_needs = "", None
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(lines, 1):
        match = _FENCE.match(raw)
        if fence is None:
            if match:
                fence, info = match.group(1), match.group(2).lower()
                previous = next((x for x in reversed(lines[:number - 1]) if x.strip()), "")
                needs = _NEEDS_BLOCK.search(previous)
                block_needs = needs.group("what") if needs else None
            continue
        if match and match.group(1).startswith(fence[:3]) and not match.group(2):
            fence = None
            continue
        if info not in SHELL_INFO:
            continue
        text = raw.strip()
        if pending is not None:
            start, so_far = pending
            text, pending = so_far + " " + text, None
        else:
            start = number
            if info == "console":
                if not text.startswith("$ "):
                    continue
                text = text[2:].strip()
            if not text.startswith("connote "):
                continue
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip())
            continue
        _, comment = _split_comment(text)
        line_needs = comment.split("needs:", 1)[1].strip() if "needs:" in comment else None
        examples.append(Example(path, start, text, line_needs or block_needs))
    return examples


def test_the_rule_reads_marks(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("\n".join([
        "```bash", "connote models   # every backend's capabilities", "connote probe --data x.csv  # needs: a manifest",
        "```",
        "<!-- needs: VIST official files -->", "", "```bash", "connote vist stats SIS.json \\", "  --json", "```",
        "```console", "$ connote tasks", "output line", "```", "```", "connote vist info FILE [--json]", "```",
    ]) + "\n")
    got = [(e.line, e.text, e.needs) for e in extract_examples(doc)]
    assert got == [(2, "connote models   # every backend's capabilities", None),
                   (3, "connote probe --data x.csv  # needs: a manifest", "a manifest"),
                   (8, "connote vist stats SIS.json --json", "VIST official files"),
                   (12, "connote tasks", None)]


#: Documents whose offline examples only list and show things (seconds). Every other document with an example
#: that runs offline runs commands on models and sample data end to end (a minute or more), so it is ``slow``.
QUICK_DOCUMENTS = {"datasets.md", "models.md"}


def _documents_with_examples() -> list:
    def quick(p: Path) -> bool:
        return p.name in QUICK_DOCUMENTS or all(e.needs is not None for e in extract_examples(p))

    return [p if quick(p) else pytest.param(p, marks=pytest.mark.slow) for p in DOCUMENTS if extract_examples(p)]


@pytest.mark.parametrize("document", _documents_with_examples(), ids=lambda p: p.name)
def test_examples_run_offline(document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from connote.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path / ".cache"))
    failures = []
    ran = 0
    for example in extract_examples(document):
        if example.needs is not None:
            continue
        words, _ = _split_comment(example.text)
        code = main(words[1:])
        captured = capsys.readouterr()
        ran += 1
        if code != 0 or not captured.out.strip():
            failures.append(f"{example.where}: `{example.text}` exited {code}"
                            f"{' and printed nothing on stdout' if not captured.out.strip() else ''}\n"
                            f"stdout: {captured.out[-1500:]}\nstderr: {captured.err[-1500:]}")
    assert not failures, ("examples that do not run offline (fix them, or mark them with a trailing "
                          "'# needs: WHAT' or a '<!-- needs: WHAT -->' line before the block):\n\n"
                          + "\n\n".join(failures))
    assert ran or document.name != "README.md", "the README has no example that runs offline"
