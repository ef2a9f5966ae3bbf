"""The shared vocabulary: typed records passed between readers, tasks and reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("SG", "PG")
CELLS = ("SG-SG", "SG-PG", "PG-SG", "PG-PG")


@dataclass
class ProbeItem:
    """One image-caption pair of a contextual verb-probe manifest.

    ``image`` is a resolved absolute path or an http(s) URL. ``label`` is 1 (match) or 0; when the
    manifest leaves it empty it is 0 exactly for PG image x SG caption. ``error`` holds a
    problem found while reading (unknown kind, empty caption): such items are reported, not scored.
    """

    item_id: str
    image: str
    image_kind: str
    caption: str
    caption_kind: str
    caption_simplified: str | None = None
    verb: str | None = None
    human_votes: list[int] | None = None
    label: int = 1
    line: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cell(self) -> str:
        return f"{self.image_kind}-{self.caption_kind}"

    def text(self, captions: str = "original") -> str:
        """The caption to score: ``original`` or ``simplified``."""
        if captions == "simplified":
            return self.caption_simplified or ""
        return self.caption

    @property
    def human_score(self) -> float | None:
        """Share of annotators who voted "match"."""
        if not self.human_votes:
            return None
        return sum(self.human_votes) / len(self.human_votes)


def default_label(image_kind: str, caption_kind: str) -> int:
    """Only a PG image with an SG caption is a non-match by construction."""
    return 0 if (image_kind, caption_kind) == ("PG", "SG") else 1
