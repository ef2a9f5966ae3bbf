"""Seeded simulated annotators of known reliability on a real probes-votes study, written as Potato writes them.

The study is made by ``connote collect make`` from a 240-pair manifest over the bundled sample photos, with 30 of
the pairs as gold items. Each simulated annotator answers each item they are given correctly with their
accuracy (else the other answer); a spammer answers at random; two careless annotators answer well but fail an
attention check. Every item goes to ``PER_ITEM`` annotators drawn at random (seeded), every annotator sees every
gold item and both attention checks, as Potato shows them to everyone.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from connote.cli import main
from connote.collect.project import read_manifest
from connote.media.sample import write_sample_probes
from tests.support.potato_state import potato_state

LABELS = ("match", "no match")
PAIRS, GOLD, PER_ITEM = 240, 30, 5
#: annotator -> (accuracy on items and gold items, fails an attention check); None: answers at random
ANNOTATORS = {
    "expert-1": (0.95, False), "expert-2": (0.95, False), "expert-3": (0.92, False),
    "noisy-1": (0.68, False), "noisy-2": (0.68, False), "noisy-3": (0.65, False), "noisy-4": (0.65, False),
    "spammer-1": (None, False), "spammer-2": (None, False), "spammer-3": (None, False),
    "careless-1": (0.9, True), "careless-2": (0.85, True),
}
MIN_GOLD_ACCURACY = 0.6


def first_probes(folder: Path, n: int) -> tuple[Path, list[str]]:
    """The sample probe manifest's first ``n`` pairs as ``small.csv`` beside it, and their ids."""
    rows = list(csv.DictReader(write_sample_probes(folder).open()))[:n]
    path = folder / "small.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path, [r["item_id"] for r in rows]


def write_manifest(folder: Path) -> Path:
    """A probe manifest of ``PAIRS`` pairs over the sample photos."""
    sample = write_sample_probes(folder)
    rows = list(csv.DictReader(sample.open()))
    out = folder / "many.csv"
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for k in range(PAIRS):
            base = rows[k % len(rows)]
            writer.writerow({**base, "item_id": f"p{k:03d}", "caption_simplified": f"{base['caption_simplified']} {k}"})
    return out


def make_study(root: Path, *extra: str) -> tuple[Path, dict[str, str]]:
    """The study (30 gold items, the rule below) and the true label of every pair."""
    manifest = write_manifest(root / "sample")
    rng = np.random.default_rng(7)
    truth = {f"p{k:03d}": LABELS[int(rng.integers(0, 2))] for k in range(PAIRS)}
    gold = root / "gold.csv"
    gold.write_text("item_id,question,answer\n" + "".join(f"p{k:03d},match,{truth[f'p{k:03d}']}\n"
                                                          for k in range(GOLD)))
    study = root / "study"
    assert main(["collect", "make", "probes-votes", "--data", str(manifest), "--out", str(study), "--per-item",
                 str(PER_ITEM), "--gold-items", str(gold), "--min-gold-accuracy", str(MIN_GOLD_ACCURACY),
                 *extra]) == 0
    return study, truth


def simulate(study: Path, truth: dict[str, str], seed: int = 11) -> dict[str, dict[str, str]]:
    """Write every simulated annotator's Potato state; returns annotator -> item (or check) -> answer."""
    manifest = read_manifest(study)
    rng = np.random.default_rng(seed)
    given: dict[str, dict[str, str]] = {name: {} for name in ANNOTATORS}
    names = list(ANNOTATORS)
    for iid in manifest["items"]:
        for k in rng.choice(len(names), PER_ITEM, replace=False):
            given[names[int(k)]][iid] = ""
    for name, (accuracy, careless) in ANNOTATORS.items():
        answers = {}
        for iid in [*given[name], *manifest["quality"]["gold"]]:
            if accuracy is None:
                answers[iid] = LABELS[int(rng.integers(0, 2))]
            else:
                right = truth[iid]
                answers[iid] = right if rng.random() < accuracy else LABELS[1 - LABELS.index(right)]
        for n, (iid, want) in enumerate(sorted(manifest["attention"].items())):
            wrong = LABELS[1 - LABELS.index(want["match"])]
            answers[iid] = wrong if careless and n == 0 else want["match"]
        potato_state(study, name, {iid: {"match": a} for iid, a in answers.items()})
        given[name] = answers
    return given
