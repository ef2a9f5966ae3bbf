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

A study of what bounds explain at real size on a CPU (``--image-orders``): permutations drawn in groups that share
the relative order of the image patches (``G`` orders x ``K`` permutations each; every permutation is still
uniform, so the estimate is unbiased). A group's walks pass through only the prefixes and suffixes of its
order, so it needs ~2 (m - 1) distinct image masks however many permutations it holds. Printed with the
seconds a pair would take at BLIP-base size on this CPU from the counts (``--vision-s`` per vision pass,
``--row-s`` per scored row, ``--public-s`` per public full forward; defaults measured on 2 cores, 2 Dec).

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


class ImageOrders:
    """``draw`` of permutations in groups of ``per_order`` that share the relative order of the image players.

    Each permutation is a Latin-square row over all ``n`` players whose image positions then take the group's
    image order (a Latin-square row over the ``m`` image players): the image order is uniform and independent
    of the rest, so every permutation is uniform."""

    def __init__(self, rng: np.random.Generator, n: int, n_text: int, per_order: int) -> None:
        from connote.explain.shapley import _LatinPermutations

        self.n_text, self.per_order = n_text, per_order
        self.rows = _LatinPermutations(rng, n)
        self.orders = _LatinPermutations(rng, n - n_text)
        self.left = 0
        self.order = np.zeros(0, dtype=np.int64)

    def __call__(self, count: int) -> np.ndarray:
        out = self.rows(count).copy()
        for perm in out:
            if self.left == 0:
                self.order, self.left = self.orders(1)[0] + self.n_text, self.per_order
            self.left -= 1
            perm[perm >= self.n_text] = self.order
        return out


def image_order_values(game: TableGame, n: int, n_permutations: int, per_order: int, seed: int) -> np.ndarray:
    from connote.explain.shapley import _antithetic_rounds, _Game

    rng = np.random.default_rng(seed)
    draw = ImageOrders(rng, n, game.n_text, per_order)
    est, _, _ = _antithetic_rounds(_Game(game, n, 10 ** 9, None), rng, n, n_permutations, draw=draw)
    return est.mean(axis=0)


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
    ap.add_argument("--image-orders", action="store_true",
                    help="add the shared-image-order study and real-size seconds from the counts")
    ap.add_argument("--vision-s", type=float, default=0.66, help="BLIP-base vision pass with its keys and values (s)")
    ap.add_argument("--row-s", type=float, default=0.007, help="BLIP-base scored row, grouped (s)")
    ap.add_argument("--public-s", type=float, default=0.83, help="BLIP-base public full forward (s)")
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
    if args.image_orders:
        settings += [(f"permutation, {g} image orders x {k} perms", "image-orders", {"orders": g, "per_order": k})
                     for g in (2, 4, 8) for k in (5, 10, 20)]
    print(f"{args.pairs} pairs (n = {n}) x {args.seeds} seeds; exact T-SHAP from the full table of each game")
    head = (f"{'estimator':<40} {'rows':>6} {'vision':>6} {'mean|dT|':>17} {'bias':>8} {'<=0.01':>6} "
            f"{'err2/se2':>8}" + (f" {'base s':>7} {'ratio':>6}" if args.image_orders else ""))
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
                if name == "image-orders":
                    values = image_order_values(game, n, options["orders"] * options["per_order"],
                                                options["per_order"], bench.run_seed(k, seed))
                    res = None
                else:
                    res = estimate(game, n, estimator=name, seed=bench.run_seed(k, seed), **options, **extra)
                    values = res.values
                t = stat(values)
                err.append(abs(t - truth))
                signed.append(t - truth)
                rows.append(game.rows)
                vision.append(len(game.images))
                se2.append(res.se_of(stat) ** 2 if res is not None else math.nan)
        e = np.asarray(err)
        sem = e.std(ddof=1) / math.sqrt(len(e))
        line = (f"{label:<40} {np.mean(rows):>6.0f} {np.mean(vision):>6.0f} {e.mean():>8.4f} +-{sem:<6.4f} "
                f"{np.mean(signed):>+8.4f} {np.mean(e <= 0.01):>6.0%} {np.mean(e ** 2) / np.mean(se2):>8.2f}")
        if args.image_orders:
            # the public path (shap, 10 permutations) runs 10 (2 n + 1) full forwards, each with its vision pass
            public_s = 10 * (2 * n + 1) * args.public_s
            seconds = np.mean(vision) * args.vision_s + np.mean(rows) * args.row_s
            line += f" {seconds:>7.1f} {public_s / seconds:>5.1f}x"
        print(line)


if __name__ == "__main__":
    main()
