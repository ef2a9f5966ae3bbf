"""Image-text matching throughput and memory: a naive per-pair Hugging Face loop vs connote's engine.

Both run on the same random-init BLIP ITM model (saved with ``save_pretrained`` and loaded back
with ``from_pretrained``) and the same pairs: ``--images`` random photos x ``--captions-per-image``
captions, as in a probe manifest. The naive loop is what a user writes today: processor + forward
per pair, fp32. connote encodes each image once, keeps its state only while its pairs are scored,
batches and length-buckets captions, and uses bf16 autocast on GPU.

Each side runs in its own Python process (so each one's peak resident memory is its own, read from
``getrusage``), loads the model, warms up on two pairs, then scores every pair. Printed side by
side: pairs/s, seconds, whole-process seconds, peak RSS, CPU seconds per pair, the load average
while each side scored, the ratios, and the largest difference between the two sides' probabilities
(over 1e-4 the benchmark fails: a speed-up must not change the numbers). ``--option attention=eager``
runs connote's BLIP with transformers' eager attention instead of the fused kernel. On CPU the
benchmark also measures the machine's fp32 matmul rate (a 1024^2 product and products of the model's
own shapes) and counts each side's model FLOPs (``torch.utils.flop_counter``), so it prints what
fraction of the best rate each side reaches: what is left once a side runs at that rate is the
model's own arithmetic. ``--profile`` adds connote's operator profile.

    python benchmarks/probe_throughput.py --size small                # CPU, small config (~1-3 min)
    python benchmarks/probe_throughput.py --size base                 # real-size BLIP-base on CPU, 20 pairs
    python benchmarks/probe_throughput.py --size base --images 50     # issue 15's setting: 100 pairs, ~4 min
    python benchmarks/probe_throughput.py --size base --device cuda --images 2000

``base`` is BLIP-base ITM's architecture (ViT-B/16 at 384 px, BERT-base text encoder with
cross-attention), built from ``BlipConfig`` with random weights; ``small`` is 4 layers of width 256
on both sides and 128 px images.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test helpers (tests.support) that build the tiny tokenizers
sys.path.insert(0, str(ROOT / "benchmarks"))
from sides import peak_rss_bytes  # noqa: E402

WORDS = ("a man woman child dog cat person sits begs prays stands holds cup street bench church car "
         "near on in at with the food floor red blue outside inside photo").split()
DEFAULT_IMAGES = {"small": 40, "base": 10}
#: Largest allowed difference between the two sides' p(match): a speed-up must not change the numbers.
TOLERANCE = 1e-4
DEFAULT_CAPTIONS = {"small": 3, "base": 2}


def blip_config(size: str, vocab_size: int, pad_token_id: int) -> tuple[Any, int]:
    """The BLIP ITM config of a size, and its image side in pixels."""
    from transformers import BlipConfig

    # BlipVisionConfig's default initializer_range (1e-10) makes every vision attention uniform, so the
    # two sides' p(match) would agree whatever the vision side computed; BERT's 0.02 gives trained-like scales
    if size == "base":  # BLIP-base ITM: ViT-B/16 at 384 px + BERT-base text encoder
        return BlipConfig(text_config={"vocab_size": vocab_size, "pad_token_id": pad_token_id},
                          vision_config={"image_size": 384, "patch_size": 16, "initializer_range": 0.02}), 384
    # a small config for CPU: 4 layers of width 256 on both sides, 128 px images (64 patches)
    layer = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
    return BlipConfig(text_config={**layer, "vocab_size": vocab_size, "encoder_hidden_size": 256,
                                   "pad_token_id": pad_token_id},
                      vision_config={**layer, "image_size": 128, "patch_size": 16, "initializer_range": 0.02}), 128


def build_model(size: str, folder: Path) -> Path:
    import torch
    from transformers import BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    from tests.support.tiny_models import bert_tokenizer

    tok = bert_tokenizer(folder / "_tok")
    cfg, image_size = blip_config(size, tok.vocab_size, tok.pad_token_id)
    torch.manual_seed(0)
    model = BlipForImageTextRetrieval(cfg).eval()
    proc = BlipProcessor(image_processor=BlipImageProcessor(size={"height": image_size, "width": image_size}),
                         tokenizer=tok)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def make_pairs(n_images: int, per_image: int, seed: int = 0, *, size: tuple[int, int] = (320, 240),
               distinct: int | None = None) -> tuple[list[Any], list[str], list[tuple[int, int]]]:
    """``n_images`` random photos of ``size`` (width, height) x ``per_image`` random captions, as pairs.

    ``distinct`` caps the number of different photos drawn (the rest are copies, still distinct objects as a
    manifest loads them), so a large GPU run does not spend minutes drawing noise.
    """
    import numpy as np
    from PIL import Image

    rng = np.random.RandomState(seed)
    r = random.Random(seed)
    width, height = size
    drawn = n_images if distinct is None else min(n_images, distinct)
    base = [Image.fromarray((rng.rand(height, width, 3) * 255).astype("uint8")) for _ in range(drawn)]
    images = base if drawn == n_images else [base[i % drawn].copy() for i in range(n_images)]
    captions, pairs = [], []
    for i in range(n_images):
        for _ in range(per_image):
            pairs.append((i, len(captions)))
            captions.append(" ".join(r.choice(WORDS) for _ in range(r.randint(4, 14))))
    return images, captions, pairs


def matmul_gflops(m: int = 1024, k: int | None = None, n: int | None = None, seconds: float = 1.5) -> float:
    """The machine's fp32 matmul rate with torch's current threads (best of repeated m x k @ k x n products)."""
    import torch

    k, n = k or m, n or m
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.mm(a, b)
    best = 0.0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * m * k * n / (time.perf_counter() - t) / 1e9)
    return best


def model_gemm_shapes(size: str) -> list[tuple[int, int, int]]:
    """Typical matrix products of each side: a vision MLP over one image's tokens, a text MLP over a
    batch of 16 captions (~13 tokens each), and one caption's text MLP (the naive loop's text side)."""
    if size == "base":
        return [(577, 768, 3072), (16 * 13, 768, 3072), (13, 768, 3072)]
    return [(65, 256, 1024), (8 * 65, 256, 1024), (16 * 13, 256, 1024), (13, 256, 1024)]


# ---- one side, in its own process ---------------------------------------------------------------
def run_naive(folder: Path, images, captions, pairs, device: str):
    import torch
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    model = BlipForImageTextRetrieval.from_pretrained(folder).to(device).eval()
    processor = AutoProcessor.from_pretrained(folder)

    def score(todo):
        out = []
        with torch.no_grad():
            for i, c in todo:
                inputs = processor(images=images[i], text=captions[c], return_tensors="pt").to(device)
                out.append(model(**inputs).itm_score.softmax(-1)[0, 1].item())
        return out

    return score


def run_connote(folder: Path, images, captions, pairs, device: str, options: dict[str, str]):
    from connote.models.hf_blip import BlipItmMatcher

    matcher = BlipItmMatcher(str(folder), device=device, **options)

    def score(todo):
        return matcher.match_probability(images, captions, todo)

    score.matcher = matcher  # type: ignore[attr-defined]
    return score


def worker(args: argparse.Namespace) -> None:
    """Score every pair with one side and print a JSON line of its figures."""
    started = time.perf_counter()
    from sides import quiet, timed

    quiet(args.threads)
    images, captions, pairs = make_pairs(args.images, args.captions_per_image)
    pairs = pairs[: args.pairs] if args.pairs else pairs
    options = dict(kv.split("=", 1) for kv in args.option)
    if args.worker == "naive":
        score = run_naive(args.folder, images, captions, pairs, args.device)
    else:
        score = run_connote(args.folder, images, captions, pairs, args.device, options)
    score([(0, 0), (0, 1)] if len(captions) > 1 else [(0, 0)])  # warm-up
    rss_loaded = peak_rss_bytes()
    cuda = args.device.startswith("cuda")
    probs, figures = timed(lambda: score(pairs), args.device)
    result: dict[str, Any] = {"side": args.worker, "pairs": len(pairs), **figures,
                              "pairs_per_s": len(pairs) / figures["seconds"], "rss_after_load": rss_loaded,
                              "probs": probs}
    if args.worker == "connote":
        m = score.matcher  # type: ignore[attr-defined]
        result["dtype"] = str(m.dtype).replace("torch.", "")
        if hasattr(m, "work_plan"):  # engines before the memory budget have no plan to print
            result.update({"plan": m.work_plan(), "memory_budget": m.memory_budget,
                           "image_state_bytes": m.image_state_bytes()})
    if args.count_flops and not cuda:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            score(pairs)
        result["flops"] = counter.get_total_flops()
    if args.profile and args.worker == "connote":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            score(pairs)
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        matmul = sum(e.self_cpu_time_total for e in events
                     if e.key in ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul", "aten::baddbmm"))
        result["profile_table"] = events.table(sort_by="self_cpu_time_total", row_limit=15)
        result["profile_matmul_share"] = matmul / total if total else None
    result["process_seconds"] = time.perf_counter() - started
    from sides import report

    report(result)


def run_side(side: str, folder: Path, args: argparse.Namespace, pairs: int | None, count_flops: bool) -> dict:
    from sides import run_worker

    cmd = [__file__, "--worker", side, "--folder", str(folder), "--device", args.device,
           "--images", str(args.images), "--captions-per-image", str(args.captions_per_image)]
    cmd += ["--pairs", str(pairs)] if pairs else []
    cmd += ["--threads", str(args.threads)] if args.threads else []
    cmd += ["--count-flops"] if count_flops else []
    cmd += ["--profile"] if args.profile and side == "connote" else []
    for kv in args.option:
        cmd += ["--option", kv]
    return run_worker(cmd, f"{side} side")


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["small", "base"], default="small")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--images", type=int, default=None, help="distinct photos (default: 40 small, 10 base)")
    ap.add_argument("--captions-per-image", type=int, default=None, help="default: 3 small, 2 base")
    ap.add_argument("--naive-pairs", type=int, default=None, help="time the naive loop on this many pairs only")
    ap.add_argument("--threads", type=int, default=None, help="torch threads in each side (default: torch's)")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a connote spec option, e.g. memory_budget=1GB or batch_size=32 (repeatable)")
    ap.add_argument("--flops", action=argparse.BooleanOptionalAction, default=None,
                    help="count model FLOPs and measure the matmul rate (CPU; default: on for small, off for base, "
                         "where counting repeats the slow naive loop)")
    ap.add_argument("--profile", action="store_true", help="print connote's operator profile")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    # internal: one side in a subprocess
    ap.add_argument("--worker", choices=["naive", "connote"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--pairs", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--count-flops", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.images = args.images or DEFAULT_IMAGES[args.size]
    args.captions_per_image = args.captions_per_image or DEFAULT_CAPTIONS[args.size]
    if args.worker:
        worker(args)
        return

    import torch

    cpu = not args.device.startswith("cuda")
    count_flops = cpu and (args.flops if args.flops is not None else args.size == "small")
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(args.size, Path(tmp) / "blip")
        naive = run_side("naive", folder, args, args.naive_pairs, count_flops)
        ours = run_side("connote", folder, args, None, count_flops)
    if args.threads:
        torch.set_num_threads(args.threads)

    n_pairs = args.images * args.captions_per_image
    diff = max(abs(a - b) for a, b in zip(naive["probs"], ours["probs"]))
    print(f"model: random-init BLIP ITM ({args.size}), device {args.device}, connote dtype {ours['dtype']}, "
          f"torch threads {ours['torch_threads']}")
    print(f"pairs: {n_pairs} ({args.images} images x {args.captions_per_image} captions); "
          f"naive loop timed on {naive['pairs']}")
    if "plan" in ours:
        print(f"connote plan: {ours['plan']} (memory budget {gb(ours['memory_budget'])}, "
              f"image state {ours['image_state_bytes'] / 1e6:.1f} MB)")
    print(f"{'':24}{'pairs/s':>10}{'scoring s':>11}{'process s':>11}{'peak RSS':>11}{'CPU s/pair':>12}"
          "  load avg (1 min)")
    for name, r in (("naive per-pair HF loop", naive), ("connote engine", ours)):
        print(f"{name:24}{r['pairs_per_s']:10.2f}{r['seconds']:11.2f}{r['shell_seconds']:11.2f}"
              f"{gb(r['peak_rss']):>11}{r['cpu_seconds'] / r['pairs']:12.3f}"
              f"  {r['load_average'][0]:.1f} -> {r['load_average'][1]:.1f}")
    ratio = ours["pairs_per_s"] / naive["pairs_per_s"]
    mem_ratio = ours["peak_rss"] / naive["peak_rss"]
    cpu_ratio = (naive["cpu_seconds"] / naive["pairs"]) / (ours["cpu_seconds"] / ours["pairs"])
    print(f"{'ratio (connote/naive)':24}{ratio:9.2f}x{'':22}{mem_ratio:10.2f}x{cpu_ratio:11.2f}x")
    print("(CPU s/pair: the process's CPU time, user + system, per pair scored; with one torch thread it is "
          "the least disturbed by other jobs on the machine)")
    print(f"max |p_naive - p_connote| = {diff:.2e} (must be <= {TOLERANCE:g})")
    rate = None
    if count_flops:
        rates = {(1024, 1024, 1024): matmul_gflops()}
        rates.update({shape: matmul_gflops(*shape, seconds=0.5) for shape in model_gemm_shapes(args.size)})
        rate = max(rates.values())
        print("machine fp32 matmul rate, best of repeated products, torch threads as above:")
        for (m, k, n), r in rates.items():
            print(f"  {m:5d}x{k} @ {k}x{n}: {r:6.1f} GFLOP/s")
        print(f"  the best, {rate:.1f} GFLOP/s, is 'the matmul rate' below")
        for name, r in (("naive", naive), ("connote", ours)):
            r["achieved_gflops"] = r["flops"] / r["pairs"] * r["pairs_per_s"] / 1e9
            print(f"{name:8} model FLOPs/pair {r['flops'] / r['pairs'] / 1e9:7.3f} G, achieved "
                  f"{r['achieved_gflops']:6.1f} GFLOP/s = {r['achieved_gflops'] / rate:.0%} of the matmul rate")
    figures: dict[str, Any] = {"size": args.size, "device": args.device, "pairs": n_pairs, "images": args.images,
                               "captions_per_image": args.captions_per_image, "speedup": ratio,
                               "peak_rss_ratio": mem_ratio, "max_abs_diff": diff, "matmul_gflops": rate,
                               "naive": {k: v for k, v in naive.items() if k != "probs"},
                               "connote": {k: v for k, v in ours.items() if k not in ("probs", "profile_table")}}
    if "profile_table" in ours:
        print(f"connote profile: matmul ops take {ours['profile_matmul_share']:.0%} of operator self time")
        print(ours["profile_table"])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if not diff <= TOLERANCE:
        sys.exit(f"connote's p(match) differs from the naive loop's by {diff:.2e} > {TOLERANCE:g}")


if __name__ == "__main__":
    main()
