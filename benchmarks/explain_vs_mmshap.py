"""``connote explain`` against the public MM-SHAP code path, on the same BLIP model and pairs, at equal error.

The public path is reproduced as the MM-SHAP repository runs it (its ALBEF script, the closest to BLIP):
``shap.Explainer(get_model_prediction, custom_masker)`` with a *function* masker, so shap picks its
permutation explainer; 10 permutations forward and backward (``max_evals = 10 * (2n + 1)``; the repository's
shap fork hard-codes the 10) in mask batches of 32 (the fork's default); ``custom_masker`` writes 0 for
masked ids and restores the first id; ``get_model_prediction`` receives one batch of masks per shap call
and runs **one full forward pass per mask**, re-encoding the masked image every time. Features: all
token ids (special ones included) and ``p x p`` patches, ``p = ceil(sqrt(#ids))``; T-SHAP as its
``compute_mm_score``.

The connote path is ``masking_game(matcher, image, caption, compat="mmshap")`` (the same game) and
``explain_pair`` on the same backend, with

* ``permutation``: the same estimator (10 antithetic permutations: the same error in expectation, though
  each run's sampled permutations differ), and with 20 (``--connote-permutations``) for a lower error;
* ``adaptive``: antithetic permutations drawn in rounds until T-SHAP's expected error is below
  ``--tolerance`` (one row per tolerance, call cap and permutation design given; 0.01, the estimator's
  default cap and ``latin`` are ``explain_pair``'s default).

With ``--seeds S`` every pair is explained S times per path; the public path's shap seed and connote's
estimator seed are derived from the pair and the seed index (:func:`run_seed`), so every pair-seed is an
independent draw (with one seed per index, pairs of the same ``n`` drew the same permutations, and 9
pair-seeds were about 3 independent draws). The table gives each path's mean seconds per pair and mean
|T-SHAP error| with standard errors over the pair-seeds and the wall ratio with its standard error (delta
method); then, *at matched error*, each connote path's error minus the public path's on the same pair-seeds
(mean +- s.e.) and the fastest connote path whose mean error is at or below the public path's.

Reference T-SHAP per pair: exact enumeration of the same game (default: 3-word captions, 5 ids, 3x3
patches, n = 14), or for larger games connote's permutation estimator with ``--ref-permutations``
permutations (converged: its standard error is printed). The table prints, per path, model calls (mask rows answered),
forward passes, wall-clock, mean |T-SHAP error| and the wall-clock ratio to the public path.

Model: a randomly initialised ``BlipForImageTextRetrieval`` built from a config (no hub access) and saved
to a temporary folder: ``--size tiny`` (default; hidden 64, 2 layers per tower, 64 px) or ``--size base``
(BLIP-base ITM's architecture: ViT-B/16 at 384 px and a BERT-base text encoder, for a GPU). The public
path loads it with plain ``from_pretrained`` in fp32, as the public code does (transformers' own attention);
connote loads it through its ``hf-blip-itm`` backend, in ``--dtype`` (``bf16`` on a GPU: the error
column then includes bf16's rounding, against the fp32 reference). CPU by default.

Run: ``python benchmarks/explain_vs_mmshap.py`` (about 1-2 minutes on 2 cores); needs ``shap`` (the dev
extra). ``--json FILE`` writes the table's figures; ``benchmarks/gpu.sh`` runs
``--size base --device cuda --dtype bf16``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = ("a man woman child dog cat sits begs stands prays holds runs on in at near the street bench cup "
         "church car floor food red blue green old young small big").split()


#: Model presets of ``--size``; ``--hidden``, ``--layers``, ``--image-size``, ``--patch`` and ``--init-range``
#: override one setting. ``base`` is Salesforce/blip-itm-base-coco's architecture (BERT's init range).
SIZES = {"tiny": {"hidden": 64, "layers": 2, "image_size": 64, "patch": 16, "init_range": 0.1},
         "base": {"hidden": 768, "layers": 12, "image_size": 384, "patch": 16, "init_range": 0.02}}


def build_blip(folder: Path, *, hidden: int, layers: int, image_size: int, patch: int, init_range: float,
               seed: int) -> Path:
    """A random BLIP ITM model and its processor written to ``folder`` with ``save_pretrained``."""
    import torch
    from transformers import BertTokenizer, BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor
    from transformers.utils import logging

    logging.set_verbosity_error()
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS)) + list("abcdefghijklmnopqrstuvwxyz.,")
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    large = hidden >= 512  # BERT-base-like: heads of 64, 512 positions; the tiny model keeps its old settings
    heads = max(1, hidden // 64) if large else max(1, hidden // 32)
    cfg = BlipConfig(
        text_config=dict(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         max_position_embeddings=512 if large else 64,
                         encoder_hidden_size=hidden, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                         sep_token_id=tok.sep_token_id, initializer_range=init_range),
        vision_config=dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                           intermediate_size=4 * hidden, image_size=image_size, patch_size=patch,
                           initializer_range=init_range),
        projection_dim=hidden, image_text_hidden_size=hidden, initializer_range=init_range)
    torch.manual_seed(seed)
    model = BlipForImageTextRetrieval(cfg).eval()
    processor = BlipProcessor(image_processor=BlipImageProcessor(size={"height": image_size, "width": image_size}),
                              tokenizer=tok)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def make_pairs(n_pairs: int, n_words: int, seed: int):
    from PIL import Image

    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n_pairs):
        image = Image.fromarray((rng.random((96, 128, 3)) * 255).astype("uint8"))
        caption = " ".join(rng.choice(WORDS, size=n_words))
        pairs.append((image, caption))
    return pairs


# ------------------------------------------------------------------------------ the public code path


class PublicMMSHAP:
    """The public MM-SHAP script's masker and prediction function around one BLIP ITM model and pair."""

    def __init__(self, model, processor, image, caption: str) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.device = next(model.parameters()).device
        enc = processor.tokenizer(caption, return_tensors="pt")
        self.input_ids = enc["input_ids"]
        self.attention_mask = enc["attention_mask"].to(self.device)
        self.image = processor(images=image, return_tensors="pt")["pixel_values"].float().to(self.device)
        self.n_text = self.input_ids.shape[1]  # all ids, [CLS] and [SEP] included
        self.p = int(math.ceil(np.sqrt(self.n_text)))
        self.size = self.image.shape[-1]
        self.patch_size = self.size // self.p
        self.forwards = 0
        self.model_calls = 0

    def features(self) -> np.ndarray:
        """``X``: the token ids followed by patch ids ``1..p*p``, shape ``(1, 1, n)``."""
        image_token_ids = np.arange(1, self.p ** 2 + 1)[None, :]
        return np.concatenate([self.input_ids.numpy(), image_token_ids], axis=1)[:, None, :]

    def custom_masker(self, mask, x):
        masked = np.array(x, copy=True)
        masked[~np.asarray(mask, dtype=bool)[None, :]] = 0  # masked text ids and patch ids -> 0
        masked[0, 0] = int(self.input_ids[0, 0])  # never mask [CLS]
        return masked

    def get_model_prediction(self, x):
        torch = self.torch
        self.model_calls += 1
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(x))
            input_ids = x[:, :self.n_text].long()
            masked_image_token_ids = x[:, self.n_text:]
            result = np.zeros(input_ids.shape[0])
            row_cols = self.size // self.patch_size
            for i in range(input_ids.shape[0]):  # one forward pass per mask, the image re-encoded each time
                masked_image = self.image.clone()
                for k in range(masked_image_token_ids[i].shape[0]):
                    if masked_image_token_ids[i][k] == 0:
                        m, n = k // row_cols, k % row_cols
                        masked_image[:, :, m * self.patch_size:(m + 1) * self.patch_size,
                                     n * self.patch_size:(n + 1) * self.patch_size] = 0
                out = self.model(input_ids=input_ids[i].unsqueeze(0).to(self.device), pixel_values=masked_image,
                                 attention_mask=self.attention_mask, use_itm_head=True).itm_score
                self.forwards += 1
                result[i] = torch.softmax(out, dim=1)[:, 1].item()
        return result

    def explain(self, seed: int) -> float:
        """T-SHAP as ``compute_mm_score`` returns it."""
        import shap

        # the public code passes no seed, so its permutations differ from run to run; the benchmark passes one
        # (shap's permutation explainer re-seeds numpy's global generator from it, or from the OS without it)
        explainer = shap.Explainer(self.get_model_prediction, self.custom_masker, silent=True, seed=seed)
        n = self.n_text + self.p ** 2
        values = explainer(self.features(), max_evals=10 * (2 * n + 1), batch_size=32, silent=True).values
        text = np.abs(values[0, 0, :self.n_text]).sum()
        image = np.abs(values[0, 0, self.n_text:]).sum()
        return float(text / (text + image))


# ---------------------------------------------------------------------------------------- benchmark


def run_seed(pair: int, seed: int) -> int:
    """The estimator seed of pair ``pair``'s ``seed``-th run: distinct and independent per pair and index
    (both paths take it; shap seeds numpy's legacy generator with it, connote its own)."""
    return int(np.random.SeedSequence([pair, seed]).generate_state(1)[0])


def se(values) -> float:
    """Standard error of the mean (0 for one value)."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


def ratio_of_means(numerator, denominator) -> tuple[float, float]:
    """``mean(numerator) / mean(denominator)`` and its standard error (delta method, the two taken as
    independent)."""
    a, b = float(np.mean(numerator)), float(np.mean(denominator))
    ratio = a / b
    return ratio, ratio * float(np.hypot(se(numerator) / a, se(denominator) / b))


def mmshap_game(matcher, image, caption: str):
    """connote's masking game under ``compat="mmshap"`` (the public code's game)."""
    from connote.models.masking import masking_game

    try:
        return masking_game(matcher, image, caption, compat="mmshap")
    except TypeError:  # connote before --compat existed (for before/after figures): its own feature definition
        game = masking_game(matcher, image, caption)
        game.image_encodes = [-1]
        return game


def connote_path(matcher, image, caption: str, *, estimator: str, seed: int, **options):
    from connote.explain.mmshap import explain_pair

    game = mmshap_game(matcher, image, caption)
    row = explain_pair(game.value_fn, game.n_text, game.n_patches, estimator=estimator, seed=seed,
                       find_verb=False, **options)
    return row, game


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--words", type=int, default=3, help="caption length in words (ids = words + 2)")
    ap.add_argument("--seeds", type=int, default=1, help="estimator seeds per pair")
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny",
                    help="model preset: tiny (CPU) or base (BLIP-base ITM's architecture, for a GPU)")
    ap.add_argument("--hidden", type=int, default=None, help="override the preset's width")
    ap.add_argument("--layers", type=int, default=None, help="override the preset's layers per tower")
    ap.add_argument("--image-size", type=int, default=None)
    ap.add_argument("--patch", type=int, default=None)
    ap.add_argument("--init-range", type=float, default=None)
    ap.add_argument("--tolerance", default="0.01,0.005",
                    help="adaptive estimator's T-SHAP tolerance(s), comma-separated: one row each (0.01 is "
                         "explain_pair's default)")
    ap.add_argument("--adaptive-permutations", default=None,
                    help="call caps of the adaptive rows, in permutations (comma-separated; default: the "
                         "estimator's default cap; 10 = the MM-SHAP setting's calls): one row per tolerance and cap")
    ap.add_argument("--adaptive-sampling", default="latin",
                    help="permutation designs of the adaptive rows (comma-separated: latin, the default, and/or "
                         "independent, the design before 2 December 2026)")
    ap.add_argument("--exact-up-to", type=int, default=14,
                    help="reference by exact enumeration when n <= this, else by --ref-permutations permutations")
    ap.add_argument("--ref-permutations", type=int, default=400)
    ap.add_argument("--connote-permutations", default="10,20",
                    help="permutation counts of connote's permutation rows (10 = the public setting; more show "
                         "the cost of a lower error)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads for both paths")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32", help="connote's paths: fp32, bf16 or fp16, or several with commas "
                                                    "(fp32,bf16); the public path and the reference are fp32")
    ap.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    args = ap.parse_args(argv)
    for key, value in SIZES[args.size].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    try:
        permutations = [int(n) for n in args.connote_permutations.split(",") if n.strip()]
    except ValueError:
        ap.error(f"--connote-permutations must be integers separated by commas, got {args.connote_permutations!r}")
    if not permutations or min(permutations) < 1:
        ap.error("--connote-permutations needs at least one count >= 1")
    try:
        tolerances = [float(t) for t in str(args.tolerance).split(",") if t.strip()]
        caps = [int(c) for c in str(args.adaptive_permutations or "0").split(",") if c.strip()]
    except ValueError:
        ap.error("--tolerance and --adaptive-permutations must be numbers separated by commas")

    import inspect

    import torch
    from transformers import BlipForImageTextRetrieval, BlipProcessor
    from transformers.utils import logging

    from connote.explain.mmshap import mm_shap_scores
    from connote.explain.shapley import DEFAULT_ESTIMATOR, ESTIMATORS, permutation_calls

    # the tolerance, cap and design explain_pair's default estimator runs with
    defaults = inspect.signature(ESTIMATORS.get(DEFAULT_ESTIMATOR)).parameters
    default_tol = defaults["tolerance"].default
    default_sampling = defaults["sampling"].default if "sampling" in defaults else "independent"
    try:
        from connote.explain.shapley import ADAPTIVE_CAP_PERMUTATIONS as default_cap
    except ImportError:  # connote before the cap was a setting
        default_cap = 10
    if args.adaptive_permutations is None:
        caps = [default_cap]
    designs = [d.strip() for d in args.adaptive_sampling.split(",") if d.strip()]
    from connote.models.registry import load_model, parse_spec

    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_blip(Path(tmp) / "blip", hidden=args.hidden, layers=args.layers, image_size=args.image_size,
                            patch=args.patch, init_range=args.init_range, seed=0)
        # the public code's model: plain from_pretrained, fp32, transformers' own attention
        model = BlipForImageTextRetrieval.from_pretrained(folder).to(args.device).eval()
        processor = BlipProcessor.from_pretrained(folder)
        reference = load_model(parse_spec(f"hf-blip-itm:{folder}?device={args.device}"))  # fp32
        dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
        fast = {d: reference if d in ("fp32", "float32") else load_model(
            parse_spec(f"hf-blip-itm:{folder}?device={args.device}&dtype={d}")) for d in dtypes}
    pairs = make_pairs(args.pairs, args.words, seed=1)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: BLIP ITM random init ({args.size}: {params / 1e6:.1f}M parameters), hidden {args.hidden}, "
          f"{args.layers} layers per tower, {args.image_size}px images, {args.patch}px ViT patches; device "
          f"{args.device}, connote dtype {args.dtype}, {args.threads} thread(s)")

    refs = []
    for image, caption in pairs:
        probe = mmshap_game(reference, image, caption)
        exact = probe.n_text + probe.n_patches <= args.exact_up_to
        opts = {} if exact else {"n_permutations": args.ref_permutations}
        row, game = connote_path(reference, image, caption, estimator="exact" if exact else "permutation",
                                 seed=10_000, **opts)
        refs.append(row["t_shap"])
        kind = "exact" if exact else f"{args.ref_permutations} permutations, s.e. {row['t_shap_se']:.4f}"
        print(f"  pair {caption!r}: n = {game.n_text} ids + {game.n_patches} patches, p(match) "
              f"{row['value_full']:.3f}, reference T-SHAP {row['t_shap']:.4f} ({kind})")

    results: dict[str, dict[str, list[float]]] = {}

    def record(label: str, seconds: float, err: float, calls: int, forwards: int) -> None:
        r = results.setdefault(label, {"seconds": [], "err": [], "calls": [], "forwards": []})
        r["seconds"].append(seconds)
        r["err"].append(err)
        r["calls"].append(calls)
        r["forwards"].append(forwards)

    for k, (image, caption) in enumerate(pairs):
        for index in range(args.seeds):
            seed = run_seed(k, index)
            public = PublicMMSHAP(model, processor, image, caption)
            start = time.perf_counter()
            t = public.explain(seed)
            record("public MM-SHAP (shap permutation, 10 perms)", time.perf_counter() - start, abs(t - refs[k]),
                   public.forwards, public.forwards)
            estimators = [(f"connote permutation ({n} perms)", "permutation", {"n_permutations": n})
                          for n in permutations]
            n_players = public.n_text + public.p ** 2
            estimators += [(f"connote adaptive (tol {t:g}, <= {cap} perms{'' if d == 'latin' else ', ' + d}"
                            f"{', default' if (t, cap, d) == (default_tol, default_cap, default_sampling) else ''})",
                            "adaptive", {"tolerance": t, "budget": permutation_calls(n_players, cap),
                                         **({} if d == default_sampling else {"sampling": d})})
                           for d in designs for cap in caps for t in tolerances]
            for (label, estimator, opts), dtype in itertools.product(estimators, fast):
                label = label if dtype in ("fp32", "float32") else f"{label}, {dtype}"
                start = time.perf_counter()
                row, game = connote_path(fast[dtype], image, caption, estimator=estimator, seed=seed, **opts)
                seconds = time.perf_counter() - start
                t_c = mm_shap_scores(row["text_shap"], row["image_shap"])[0]
                record(label, seconds, abs(t_c - refs[k]), game.calls[0], game.image_encodes[0])

    base = results["public MM-SHAP (shap permutation, 10 perms)"]
    base_s = float(np.sum(base["seconds"]))
    runs = len(base["err"])
    print(f"\n{args.pairs} pairs x {args.seeds} seeds; calls = mask rows answered per pair; vision passes = images "
          f"encoded per pair (the public path re-encodes the image for every mask); +- = standard error over the "
          f"{runs} pair-seeds")
    head = (f"{'path':<56} {'calls':>7} {'vision':>7} {'s/pair':>16} {'mean|dT|':>17} {'max|dT|':>8} "
            f"{'wall ratio':>15}")
    print(head)
    print("-" * len(head))
    table = []
    for label, r in results.items():
        ratio, ratio_se = ratio_of_means(base["seconds"], r["seconds"])
        figures = {"path": label, "calls": float(np.mean(r["calls"])), "vision_passes": float(np.mean(r["forwards"])),
                   "s_per_pair": float(np.mean(r["seconds"])), "s_per_pair_se": se(r["seconds"]),
                   "mean_abs_dT": float(np.mean(r["err"])), "mean_abs_dT_se": se(r["err"]),
                   "max_abs_dT": float(np.max(r["err"])), "wall_ratio": base_s / float(np.sum(r["seconds"])),
                   "wall_ratio_se": ratio_se,
                   # connote's error minus the public path's on the same pair and seed (negative: lower)
                   "dT_vs_public": float(np.mean(np.subtract(r["err"], base["err"]))),
                   "dT_vs_public_se": se(np.subtract(r["err"], base["err"]))}
        table.append(figures)
        print(f"{label:<56} {figures['calls']:>7.0f} {figures['vision_passes']:>7.0f} "
              f"{figures['s_per_pair']:>8.3f} +-{figures['s_per_pair_se']:<6.3f}"
              f"{figures['mean_abs_dT']:>8.4f} +-{figures['mean_abs_dT_se']:<6.4f} {figures['max_abs_dT']:>8.4f} "
              f"{figures['wall_ratio']:>8.1f}x +-{ratio_se:<4.1f}")
    print(f"\nat matched error (the public path's mean |dT| {np.mean(base['err']):.4f} +- {se(base['err']):.4f}); "
          "paired difference = connote's error minus the public path's on the same pair-seeds:")
    matched = []
    for f in table[1:]:
        ok = f["mean_abs_dT"] <= float(np.mean(base["err"]))
        if ok:
            matched.append(f)
        print(f"  {f['path']:<56} difference {f['dT_vs_public']:+.4f} +- {f['dT_vs_public_se']:.4f}  "
              f"{'at or below the public error' if ok else 'above the public error'}; "
              f"{f['wall_ratio']:.1f}x +- {f['wall_ratio_se']:.1f}")
    if matched:
        best = max(matched, key=lambda f: f["wall_ratio"])
        print(f"  fastest connote path at or below the public path's mean error: {best['path']}, "
              f"{best['wall_ratio']:.1f}x +- {best['wall_ratio_se']:.1f}")
    else:
        print("  no connote path reached the public path's mean error in this run")
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": settings, "params": params, "reference_t_shap": refs,
                                         "paths": table}, indent=2) + "\n")
    return table


if __name__ == "__main__":
    main()
