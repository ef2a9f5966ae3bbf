"""FLAVA's cached-caption scoring on a CPU: transformers' eager attention (``attention=eager``, the path before
connote fused it) vs torch's fused attention (``attention=sdpa``, the default), same model, same pairs.

A random-weight FLAVA at FLAVA-base width (768 wide, 12 heads, 3,072 inner, 224 px, patch 16) with ``--layers``
layers in each of its image, text and multimodal encoders is built from its config and saved; each side loads it
(``from_pretrained``), encodes ``--images`` photos once, then scores every photo against ``--captions`` captions
of 3 to 18 words in one scoring batch (``_score_cached_text``: each caption encoded once, its pairs scored by
the multimodal encoder). Each side runs in its own process with ``MALLOC_MMAP_THRESHOLD_=65536`` (freed blocks
go back to the system), so its peak is the live memory of that call above the level before it
(:class:`connote.models.memory.PeakRSS`). Printed: seconds, peak MiB and MiB per pair of each side, the ratios,
the plan's bytes per pair (``score_bytes_per_pair``) and the largest |Δ p(match)| between the sides.

    python benchmarks/flava_attention.py                       # 8 photos x 16 captions, 2 layers (~1-2 min)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sides import quiet, report, run_worker  # noqa: E402


def build(folder: Path, layers: int) -> None:
    import torch
    from transformers import BertTokenizerFast, FlavaConfig, FlavaForPreTraining, FlavaImageProcessor, FlavaProcessor

    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_models import write_bert_vocab

    torch.manual_seed(0)
    (folder / "_vocab").mkdir(parents=True)
    tok = BertTokenizerFast(vocab_file=str(write_bert_vocab(folder / "_vocab")))
    width = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, num_hidden_layers=layers)
    cfg = FlavaConfig(image_config=dict(image_size=224, patch_size=16, **width),
                      text_config=dict(vocab_size=len(tok), **width), multimodal_config=dict(**width),
                      image_codebook_config=dict(num_groups=1, num_blocks_per_group=1, hidden_size=32, vocab_size=64),
                      hidden_size=768, projection_dim=64)
    FlavaForPreTraining(cfg).eval().save_pretrained(folder)
    FlavaProcessor(image_processor=FlavaImageProcessor(), tokenizer=tok).save_pretrained(folder)


def worker(args: argparse.Namespace) -> None:
    import torch

    from connote.models import load_model
    from connote.models.memory import PeakRSS

    quiet(args.threads)
    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_models import random_image

    pairs = args.images * args.captions
    m = load_model(f"hf-flava-itm:{args.folder}?attention={args.worker}&batch_size={pairs}&memory_budget=16GB")
    images = [random_image(s, size=(300, 260)) for s in range(args.images)]
    captions = [" ".join(["word"] * (3 + k % 16)) for k in range(args.captions)]
    with torch.inference_mode():
        states = m.encode_pixels(m._preprocess(images, args.images))
    ids = m.token_ids(captions)
    m._score_cached_text(states, [0], ids, [0])  # warm-up
    image_rows = [i for i in range(args.images) for _ in range(args.captions)]
    caption_index = [c for _ in range(args.images) for c in range(args.captions)]
    t = time.perf_counter()
    with PeakRSS() as peak:
        p = m._score_cached_text(states, image_rows, ids, caption_index, pairs)
    report({"seconds": time.perf_counter() - t, "peak": peak.peak, "pairs": pairs,
            "plan_per_pair": m.score_bytes_per_pair(), "p": [float(x) for x in p]})


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--captions", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2, help="layers in each encoder (FLAVA-base: 12, 12, 6)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=["eager", "sdpa"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"  # for the workers: freed blocks back to the system
    common = ["--images", str(args.images), "--captions", str(args.captions), "--threads", str(args.threads)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "flava"
        build(folder, args.layers)
        sides = {side: run_worker([__file__, "--worker", side, "--folder", str(folder), *common], side)
                 for side in ("eager", "sdpa")}
    eager, sdpa = sides["eager"], sides["sdpa"]
    mib = 2**20
    print(f"FLAVA-base width, {args.layers} layers per encoder, {eager['pairs']} pairs in one batch "
          f"({args.images} photos x {args.captions} captions), CPU, {args.threads} threads, "
          f"load {os.getloadavg()[0]:.1f}")
    for name, r in sides.items():
        print(f"  {name:<6} {r['seconds']:6.2f} s  peak {r['peak'] / mib:7.0f} MiB  "
              f"{r['peak'] / r['pairs'] / mib:5.2f} MiB per pair")
    print(f"  sdpa / eager: time {sdpa['seconds'] / eager['seconds']:.2f}x, peak {sdpa['peak'] / eager['peak']:.2f}x; "
          f"the plan's bytes per pair {sdpa['plan_per_pair'] / mib:.2f} MiB")
    diff = max(abs(a - b) for a, b in zip(eager["p"], sdpa["p"]))
    print(f"  max |delta p(match)| {diff:.2e}")
    return sides


if __name__ == "__main__":
    main()
