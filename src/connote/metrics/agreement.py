"""Inter-annotator agreement for human evaluation: pairwise Cohen's kappa and Fleiss' kappa.

Labels file (CSV, header required): ``item_id, rater, criterion, label``, one row per judgement,
e.g. ``v012_gitllava, A, fluency, 1``. Labels are categories compared as strings (binary 0/1 in
the paper). Criteria are free names (the paper's: fluency, primary_concept_consistency,
consistency, creativity).

* Cohen's kappa for a pair of raters uses the items both rated (for that criterion).
* Fleiss' kappa uses the items rated by every rater (Fleiss' formula needs the same number of
  ratings per item); items with fewer ratings are left out and counted.
* The ``all`` row pools every criterion, each (item, criterion) counted as one item, as one
  agreement figure over the whole evaluation (the paper's Table 3).

An undefined kappa (chance agreement 1, e.g. every label identical) is ``nan``.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

COLUMNS = ("item_id", "rater", "criterion", "label")
CRITERIA = ("fluency", "primary_concept_consistency", "consistency", "creativity")


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels on the same items (in order).

    >>> round(cohen_kappa([1, 1, 0, 0, 1, 0, 1, 1, 0, 1], [1, 0, 0, 0, 1, 1, 1, 1, 0, 1]), 4)
    0.5833
    """
    if len(a) != len(b):
        raise ValueError(f"the raters labelled different numbers of items ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[c] * cb[c] for c in ca) / (n * n)
    if expected >= 1.0:
        return math.nan
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa_counts(table: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa from an items x categories table of rating counts (same total per row)."""
    rows = [list(map(int, r)) for r in table]
    if not rows:
        return math.nan
    n = sum(rows[0])
    if n < 2 or any(sum(r) != n for r in rows):
        raise ValueError("every item needs the same number (>= 2) of ratings for Fleiss' kappa")
    big_n = len(rows)
    p_items = [(sum(c * c for c in r) - n) / (n * (n - 1)) for r in rows]
    p_bar = sum(p_items) / big_n
    totals = [sum(col) for col in zip(*rows)]
    p_e = sum((t / (big_n * n)) ** 2 for t in totals)
    if p_e >= 1.0:
        return math.nan
    return (p_bar - p_e) / (1.0 - p_e)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa from per-item label lists (each item rated by the same number of raters).

    >>> round(fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0]]), 4)
    0.3143
    """
    categories = sorted({label for item in ratings for label in item}, key=str)
    return fleiss_kappa_counts([[Counter(item)[c] for c in categories] for item in ratings])


@dataclass
class AgreementRow:
    """Agreement for one criterion (or ``all``)."""

    criterion: str
    raters: list[str]
    cohen: dict[tuple[str, str], float]
    cohen_items: dict[tuple[str, str], int]
    fleiss: float
    fleiss_items: int
    items: int
    skipped_items: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion, "raters": self.raters,
            "cohen": [{"a": a, "b": b, "kappa": _num(k), "items": self.cohen_items[(a, b)]}
                      for (a, b), k in self.cohen.items()],
            "fleiss": _num(self.fleiss), "fleiss_items": self.fleiss_items, "items": self.items,
            "skipped_items": self.skipped_items,
        }


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


@dataclass
class LabelTable:
    """Judgements by criterion: ``labels[criterion][item_id][rater] = label``."""

    labels: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    @property
    def raters(self) -> list[str]:
        return sorted({r for items in self.labels.values() for by in items.values() for r in by})


def read_labels(path: str | Path) -> LabelTable:
    """Read a labels CSV (see module docs); duplicate judgements are errors naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError("labels file not found", path=path)
    import io

    from connote.core.jsonio import read_text

    table = LabelTable()
    with io.StringIO(read_text(path, what="labels file"), newline="") as fh:  # strict UTF-8, the bad byte named
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}",
                             path=path, line=1)
        for lineno, raw in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
            if not any(row.values()):
                continue
            for col in COLUMNS:
                if not row.get(col):
                    raise InputError("empty value", path=path, line=lineno, column=col)
            by_rater = table.labels.setdefault(row["criterion"], {}).setdefault(row["item_id"], {})
            if row["rater"] in by_rater:
                raise InputError(f"rater {row['rater']!r} labelled item {row['item_id']!r} "
                                 f"for {row['criterion']!r} twice", path=path, line=lineno)
            by_rater[row["rater"]] = row["label"]
    if not table.labels:
        raise InputError("no judgements in the file", path=path)
    return table


def agreement(labels: Mapping[str, Mapping[str, Mapping[str, str]]], criterion: str,
              raters: Sequence[str] | None = None) -> AgreementRow:
    """Pairwise Cohen's and Fleiss' kappa over ``labels[item_id][rater]``."""
    raters = list(raters) if raters is not None else sorted({r for by in labels.values() for r in by})
    cohen: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for a, b in itertools.combinations(raters, 2):
        common = [i for i, by in labels.items() if a in by and b in by]
        cohen[(a, b)] = cohen_kappa([labels[i][a] for i in common], [labels[i][b] for i in common])
        counts[(a, b)] = len(common)
    full = [[by[r] for r in raters] for by in labels.values() if all(r in by for r in raters)]
    fleiss = fleiss_kappa(full) if full and len(raters) >= 2 else math.nan
    return AgreementRow(criterion=criterion, raters=raters, cohen=cohen, cohen_items=counts,
                        fleiss=fleiss, fleiss_items=len(full), items=len(labels),
                        skipped_items=len(labels) - len(full))


def agreement_table(table: LabelTable) -> list[AgreementRow]:
    """One row per criterion (sorted, the paper's four first) and a pooled ``all`` row."""
    raters = table.raters
    order = [c for c in CRITERIA if c in table.labels] + sorted(set(table.labels) - set(CRITERIA))
    rows = [agreement(table.labels[c], c, raters) for c in order]
    pooled: dict[str, dict[str, str]] = defaultdict(dict)
    for c in order:
        for item, by in table.labels[c].items():
            pooled[f"{item}\x1f{c}"] = dict(by)
    if len(order) > 1:
        rows.append(agreement(pooled, "all", raters))
    return rows
