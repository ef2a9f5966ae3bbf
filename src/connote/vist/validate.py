"""Validate a challenge submission against the challenge template.

Exit statuses (``ValidationReport.exit_status``): 2 when the file is not valid JSON (line and column
reported), 1 when anything else is wrong (missing or extra photo sequences, more than one story for
one sequence, malformed entries), 0 when the submission is valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.vist.challenge import Submission, read_submission
from connote.vist.data import Problem, SeqKey, seq_id


@dataclass
class ValidationReport:
    """Everything found wrong with one submission."""

    path: str
    template: str | None
    n_entries: int = 0
    n_template: int = 0
    malformed: dict[str, Any] | None = None  # {"line", "column", "message"}
    missing: list[SeqKey] = field(default_factory=list)
    extra: list[SeqKey] = field(default_factory=list)
    duplicates: dict[SeqKey, int] = field(default_factory=dict)
    album_mismatch: list[tuple[SeqKey, str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    empty_stories: int = 0

    @property
    def ok(self) -> bool:
        return (self.malformed is None and not self.missing and not self.extra
                and not self.duplicates and not self.album_mismatch and not self.problems)

    @property
    def exit_status(self) -> int:
        if self.malformed is not None:
            return 2
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "template": self.template, "valid": self.ok,
            "exit_status": self.exit_status, "malformed": self.malformed,
            "n_entries": self.n_entries, "n_template": self.n_template,
            "n_missing": len(self.missing), "missing": [list(k) for k in self.missing],
            "n_extra": len(self.extra), "extra": [list(k) for k in self.extra],
            "n_duplicates": len(self.duplicates),
            "duplicates": [{"photo_sequence": list(k), "count": c} for k, c in self.duplicates.items()],
            "album_mismatch": [{"photo_sequence": list(k), "submitted": a, "template": b}
                               for k, a, b in self.album_mismatch],
            "problems": [str(p) for p in self.problems],
            "empty_stories": self.empty_stories,
        }

    def lines(self, limit: int = 20) -> list[str]:
        """A human-readable report, listing at most ``limit`` items per kind."""
        if self.malformed:
            m = self.malformed
            return [f"{self.path}:{m['line']}:{m['column']}: malformed JSON: {m['message']}"]
        out = [f"{self.path}: {self.n_entries} stories, template {self.n_template} photo sequences"]

        def block(title: str, items: list[str]) -> None:
            if not items:
                return
            out.append(f"{title}: {len(items)}")
            out.extend(f"  {x}" for x in items[:limit])
            if len(items) > limit:
                out.append(f"  ... and {len(items) - limit} more")

        block("missing photo sequences", [seq_id(k) for k in self.missing])
        block("extra photo sequences (not in the template)", [seq_id(k) for k in self.extra])
        block("photo sequences with more than one story",
              [f"{seq_id(k)} ({c} stories)" for k, c in self.duplicates.items()])
        block("album id differs from the template",
              [f"{seq_id(k)}: {a!r} vs {b!r}" for k, a, b in self.album_mismatch])
        block("malformed entries", [str(p) for p in self.problems])
        if self.empty_stories:
            out.append(f"note: {self.empty_stories} empty stories (they score 0)")
        out.append("valid" if self.ok else "INVALID")
        return out


def validate_submission(path: str | Path, template: str | Path | Submission | None = None) -> ValidationReport:
    """Check ``path`` against the template's photo sequences.

    Without a template only the file's own structure and duplicates are checked. A malformed
    submission is reported (not raised); a malformed template raises ``InputError``.
    """
    tpl: Submission | None
    if template is None or isinstance(template, Submission):
        tpl = template
    else:
        tpl = read_submission(template)
    report = ValidationReport(path=str(path), template=tpl.path if tpl else None,
                              n_template=len(tpl.entries) if tpl else 0)
    try:
        sub = read_submission(path)
    except InputError as exc:
        if exc.line is None:
            raise
        report.malformed = {"line": exc.line, "column": exc.column,
                            "message": exc.message.split("malformed JSON: ", 1)[-1]}
        return report
    report.n_entries = len(sub.entries)
    report.problems = list(sub.problems)
    report.empty_stories = sum(1 for e in sub.entries if not e.text.strip())
    by_seq = sub.by_sequence()
    report.duplicates = {k: len(v) for k, v in by_seq.items() if len(v) > 1}
    if tpl is not None:
        tpl_seq = tpl.by_sequence()
        report.missing = [k for k in tpl_seq if k not in by_seq]
        report.extra = [k for k in by_seq if k not in tpl_seq]
        for k, es in by_seq.items():
            if k in tpl_seq:
                want = tpl_seq[k][0].album_id
                if es[0].album_id != want:
                    report.album_mismatch.append((k, es[0].album_id, want))
    return report
