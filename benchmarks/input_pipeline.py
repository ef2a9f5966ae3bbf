"""The matching engine's input side on a CPU: today's per-image transformers processor vs ``preprocess=device``,
and the overlap of input preparation with a model's compute.

Photos: scikit-image's astronaut, coffee, chelsea and rocket, written as JPEG files and repeated to
``--images``; each side reads the files' bytes (what a run reads from disk). Each measurement runs in its own
process (its peak RSS is its own):

``input``   the input side alone, per image in the model's pixels (BLIP's processor: 384 px, bicubic, CLIP
            mean/std): ``hf`` = PIL decode + the transformers image processor called per image, as
            ``preprocess=hf`` does; ``device`` = ``connote.models.pixels`` (each photo decoded by torchvision,
            resized by torch's uint8 kernel and normalised into its row of the batch, on ``--workers``
            threads), the engine's default. Printed: images/s of each, the process's CPU time a photo, and
            the ratios (goal >= 4x in images/s). Each side runs ``--repeat`` passes; the fastest is printed,
            with the median beside it (other jobs on shared cores only ever slow a pass down). ``--threads``
            sets torch's threads in both sides: with torch's default (every core) the ``hf`` side's
            elementwise ops each start an OpenMP team, which on cores other jobs share waits for a descheduled
            thread; ``--threads 1`` shows the sides' own costs.
``engine``  ``TensorMatcher.match_probability`` over the photos x ``--captions`` captions with a stand-in model
            whose image encoder takes ``--compute-ms`` per image (a sleep: the time a GPU would take, during
            which the CPU is free, as it is while a GPU computes), ``preprocess=device``, with the next groups'
            pixels prepared on a thread (``pipelined``) and without (``serial``, prefetch depth 0: the engine
            before the input pipeline). Printed: input seconds (the input side alone, same process), compute
            seconds (the stand-in's sleeps), wall, and wall / max(input, compute) (goal <= 1.15); the input
            seconds are the faster of two passes after the timed call (the machine's load varies).

``run``     ``connote cv-probes run``'s path over the photos as JPEG files on disk and a manifest (``--chunk`` pairs
            per stored chunk), with the same stand-in model: ``run-serial`` = the task before it read ahead (each
            chunk's photos opened and decoded by Pillow one after another on the calling thread, then scored),
            ``run-ahead`` = the task now (the next chunk's files read on a thread while the model scores this one,
            JPEGs handed over encoded and decoded by the engine's workers, on the GPU when there is one). Printed:
            wall of the whole run (store writes included), the stand-in's compute seconds, wall / compute, and the
            ratio of the two walls.

    python benchmarks/input_pipeline.py                            # 256 photos, 8 ms per image (~1 min)
    python benchmarks/input_pipeline.py --images 32 --compute-ms 2 # a quick look
    python benchmarks/input_pipeline.py --processor clip336        # CLIP-L/336's pixels (LLaVA-1.5, hf-vlm)
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sides import peak_rss_bytes, quiet, report, run_worker  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
CAPTIONS = ("an astronaut", "a cup of coffee", "a cat", "a rocket launch")
#: Goals of issue 35: wall within 15% of the slower side; the input side at least 4x today's processor.
OVERLAP_GOAL, INPUT_GOAL = 1.15, 4.0


def photo_bytes(n: int) -> list[bytes]:
    """``n`` JPEG files' contents, the four photos in turn (quality 90)."""
    from PIL import Image
    from skimage import data

    encoded = []
    for name in PHOTOS:
        buf = io.BytesIO()
        Image.fromarray(getattr(data, name)()).convert("RGB").save(buf, "JPEG", quality=90)
        encoded.append(buf.getvalue())
    return [encoded[k % len(encoded)] for k in range(n)]


#: The processors ``--processor`` names: (what the printout calls its pixels, a maker of the processor).
PROCESSORS = {
    "blip": "BLIP pixels (384 x 384)",
    "clip336": "CLIP-L/336 pixels (shortest edge 336, centre crop; LLaVA-1.5's and hf-vlm's)",
}


def make_processor(name: str = "blip") -> Any:
    """``blip``: Salesforce/blip-itm-base-coco's processor (384 x 384, bicubic, CLIP mean/std); ``clip336``:
    openai/clip-vit-large-patch14-336's (shortest edge 336, bicubic, centre crop 336), the vision tower's processor
    of LLaVA-1.5, so of ``hf-vlm``'s yes/no scoring on the device pixel path. Built from their configs' values (no
    download)."""
    if name == "clip336":
        from transformers import CLIPImageProcessor

        return CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    from transformers import BlipImageProcessor

    return BlipImageProcessor()


def hf_pixels(data: list[bytes], processor: Any) -> Any:
    """Today's path: PIL decode, then the processor per image (``preprocess=hf`` gives it one image a call)."""
    import torch
    from PIL import Image

    out = [processor(images=[Image.open(io.BytesIO(b)).convert("RGB")], return_tensors="pt")["pixel_values"]
           for b in data]
    return torch.cat(out)


def device_pixels(data: list[bytes], spec: Any, workers: int, batch: int) -> list[Any]:
    """``preprocess=device``: one ``(batch, 3, H, W)`` tensor per ``batch`` images, as the engine holds them."""
    from connote.models.pixels import pixel_batch

    return [pixel_batch(data[i:i + batch], spec, "cpu", workers=workers) for i in range(0, len(data), batch)]


def input_side(args: argparse.Namespace) -> None:
    import torch

    from connote.models.pixels import PixelSpec

    quiet(args.threads)
    data = photo_bytes(args.images)
    processor = make_processor(args.processor)
    spec = PixelSpec.from_processor(processor)
    run = (lambda: hf_pixels(data, processor)) if args.side == "hf" else \
        (lambda: device_pixels(data, spec, args.workers, args.batch))
    run() if args.images <= 8 else (hf_pixels(data[:4], processor) if args.side == "hf" else
                                    device_pixels(data[:4], spec, args.workers, args.batch))  # warm-up
    passes = []  # (wall, CPU) of each pass; the fastest is reported (other jobs on the cores only slow a pass)
    for _ in range(args.repeat):
        cpu = time.process_time()
        t = time.perf_counter()
        pixels = run()
        passes.append((time.perf_counter() - t, time.process_time() - cpu))
        count = sum(len(p) for p in pixels) if isinstance(pixels, list) else len(pixels)
        del pixels
    seconds, cpu_seconds = min(passes)
    report({"side": args.side, "seconds": seconds, "images_per_s": args.images / seconds,
            "median_seconds": sorted(w for w, _ in passes)[len(passes) // 2],
            "cpu_ms_per_image": 1000 * cpu_seconds / args.images, "threads": torch.get_num_threads(),
            "images": count, "peak_rss": peak_rss_bytes()})


class StandIn:
    """A matching backend whose image encoder takes ``seconds_per_image`` (sleeping) and whose scoring is free:
    the engine's own scheduling, with BLIP's preprocessing, and compute of a known length."""

    @staticmethod
    def build(seconds_per_image: float, batch_size: int, image_batch: int) -> Any:
        import torch

        from connote.models.engine import TensorMatcher
        from connote.models.pixels import PixelSpec

        class Model(TensorMatcher):
            backend = "stand-in"

            def __init__(self) -> None:
                super().__init__(device="cpu", batch_size=batch_size, image_batch_size=image_batch,
                                 memory_budget="4GB")
                self.processor = make_processor("blip")
                self.spec = PixelSpec.from_processor(self.processor)
                self.compute_seconds = 0.0
                self.tokenizer = types.SimpleNamespace(pad_token_id=0)

            def pixel_spec(self) -> Any:
                return self.spec

            def processor_pixels(self, images: Any) -> Any:
                return self.processor(images=list(images), return_tensors="pt")["pixel_values"]

            def encode_images(self, pixel_values: Any) -> Any:
                n = pixel_values.shape[0]
                self.compute_seconds += seconds_per_image * n
                time.sleep(seconds_per_image * n)
                return pixel_values.mean(dim=(2, 3))  # (n, 3): reads every pixel, as an encoder would

            def token_ids(self, captions: Any) -> list[list[int]]:
                return [[1, 2, 3] for _ in captions]

            def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
                return torch.sigmoid(image_states.sum(-1))

        return Model()


def prepare_all(model: Any, data: list[bytes], groups: list[list[int]], batch: int) -> float:
    """Seconds the engine's input side takes alone for ``groups`` (as ``match_probability`` prepares them: under
    ``torch.inference_mode``)."""
    import torch

    t = time.perf_counter()
    with torch.inference_mode():
        for group in groups:
            model._preprocess([data[i] for i in group], batch)
    return time.perf_counter() - t


def engine_side(args: argparse.Namespace) -> None:
    from connote.models import engine

    quiet(args.threads)
    data = photo_bytes(args.images)
    model = StandIn.build(args.compute_ms / 1000, args.batch, args.image_batch)
    model.preprocess_workers = args.workers
    if args.side == "serial":
        engine.PREFETCH_GROUPS = 0
    captions = list(CAPTIONS[:args.captions])
    pairs = [(i, c) for i in range(len(data)) for c in range(len(captions))]
    model.match_probability(data[:4], captions, pairs[:4 * len(captions)])  # warm-up
    groups = model.image_groups(pairs)
    plan = model.work_plan()
    model.compute_seconds = 0.0
    t = time.perf_counter()
    probs = model.match_probability(data, captions, pairs)
    wall = time.perf_counter() - t
    assert len(probs) == len(pairs) and all(0 <= p <= 1 for p in probs)
    input_seconds = min(prepare_all(model, data, groups, plan["image_batch"]) for _ in range(2))
    report({"side": args.side, "input_seconds": input_seconds, "compute_seconds": model.compute_seconds,
            "wall": wall, "groups": len(groups), "pairs": len(pairs), "peak_rss": peak_rss_bytes()})


def write_probe_files(folder: Path, data: list[bytes], captions: int) -> Path:
    """Each photo as its own JPEG file and a CV-Probes manifest of ``captions`` captions per photo."""
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "image", "image_kind", "caption", "caption_kind"])
        for i, b in enumerate(data):
            (folder / f"photo{i:05d}.jpg").write_bytes(b)
            for c in range(captions):
                w.writerow([f"p{i}-{c}", f"photo{i:05d}.jpg", "SG", CAPTIONS[c], "SG" if c % 2 == 0 else "PG"])
    return path


def run_side(args: argparse.Namespace) -> None:
    """One CV-Probes run over files with the stand-in model, the task as it is (``run-ahead``) or as it was."""
    import tempfile

    from connote.cv_probes import task as probe_task
    from connote.cv_probes.task import ProbeTask, run_probe
    from connote.media import images as image_loading
    from connote.tasks.api import Task

    quiet(args.threads)
    model = StandIn.build(args.compute_ms / 1000, args.batch, args.image_batch)
    model.preprocess_workers = args.workers
    if args.side == "run-serial":  # the task before the read-ahead: no prepare, one thread, Pillow decodes
        ProbeTask.prepare = Task.prepare
        image_loading.load_workers = lambda: 1
        probe_task.takes_encoded_images = lambda m: False
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_probe_files(Path(tmp) / "data", photo_bytes(args.images), args.captions)
        run_probe(write_probe_files(Path(tmp) / "warm", photo_bytes(4), args.captions), out=Path(tmp) / "warm-run",
                  model_obj=model, progress=False, pairs_per_chunk=args.chunk)  # warm-up
        model.compute_seconds = 0.0
        t = time.perf_counter()
        results = run_probe(manifest, out=Path(tmp) / "run", model_obj=model, progress=False,
                            pairs_per_chunk=args.chunk)
        wall = time.perf_counter() - t
    n = sum(cell["n"] for cell in results["cells"].values()) if "cells" in results else args.images * args.captions
    report({"side": args.side, "wall": wall, "compute_seconds": model.compute_seconds, "pairs": n,
            "chunks": -(-args.images * args.captions // args.chunk), "peak_rss": peak_rss_bytes()})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=256, help="photos (the four repeated)")
    ap.add_argument("--captions", type=int, default=2, help="captions per photo (at most 4)")
    ap.add_argument("--compute-ms", type=float, default=8.0, help="the stand-in encoder's time per image")
    ap.add_argument("--batch", type=int, default=64, help="pairs per scoring batch (and images per input batch)")
    ap.add_argument("--image-batch", type=int, default=32, help="images per encoder batch")
    ap.add_argument("--workers", type=int, default=4, help="decoding threads (preprocess_workers)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes of each input side (the fastest is printed)")
    ap.add_argument("--processor", choices=sorted(PROCESSORS), default="blip",
                    help="whose pixels the input side makes (the engine side always uses BLIP's)")
    ap.add_argument("--chunk", type=int, default=64, help="pairs per stored chunk of the run (cv-probes --chunk)")
    ap.add_argument("--side", choices=["hf", "device", "serial", "pipelined", "run-serial", "run-ahead"],
                    help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.side in ("hf", "device"):
        input_side(args)
        return 0
    if args.side in ("run-serial", "run-ahead"):
        run_side(args)
        return 0
    if args.side:
        engine_side(args)
        return 0
    me = [str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:])]
    load = os.getloadavg()[0]
    sides = {s: run_worker([*me, "--side", s], s)
             for s in ("hf", "device", "serial", "pipelined", "run-serial", "run-ahead")}
    mib = 2 ** 20
    print(f"input side, {args.images} JPEG photos -> {PROCESSORS[args.processor]}, {os.cpu_count()} cores, "
          f"{sides['hf']['threads']} torch threads, {args.workers} workers, load {load:.1f}:")
    for s in ("hf", "device"):
        r = sides[s]
        print(f"  {s:9s} {r['images_per_s']:8.1f} images/s  {r['seconds']:6.2f} s (median of {args.repeat} "
              f"{r['median_seconds']:6.2f} s)  CPU {r['cpu_ms_per_image']:5.2f} ms a photo  "
              f"peak RSS {r['peak_rss'] / mib:6.0f} MiB")
    ratio = sides["device"]["images_per_s"] / sides["hf"]["images_per_s"]
    print(f"  device / hf: {ratio:.2f}x images/s (goal >= {INPUT_GOAL:.0f}x), "
          f"{sides['hf']['cpu_ms_per_image'] / sides['device']['cpu_ms_per_image']:.2f}x less CPU a photo")
    print(f"engine, {sides['pipelined']['pairs']} pairs in {sides['pipelined']['groups']} groups, stand-in encoder "
          f"{args.compute_ms:g} ms/image:")
    overlap = {}
    for s in ("serial", "pipelined"):
        r = sides[s]
        overlap[s] = r["wall"] / max(r["input_seconds"], r["compute_seconds"])
        print(f"  {s:9s} input {r['input_seconds']:6.2f} s  compute {r['compute_seconds']:6.2f} s  wall "
              f"{r['wall']:6.2f} s  wall/max(input, compute) {overlap[s]:.2f}  peak RSS {r['peak_rss'] / mib:6.0f} MiB")
    print(f"  pipelined wall / max(input, compute): {overlap['pipelined']:.2f} (goal <= {OVERLAP_GOAL}); "
          f"serial / pipelined wall: {sides['serial']['wall'] / sides['pipelined']['wall']:.2f}x")
    ahead = sides["run-ahead"]
    print(f"cv-probes run over {args.images} JPEG files, {ahead['pairs']} pairs in {ahead['chunks']} chunks of "
          f"{args.chunk}, stand-in encoder {args.compute_ms:g} ms/image:")
    for s in ("run-serial", "run-ahead"):
        r = sides[s]
        print(f"  {s:10s} wall {r['wall']:6.2f} s  compute {r['compute_seconds']:6.2f} s  wall/compute "
              f"{r['wall'] / r['compute_seconds']:.2f}  peak RSS {r['peak_rss'] / mib:6.0f} MiB")
    print(f"  run-serial / run-ahead wall: {sides['run-serial']['wall'] / ahead['wall']:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
