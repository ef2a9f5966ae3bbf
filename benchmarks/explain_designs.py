"""Permutation designs on the games of ``benchmarks/explain_vs_mmshap.py``: T-SHAP error against calls, no timing.

Every coalition of each benchmark pair's game (``compat="mmshap"`` on the same tiny random BLIP ITM model:
5 ids + 3x3 patches, n = 14) is evaluated once (2^14 rows per pair); the estimators then run on table
lookups, so hundreds of seeds per pair cost no model calls and the error of each design is measured
precisely (each pair-seed's seed is derived from the pair and the index, so all draws are independent).
Printed per estimator setting: mean rows asked for (model calls), mean distinct image masks
(vision passes with a cache that keeps every state), mean |T-SHAP error| against exact enumeration with its
standard error over the pair-seeds, the mean signed error (the plug-in bias of sum|phi|), the share of
runs within 0.01, and mean squared error over the mean squared reported T-SHAP s.e. (1 = calibrated,
below 1 = conservative).

Rows: independent antithetic permutations (the public MM-SHAP setting and the ``permutation`` estimator),
rows of random Latin squares (``sampling="latin"``), and the ``adaptive`` estimator at tolerance 0.01 under
several call caps in both designs (``latin`` is its default).

Run: ``python benchmarks/explain_designs.py`` (about 2 minutes on 2 cores; ``--pairs``, ``--seeds``).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import explain_vs_mmshap as bench  # noqa: E402


class TableGame:
    """A game answered from its full table of values; counts rows and distinct image masks."""

    def __init__(self, table: np.ndarray, n_text: int) -> None:
        self.table, self.n_text = table, n_text
        self.n = int(table.shape[0]).bit_length() - 1
        self.powers = (1 << np.arange(self.n)).astype(np.int64)
        self.rows = 0
        self.images: set[bytes] = set()

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        self.rows += len(masks)
        self.images.update(m.tobytes() for m in masks[:, self.n_text:])
        return self.table[masks.astype(np.int64) @ self.powers]


def tables(n_pairs: int, threads: int) -> list[tuple[np.ndarray, int]]:
    import torch

    from connote.explain.shapley import all_masks
    from connote.models.registry import load_model, parse_spec

    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = bench.build_blip(Path(tmp) / "blip", seed=0, **bench.SIZES["tiny"])
        matcher = load_model(parse_spec(f"hf-blip-itm:{folder}?device=cpu"))
    out = []
    for image, caption in bench.make_pairs(n_pairs, 3, seed=1):
        game = bench.mmshap_game(matcher, image, caption)
        out.append((np.asarray(game.value_fn(all_masks(game.n_text + game.n_patches)), dtype=float), game.n_text))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--seeds", type=int, default=100, help="estimator seeds per pair")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)

    from connote.explain.mmshap import t_shap_statistic
    from connote.explain.shapley import estimate, permutation_calls, shapley_from_table

    games = tables(args.pairs, args.threads)
    n = int(games[0][0].shape[0]).bit_length() - 1
    settings = [(f"permutation, {p} perms, {d}", "permutation", {"n_permutations": p, "sampling": d})
                for d in ("independent", "latin") for p in (10, 14, 20)]
    settings += [(f"adaptive tol 0.01, <= {c} perms, {d}", "adaptive",
                  {"budget": permutation_calls(n, c), "sampling": d, "tolerance": 0.01})
                 for d in ("independent", "latin") for c in (10, 14, 20)]
    print(f"{args.pairs} pairs (n = {n}) x {args.seeds} seeds; exact T-SHAP from the full table of each game")
    head = (f"{'estimator':<40} {'rows':>6} {'vision':>6} {'mean|dT|':>17} {'bias':>8} {'<=0.01':>6} "
            f"{'err2/se2':>8}")
    print(head)
    print("-" * len(head))
    for label, name, options in settings:
        err, signed, rows, vision, se2 = [], [], [], [], []
        for k, (table, n_text) in enumerate(games):
            stat = t_shap_statistic(n_text)
            truth = stat(shapley_from_table(table))
            for seed in range(args.seeds):
                game = TableGame(table, n_text)
                extra = {"statistic": stat} if name == "adaptive" else {}
                # seeds differ per pair (the pairs share n: one seed for all would draw the same permutations)
                res = estimate(game, n, estimator=name, seed=bench.run_seed(k, seed), **options, **extra)
                t = stat(res.values)
                err.append(abs(t - truth))
                signed.append(t - truth)
                rows.append(game.rows)
                vision.append(len(game.images))
                se2.append(res.se_of(stat) ** 2)
        e = np.asarray(err)
        sem = e.std(ddof=1) / math.sqrt(len(e))
        print(f"{label:<40} {np.mean(rows):>6.0f} {np.mean(vision):>6.0f} {e.mean():>8.4f} +-{sem:<6.4f} "
              f"{np.mean(signed):>+8.4f} {np.mean(e <= 0.01):>6.0%} {np.mean(e ** 2) / np.mean(se2):>8.2f}")


if __name__ == "__main__":
    main()
