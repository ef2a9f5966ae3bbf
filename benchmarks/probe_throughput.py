"""Image-text matching throughput: a naive per-pair Hugging Face loop vs connote's engine.

Both run on the same random-init BLIP ITM model (saved with ``save_pretrained`` and loaded back
with ``from_pretrained``) and the same pairs: ``--images`` random photos x ``--captions-per-image``
captions, as in a probe manifest. The naive loop is what a user writes today: processor + forward
per pair, fp32. connote encodes each image once, batches and length-buckets captions, and uses bf16
autocast on GPU. Prints pairs/s of each and the ratio; checks both give the same probabilities.

    python benchmarks/probe_throughput.py --size small          # CPU, small config
    python benchmarks/probe_throughput.py --size base --device cuda --images 2000
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

WORDS = ("a man woman child dog cat person sits begs prays stands holds cup street bench church car "
         "near on in at with the food floor red blue outside inside photo").split()


def build_model(size: str, folder: Path) -> Path:
    from tiny_models import bert_tokenizer
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    tok = bert_tokenizer(folder / "_tok")
    if size == "base":  # BLIP-base ITM: ViT-B/16 at 384 px + BERT-base text encoder
        cfg = BlipConfig(text_config={"vocab_size": tok.vocab_size, "pad_token_id": tok.pad_token_id},
                         vision_config={"image_size": 384, "patch_size": 16})
        image_size = 384
    else:  # a small config for CPU: 4 layers of width 256 on both sides, 128 px images (64 patches)
        layer = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
        cfg = BlipConfig(text_config={**layer, "vocab_size": tok.vocab_size, "encoder_hidden_size": 256,
                                      "pad_token_id": tok.pad_token_id},
                         vision_config={**layer, "image_size": 128, "patch_size": 16})
        image_size = 128
    torch.manual_seed(0)
    model = BlipForImageTextRetrieval(cfg).eval()
    proc = BlipProcessor(image_processor=BlipImageProcessor(size={"height": image_size, "width": image_size}),
                         tokenizer=tok)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def make_pairs(n_images: int, per_image: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    r = random.Random(seed)
    images = [Image.fromarray((rng.rand(240, 320, 3) * 255).astype("uint8")) for _ in range(n_images)]
    captions, pairs = [], []
    for i in range(n_images):
        for _ in range(per_image):
            pairs.append((i, len(captions)))
            captions.append(" ".join(r.choice(WORDS) for _ in range(r.randint(4, 14))))
    return images, captions, pairs


def naive_loop(folder: Path, images, captions, pairs, device: str) -> list[float]:
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    model = BlipForImageTextRetrieval.from_pretrained(folder).to(device).eval()
    processor = AutoProcessor.from_pretrained(folder)
    out = []
    with torch.no_grad():
        for i, c in pairs:
            inputs = processor(images=images[i], text=captions[c], return_tensors="pt").to(device)
            out.append(model(**inputs).itm_score.softmax(-1)[0, 1].item())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["small", "base"], default="small")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--captions-per-image", type=int, default=3)
    ap.add_argument("--naive-pairs", type=int, default=None, help="time the naive loop on this many pairs")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--dtype", default="auto")
    args = ap.parse_args()

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    from connote.models.hf_itm import BlipItmMatcher

    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(args.size, Path(tmp) / "blip")
        images, captions, pairs = make_pairs(args.images, args.captions_per_image)
        naive_pairs = pairs[: args.naive_pairs] if args.naive_pairs else pairs

        naive_loop(folder, images, captions, naive_pairs[:2], args.device)  # warm-up
        t = time.perf_counter()
        ref = naive_loop(folder, images, captions, naive_pairs, args.device)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        naive_s = time.perf_counter() - t

        matcher = BlipItmMatcher(str(folder), device=args.device, dtype=args.dtype,
                                 batch_size=args.batch_size, image_batch_size=args.batch_size)
        matcher.match_probability(images[:2], captions, pairs[:4])  # warm-up
        t = time.perf_counter()
        ours = matcher.match_probability(images, captions, pairs)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        ours_s = time.perf_counter() - t

    naive_rate = len(naive_pairs) / naive_s
    ours_rate = len(pairs) / ours_s
    diff = max(abs(a - b) for a, b in zip(ref, ours[: len(ref)]))
    print(f"model: random-init BLIP ITM ({args.size}), device {args.device}, connote dtype {matcher.dtype}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"pairs: {len(pairs)} ({args.images} images x {args.captions_per_image} captions); "
          f"naive loop timed on {len(naive_pairs)}")
    print(f"naive per-pair HF loop : {naive_rate:10.1f} pairs/s  ({naive_s:.2f} s)")
    print(f"connote engine         : {ours_rate:10.1f} pairs/s  ({ours_s:.2f} s)")
    print(f"ratio                  : {ours_rate / naive_rate:10.1f}x")
    print(f"max |p_naive - p_connote| = {diff:.2e}")


if __name__ == "__main__":
    main()
