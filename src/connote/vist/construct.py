"""Dataset construction tools of the paper's section 3.

* :func:`filter_albums` -- keep albums of 10-50 photos, all taken within 48 hours, every photo under
  a Creative Commons licence (Flickr licence ids 1-6 and 9, or a licence name containing "CC" /
  "Creative Commons"); each rejected album gets its reason.
* :class:`NameList` + :func:`anonymize` -- people's names become ``[male]``/``[female]`` from a names
  list with counts (the US SSA baby-names format ``name,sex,count``, one or more files summed; the
  paper kept names seen at least 10,000 times) and, with a spaCy pipeline, named entities become their
  type (``location``, ``organization``, ...; see ``ENTITY_TYPES``).
* :func:`split_albums` -- the 80/10/10 train/val/test split by album, seeded and deterministic.
"""

from __future__ import annotations

import csv
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import text_lines
from connote.vist.data import Album, Image

CC_LICENSE_IDS = frozenset({"1", "2", "3", "4", "5", "6", "9"})
"""Flickr licence ids of Creative Commons licences (BY-NC-SA, BY-NC, BY-NC-ND, BY, BY-SA, BY-ND, CC0)."""

ENTITY_TYPES = {
    "GPE": "location", "LOC": "location", "FAC": "location",
    "ORG": "organization", "PERSON": "person", "NORP": "group",
    "EVENT": "event", "WORK_OF_ART": "work",
}
"""spaCy entity label -> the placeholder written in its place (labels not listed are kept as text)."""


def is_cc_license(lic: Any) -> bool:
    """Whether a Flickr licence (id or name) is a Creative Commons licence.

    >>> [is_cc_license(x) for x in ("5", 0, "CC BY-SA 2.0", "All Rights Reserved", None)]
    [True, False, True, False, False]
    """
    if lic is None:
        return False
    s = str(lic).strip()
    if s in CC_LICENSE_IDS:
        return True
    low = s.lower()
    return low.startswith("cc") or "creative commons" in low


def album_reasons(photo_ids: Sequence[str], images: Mapping[str, Image], *, min_photos: int = 10,
                  max_photos: int = 50, max_span_hours: float = 48.0, require_cc: bool = True) -> list[str]:
    """Why an album fails the paper's filters (empty list: it passes)."""
    reasons = []
    n = len(photo_ids)
    if n < min_photos or n > max_photos:
        reasons.append(f"{n} photos, outside {min_photos}-{max_photos}")
    missing = [p for p in photo_ids if p not in images]
    if missing:
        reasons.append(f"{len(missing)} photo(s) missing from the images table")
    dates = [images[p].datetaken for p in photo_ids if p in images]
    if any(d is None for d in dates):
        reasons.append("photo(s) without a datetaken")
    known = [d for d in dates if d is not None]
    if known:
        span = (max(known) - min(known)).total_seconds() / 3600
        if span > max_span_hours:
            reasons.append(f"spans {span:.1f} hours, more than {max_span_hours:g}")
    if require_cc:
        bad = [p for p in photo_ids if p in images and not is_cc_license(images[p].license)]
        if bad:
            reasons.append(f"{len(bad)} photo(s) not under a Creative Commons licence")
    return reasons


def filter_albums(albums: Mapping[str, Album], images: Mapping[str, Image], **kwargs: Any
                  ) -> tuple[list[str], dict[str, list[str]]]:
    """Album ids kept, and the reasons of every rejected album (see :func:`album_reasons`)."""
    kept, rejected = [], {}
    for aid, album in albums.items():
        r = album_reasons(album.photo_ids, images, **kwargs)
        if r:
            rejected[aid] = r
        else:
            kept.append(aid)
    return kept, rejected


# --------------------------------------------------------------------------- names and anonymisation


@dataclass
class NameList:
    """First names with counts by sex; ``gender(name)`` is the majority sex of names kept."""

    counts: dict[str, dict[str, int]]
    min_count: int = 10_000

    @classmethod
    def read(cls, paths: str | Path | Iterable[str | Path], *, min_count: int = 10_000) -> NameList:
        """Read SSA-style ``name,sex,count`` files (no header; a header row is skipped), summing counts."""
        if isinstance(paths, (str, Path)):
            paths = [paths]
        counts: dict[str, dict[str, int]] = defaultdict(lambda: {"F": 0, "M": 0})
        for path in paths:
            path = Path(path)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise InputError(f"cannot read names list ({exc})", path=path) from None
            for n, row in enumerate(csv.reader(text_lines(text)), 1):
                if not row or not "".join(row).strip():
                    continue
                if len(row) < 3:
                    raise InputError(f"expected name,sex,count; found {len(row)} column(s)", path=path, line=n)
                name, sex, count = row[0].strip(), row[1].strip().upper()[:1], row[2].strip()
                if not count.isdigit():
                    if n == 1 and sex not in ("F", "M"):
                        continue  # a header (name,sex,count); a data row's count must be a number
                    raise InputError(f"count {count!r} is not a whole number", path=path, line=n, column=3)
                if sex not in ("F", "M"):
                    raise InputError(f"sex {row[1]!r} is neither F nor M", path=path, line=n, column=2)
                counts[name.lower()][sex] += int(count)
        return cls(dict(counts), min_count)

    def gender(self, name: str) -> str | None:
        """``"[male]"``, ``"[female]"`` or ``None`` (unknown or rarer than ``min_count``)."""
        c = self.counts.get(name.lower())
        if not c or c["F"] + c["M"] < self.min_count:
            return None
        return "[female]" if c["F"] > c["M"] else "[male]"


_WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]", re.UNICODE)


def _replace_names(text: str, names: NameList, case_sensitive: bool) -> str:
    def sub(m: re.Match[str]) -> str:
        w = m.group(0)
        if case_sensitive and not w[:1].isupper():
            return w
        return names.gender(w) or w

    return re.sub(r"[^\W\d_]+", sub, text)


def anonymize(text: str, names: NameList | None = None, *, nlp: Any = None,
              entity_types: Mapping[str, str] = ENTITY_TYPES, case_sensitive: bool = True) -> str:
    """Replace people's names by ``[male]``/``[female]`` and named entities by their type.

    With ``nlp`` (a spaCy pipeline with NER), a PERSON entity whose first token is a listed name
    becomes that name's gender tag, other entities with a label in ``entity_types`` become the type;
    remaining capitalised words found in the names list are then replaced. Without ``nlp`` only the
    names list is used. ``case_sensitive`` (default) replaces only capitalised words, so that "will"
    or "may" in lower case stay.

    >>> names = NameList({"mary": {"F": 20000, "M": 10}, "john": {"F": 5, "M": 50000}})
    >>> anonymize("Mary met John and will may go.", names)
    '[female] met [male] and will may go.'
    """
    if nlp is not None:
        doc = nlp(text)
        parts: list[str] = []
        i = 0
        for ent in doc.ents:
            parts.append(text[i:ent.start_char])
            rep = None
            if ent.label_ == "PERSON" and names is not None:
                rep = names.gender(ent[0].text)
            if rep is None:
                rep = entity_types.get(ent.label_)
            parts.append(rep if rep is not None else ent.text)
            i = ent.end_char
        parts.append(text[i:])
        text = "".join(parts)
    if names is not None:
        text = _replace_names(text, names, case_sensitive)
    return text


# --------------------------------------------------------------------------- split


def split_albums(album_ids: Iterable[str], *, ratios: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0,
                 names: Sequence[str] = ("train", "val", "test")) -> dict[str, list[str]]:
    """Split album ids (deduplicated, sorted, then shuffled with ``seed``) by ``ratios``.

    Sizes are ``round(ratio * n)`` for all but the last part, which takes the rest; every album is in
    exactly one part, so all stories of an album land in the same split.
    """
    if len(ratios) != len(names):
        raise ValueError("one ratio per split name")
    if any(r < 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-9:
        raise ValueError(f"ratios must be non-negative and sum to 1, got {list(ratios)}")
    ids = sorted(set(map(str, album_ids)))
    random.Random(seed).shuffle(ids)
    out: dict[str, list[str]] = {}
    start = 0
    for k, (name, r) in enumerate(zip(names, ratios, strict=True)):
        end = len(ids) if k == len(names) - 1 else min(len(ids), start + round(r * len(ids)))
        out[name] = ids[start:end]
        start = end
    return out
