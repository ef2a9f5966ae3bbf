"""BLIP-2's scoring of a masking-game-like batch on a CPU: transformers' Q-Former on a state gathered per row
(``attention=eager``, the path before rows were grouped) vs rows grouped by image (``attention=sdpa``, the
default: each cross-attention layer projects an image's keys and values once for all its rows), same pairs.

A random-weight BLIP-2 with BLIP-2's Q-Former at full size (12 layers, 768 wide, 12 heads, 3,072 inner,
cross-attention every 2nd layer, 32 query tokens) reading ViT-g/14-shaped image tokens (257 x 1,408) from a
vision tower cut to ``--vision-layers`` layers (its depth does not enter the scoring call) is built from its
config and saved; each side loads it (``from_pretrained``), encodes ``--images`` images once, then scores
``--rows`` captions of 3 to 18 words against each image in one scoring batch (``score_ids`` on one state per
image, as a masking game's value function does). Each side runs in its own process with
``MALLOC_MMAP_THRESHOLD_=65536`` (freed blocks go back to the system), so its peak is the live memory of that
call above the level before it (:class:`connote.models.memory.PeakRSS`). Printed: seconds, peak MiB and MiB per
row (pair) of each side, the ratios, the plan's bytes per pair (``score_bytes_per_pair``) and the largest |Δ p(match)|.

    python benchmarks/blip2_grouped.py                     # 4 images x 32 rows in one batch (~1-2 min)
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


def build(folder: Path, vision_layers: int) -> None:
    import torch
    from transformers import (
        BertTokenizerFast,
        Blip2Config,
        Blip2ForImageTextRetrieval,
        Blip2Processor,
        BlipImageProcessor,
    )

    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_models import write_bert_vocab

    torch.manual_seed(0)
    (folder / "_vocab").mkdir(parents=True)
    tok = BertTokenizerFast(vocab_file=str(write_bert_vocab(folder / "_vocab")))
    cfg = Blip2Config(
        vision_config=dict(hidden_size=1408, num_hidden_layers=vision_layers, num_attention_heads=16,
                           intermediate_size=1408, image_size=224, patch_size=14, initializer_range=0.2),
        qformer_config=dict(vocab_size=len(tok), hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, encoder_hidden_size=1408, cross_attention_frequency=2,
                            max_position_embeddings=512, pad_token_id=tok.pad_token_id, use_qformer_text_input=True,
                            initializer_range=0.05),
        text_config=dict(model_type="opt", vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         ffn_dim=64, word_embed_proj_dim=32),
        num_query_tokens=32, image_text_hidden_size=256)
    cfg.image_token_index = None
    Blip2ForImageTextRetrieval(cfg).eval().save_pretrained(folder)
    Blip2Processor(image_processor=BlipImageProcessor(size={"height": 224, "width": 224}), tokenizer=tok,
                   num_query_tokens=None).save_pretrained(folder)


def worker(args: argparse.Namespace) -> None:
    from connote.models.memory import PeakRSS

    rows = args.images * args.rows
    m, states, ids = side_inputs(args, "hf-blip2-itm", args.rows)
    m.score_ids(states, [0], ids[:1])  # warm-up
    image_of = [i for i in range(args.images) for _ in range(args.rows)]
    row_ids = [ids[k] for _ in range(args.images) for k in range(args.rows)]
    t = time.perf_counter()
    with PeakRSS() as peak:
        p = m.score_ids(states, image_of, row_ids, rows)
    report({"seconds": time.perf_counter() - t, "peak": peak.peak, "pairs": rows,
            "plan_per_pair": m.score_bytes_per_pair(), "state": m.image_state_bytes(), "p": p})


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=32, help="rows (captions) per image")
    ap.add_argument("--vision-layers", type=int, default=1, help="ViT layers (ViT-g/14: 39; not in the timed call)")
    args = side_args(ap, argv, images=4)
    if args.worker:
        return worker(args)
    sides = run_sides(__file__, lambda folder: build(folder, args.vision_layers), args, ["--rows", str(args.rows)])
    print(f"BLIP-2 Q-Former (12 layers, 768 wide, 32 queries) on ViT-g/14-shaped tokens (257 x 1408, state "
          f"{sides['eager']['state'] / 2**20:.2f} MiB), {sides['eager']['pairs']} rows in one batch ({args.images} "
          f"images x {args.rows} captions), CPU, {args.threads} threads, load {os.getloadavg()[0]:.1f}")
    print_sides(sides)
    return sides


if __name__ == "__main__":
    main()
