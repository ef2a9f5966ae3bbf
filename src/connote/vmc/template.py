"""The VMC caption template: ``<primary concept> is as <property> as <secondary concept>``.

Rules of :func:`parse_metaphor` (each has a hand-written test in ``tests/vmc/test_template.py``):

* Copulas: ``is``, ``are``, ``was``, ``were`` and the contraction ``'s`` ("the car's as fast as ..."),
  matched case-insensitively. The primary concept is everything before the *first* copula that is
  followed by ``as``; it must be non-empty.
* Negation: ``is not as``, ``isn't as`` (and the ``are/was/were`` forms) parse with ``negated=True``.
* The property is the shortest text between ``as`` and the next ``as`` that is followed by a
  non-empty secondary concept, so multi-word ("charged up"), coordinated ("tasty and fun") and
  hyphenated properties, including the dataset's spaced hyphens ("power - packed"), are kept
  verbatim (whitespace collapsed to single spaces).
* Trailing sentence punctuation (``. ! ? ; , :``), surrounding quotes and whitespace are stripped;
  text before/after is otherwise kept as written (case included).
* Anything else (no copula + ``as ... as``, an empty concept or property) gives ``None``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

_PATTERN = re.compile(
    r"^(?P<primary>.*?\S)(?:\s+(?P<copula>is|are|was|were)|(?P<contr>'s|’s))"
    r"(?P<neg>\s+not|n't|n’t)?\s+as\s+(?P<property>.+?)\s+as\s+(?P<secondary>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_STRIP = " \t\r\n\"'“”‘’`"
_TRAILING = ".!?;,:…"


@dataclass(frozen=True)
class Parsed:
    """One caption split into its template slots."""

    primary: str
    property: str
    secondary: str
    negated: bool = False
    copula: str = "is"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (all fields)."""
        return asdict(self)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _strip_outer(text: str) -> str:
    text = text.strip(_STRIP)
    while text and text[-1] in _TRAILING:
        text = text[:-1].rstrip(_STRIP)
    return text


def parse_metaphor(text: str | None) -> Parsed | None:
    """Split ``text`` into primary concept, property and secondary concept, or ``None``.

    >>> parse_metaphor("The burger is as comforting as a relationship.")
    Parsed(primary='The burger', property='comforting', secondary='a relationship', negated=False, copula='is')
    >>> parse_metaphor("a dog running in a park") is None
    True
    """
    if not text or not isinstance(text, str):
        return None
    body = _strip_outer(_clean(text))
    m = _PATTERN.match(body)
    if m is None:
        return None
    primary = m.group("primary").strip(_STRIP + ",")
    prop = _clean(m.group("property"))
    secondary = _strip_outer(m.group("secondary"))
    if not primary or not prop or not secondary:
        return None
    copula = (m.group("copula") or m.group("contr")).lower().replace("’", "'")
    return Parsed(primary=primary, property=prop, secondary=secondary,
                  negated=m.group("neg") is not None, copula=copula)


def follows_template(text: str | None) -> bool:
    """True when :func:`parse_metaphor` finds all three slots."""
    return parse_metaphor(text) is not None
