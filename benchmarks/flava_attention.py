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
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sides import print_sides, report, run_sides, side_args, side_inputs  # noqa: E402


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
    from connote.models.memory import PeakRSS

    pairs = args.images * args.captions
    m, states, ids = side_inputs(args, "hf-flava-itm", args.captions)
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
    ap.add_argument("--captions", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2, help="layers in each encoder (FLAVA-base: 12, 12, 6)")
    args = side_args(ap, argv, images=8)
    if args.worker:
        return worker(args)
    sides = run_sides(__file__, lambda folder: build(folder, args.layers), args, ["--captions", str(args.captions)])
    print(f"FLAVA-base width, {args.layers} layers per encoder, {sides['eager']['pairs']} pairs in one batch "
          f"({args.images} photos x {args.captions} captions), CPU, {args.threads} threads, "
          f"load {os.getloadavg()[0]:.1f}")
    print_sides(sides)
    return sides


if __name__ == "__main__":
    main()
