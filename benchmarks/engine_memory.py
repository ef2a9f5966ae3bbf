"""Peak memory of the matching engine and of an MM-SHAP masking game at BLIP-base size on the CPU, against the
memory plan's prediction, under a simulated budget (``memory_budget=``).

A random-weight BLIP ITM model with BLIP-base's architecture (ViT-B/16 at 384 px, BERT-base text encoder) is
built from its config; then, each measured with :class:`connote.models.memory.PeakRSS` (the process's
resident high-water mark above its level on entry):

* ``probe``: ``match_probability`` of ``--images`` photos x 2 captions;
* ``explain``: one call of a masking game's value function with ``--masks`` random joint masks (all distinct
  image masks: the call the H200 run died in).

Run it as ``MALLOC_MMAP_THRESHOLD_=65536 python benchmarks/engine_memory.py`` so that freed tensors go back
to the system and the figure is the live peak (the script re-executes itself so when the variable is
missing). ``--json FILE`` writes the figures; ``tests/models/test_engine_memory.py`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def peak_rss():  # -> context manager with .peak
    try:
        from connote.models.memory import PeakRSS
    except ImportError:  # connote before the memory module (for before/after figures)
        class PeakRSS:  # type: ignore[no-redef]
            def _read(self, key):
                for line in Path("/proc/self/status").read_text().splitlines():
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
                return 0

            def __enter__(self):
                Path("/proc/self/clear_refs").write_text("5")
                self.start = self._read("VmRSS")
                return self

            def __exit__(self, *exc):
                self.peak = max(0, self._read("VmHWM") - self.start)
    return PeakRSS()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", default="1GB", help="the engine's memory_budget (a simulated device)")
    ap.add_argument("--images", type=int, default=6)
    ap.add_argument("--masks", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:  # freed blocks back to the system: RSS = live memory
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
        return sys.exit(subprocess.call([sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])],
                                        env=env))
    import torch

    sys.path.insert(0, str(HERE))
    from explain_vs_mmshap import SIZES, build_blip, make_pairs

    from connote.models.registry import load_model, parse_spec

    torch.set_num_threads(args.threads)
    out: dict = {"budget": args.budget}
    with tempfile.TemporaryDirectory() as tmp:
        base = SIZES["base"]
        folder = build_blip(Path(tmp) / "blip", hidden=base["hidden"], layers=base["layers"],
                            image_size=base["image_size"], patch=base["patch"], init_range=base["init_range"], seed=0)
        matcher = load_model(parse_spec(f"hf-blip-itm:{folder}?memory_budget={args.budget}"))
    pairs = make_pairs(args.images, 3, seed=1)
    images = [im for im, _ in pairs]
    captions = [c for _, c in pairs] + ["a dog sits on a bench"]
    plan = matcher.work_plan() if hasattr(matcher, "work_plan") else {}
    matcher.image_state_bytes()
    start = time.perf_counter()
    with peak_rss() as probe:
        matcher.match_probability(images, captions, [(i, c) for i in range(len(images)) for c in (i, len(images))])
    out["probe"] = {"peak_bytes": probe.peak, "seconds": time.perf_counter() - start,
                    "plan_peak_bytes": plan.get("peak_bytes"), "plan": plan}
    from connote.models.masking import tensor_game

    game = tensor_game(matcher, images[0], captions[0], compat="mmshap")
    try:
        from connote.models.masking import game_plan

        gplan = game_plan(matcher)
    except ImportError:
        gplan = {}
    masks = np.random.default_rng(0).random((args.masks, game.n_text + game.n_patches)) < 0.5
    start = time.perf_counter()
    with peak_rss() as explain:
        game.value_fn(masks)
    out["explain"] = {"peak_bytes": explain.peak, "seconds": time.perf_counter() - start,
                      "plan_peak_bytes": gplan.get("peak_bytes"), "image_encodes": game.image_encodes[0]}
    mb = lambda b: "-" if b is None else f"{b / 2**20:,.0f} MiB"  # noqa: E731
    state = mb(matcher.image_state_bytes())
    print(f"BLIP-base (random weights) on the CPU, memory_budget={args.budget}, state {state}")
    for name in ("probe", "explain"):
        r = out[name]
        print(f"  {name:<8} peak {mb(r['peak_bytes']):>10} (plan {mb(r['plan_peak_bytes'])}), {r['seconds']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str) + "\n")
    return out


if __name__ == "__main__":
    main()
