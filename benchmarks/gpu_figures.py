"""Every GPU figure of docs/performance.md in one run, on one CUDA GPU, in about 8 minutes.

Run through ``benchmarks/gpu.sh`` from a fresh clone after the README's install; nothing is
downloaded: every model is real size, built from its config with random weights, saved with
``save_pretrained`` and loaded back through connote's own loading path. Sections:

* ``probe``: image-text matching throughput of real-size BLIP-base ITM (ViT-B/16 at 384 px +
  BERT-base), BLIP-2 ITM (ViT-g/14 + Q-Former) and CLIP ViT-L/14: a naive per-pair Hugging Face
  loop (processor + forward per pair, bf16 weights) against connote's engine (bf16), both in
  pairs/s, and connote's model FLOP/s as a fraction of the GPU's dense bf16 peak (FLOPs counted
  with ``torch.utils.flop_counter`` on a slice of the same pairs).
* ``explain``: ``benchmarks/explain_vs_mmshap.py`` on the GPU when that script is present (its own
  figures are copied into the table); skipped, and said so, when it is not.
* ``train``: ``benchmarks/train_throughput.py --size real``: GIT-LLaVA stage-2 step time and MFU
  with a GIT-large captioner and a TinyLlama-1.1B-shaped random LLM.
* ``generate``: ``benchmarks/generation.py --size real``: the per-item Hugging Face ``generate`` loop vs
  connote's ``generate()`` (bf16) for a LLaVA-shaped chat VLM over 5 photos and GIT-LLaVA over 6 frames,
  connote with the dynamic KV cache and with the static cache and a compiled step (CUDA graphs): items/s,
  tokens/s, peak memory and the bf16 flip rate against batch 1.

The probe table also gives the input side alone (the engine's own read/decode/resize/normalise path on
every image of the run) as a share of the engine's wall, and ``cv-probes run`` itself over the same pairs as a
manifest of JPEG files (files read a chunk ahead, decoded on the GPU, scores stored chunk by chunk) in pairs/s.
Each script section runs in its own process with
its own time limit (explain 120 s, train 100 s, generate 150 s), cut to what is left of the whole run's
``--budget`` (420 s on a GPU, so the run fits one 8-minute call); the figures are written after every
section, so a run stopped from outside keeps what it measured.

Writes ``figures.json`` and ``figures.md`` (a table) under ``--out`` and prints the table.
``--dry-run`` builds every config on the meta device (no memory, no GPU) and prints the plan with
the parameter counts; without ``--dry-run`` the script stops at once with exit status 2 when
CUDA is not available.

    bash benchmarks/gpu.sh                      # everything, ~8 min on one H100/H200
    bash benchmarks/gpu.sh --only probe         # one section
    bash benchmarks/gpu.sh --dry-run            # the plan, on any machine
    bash benchmarks/gpu.sh --smoke              # every section's code path with tiny models, on the CPU

``--smoke`` runs the same code with tiny models and a few pairs on ``--device cpu`` (the default with
``--smoke``) in about a minute: the test suite runs it, so the GPU run's code has run before a GPU is lent.
Its figures measure nothing.
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
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the test helpers (tests.support) that build the tiny tokenizers
sys.path.insert(0, str(BENCH))

SECTIONS = ("probe", "explain", "train", "generate")
PROBE_MODELS = ("blip-base", "blip2", "clip-l")
#: Dense bf16 tensor-core peak (TFLOP/s) by a part of the device's name (the longest part found wins: "H100 PCIe"
#: over "H100", "L40S" over "L4"); ``--peak-tflops`` for others. H100/H200 SXM 989, their PCIe/NVL cards less.
PEAK_BF16_TFLOPS = {"H200": 989.0, "H200 NVL": 835.0, "H100": 989.0, "H100 NVL": 835.0, "H100 PCIe": 756.0,
                    "A100": 312.0, "L40S": 362.0, "L40": 181.0, "A10G": 125.0, "L4": 121.0, "RTX 4090": 165.0,
                    "V100": 125.0}


def peak_bf16_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named ``device_name`` (``torch.cuda.get_device_name()``), None when the table
    has no part of its name (MFU is then left out, not guessed)."""
    found = [part for part in PEAK_BF16_TFLOPS if part in device_name]
    return PEAK_BF16_TFLOPS[max(found, key=len)] if found else None


class Unavailable(Exception):
    """The machine cannot run the benchmark (no CUDA)."""


#: ``--smoke``'s models: every probe model's architecture at 2 layers of width 64, 64 px images.
TINY_LAYER = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}


def tiny_probe_config(name: str, vocab_size: int, pad_token_id: int) -> tuple[str, Any, int]:
    """``probe_config``'s models at smoke size (same classes, so the same loading and scoring code)."""
    from transformers import Blip2Config, BlipConfig, CLIPConfig

    text = {**TINY_LAYER, "vocab_size": vocab_size, "pad_token_id": pad_token_id}
    # larger random weights than the configs' defaults (BLIP's vision default, 1e-10, makes every image look
    # the same), so that p(match) varies with the pair and the two sides' agreement is a check
    text = {**text, "initializer_range": 0.2}
    vision = {**TINY_LAYER, "image_size": 64, "patch_size": 16, "initializer_range": 0.2}
    if name == "blip-base":
        return "hf-blip-itm", BlipConfig(text_config={**text, "encoder_hidden_size": 64}, vision_config=vision,
                                         projection_dim=64, image_text_hidden_size=64, initializer_range=0.2), 64
    if name == "blip2":
        cfg = Blip2Config(vision_config={**vision, "qkv_bias": True},
                          qformer_config={**text, "cross_attention_frequency": 2, "encoder_hidden_size": 64,
                                          "use_qformer_text_input": True},
                          text_config={"model_type": "opt", "vocab_size": 64, "hidden_size": 64, "num_hidden_layers": 1,
                                       "num_attention_heads": 2, "ffn_dim": 128, "word_embed_proj_dim": 64},
                          num_query_tokens=4, image_text_hidden_size=64, initializer_range=0.2)
        cfg.image_token_index = None
        return "hf-blip2-itm", cfg, 64
    if name == "clip-l":
        return "hf-clip", CLIPConfig(text_config={**text, "max_position_embeddings": 77}, vision_config=vision,
                                     projection_dim=64), 64
    raise ValueError(name)


def probe_config(name: str, vocab_size: int, pad_token_id: int) -> tuple[str, Any, int]:
    """(connote backend, real-size config, image side in pixels) of a probe model."""
    from transformers import Blip2Config, BlipConfig, CLIPConfig

    if name == "blip-base":  # Salesforce/blip-itm-base-coco's architecture
        return "hf-blip-itm", BlipConfig(text_config={"vocab_size": vocab_size, "pad_token_id": pad_token_id},
                                         vision_config={"image_size": 384, "patch_size": 16}), 384
    if name == "blip2":  # Salesforce/blip2-itm-vit-g's: EVA ViT-g/14 at 224 px, BERT-base Q-Former, 32 queries
        cfg = Blip2Config(
            vision_config={"hidden_size": 1408, "intermediate_size": 6144, "num_hidden_layers": 39,
                           "num_attention_heads": 16, "image_size": 224, "patch_size": 14, "qkv_bias": True},
            qformer_config={"vocab_size": vocab_size, "pad_token_id": pad_token_id, "hidden_size": 768,
                            "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                            "cross_attention_frequency": 2, "encoder_hidden_size": 1408,
                            "use_qformer_text_input": True},
            text_config={"model_type": "opt", "vocab_size": 64, "hidden_size": 64, "num_hidden_layers": 1,
                         "num_attention_heads": 2, "ffn_dim": 128, "word_embed_proj_dim": 64},
            num_query_tokens=32, image_text_hidden_size=256)
        cfg.image_token_index = None
        return "hf-blip2-itm", cfg, 224
    if name == "clip-l":  # openai/clip-vit-large-patch14's
        return "hf-clip", CLIPConfig(
            text_config={"vocab_size": vocab_size, "hidden_size": 768, "num_hidden_layers": 12,
                         "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 77,
                         "pad_token_id": pad_token_id},
            vision_config={"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                           "intermediate_size": 4096, "image_size": 224, "patch_size": 14},
            projection_dim=768), 224
    raise ValueError(name)


def model_class(name: str) -> Any:
    import transformers

    return getattr(transformers, {"blip-base": "BlipForImageTextRetrieval", "blip2": "Blip2ForImageTextRetrieval",
                                  "clip-l": "CLIPModel"}[name])


def processor_for(name: str, tok: Any, side: int) -> Any:
    from transformers import Blip2Processor, BlipImageProcessor, BlipProcessor, CLIPImageProcessor, CLIPProcessor

    if name == "blip-base":
        return BlipProcessor(image_processor=BlipImageProcessor(size={"height": side, "width": side}), tokenizer=tok)
    if name == "blip2":
        return Blip2Processor(image_processor=BlipImageProcessor(size={"height": side, "width": side}),
                              tokenizer=tok, num_query_tokens=None)
    return CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": side},
                                                            crop_size={"height": side, "width": side}), tokenizer=tok)


def meta_params(cls: Any, cfg: Any) -> int:
    """Parameter count of a model built on the meta device (no memory)."""
    import torch

    with torch.device("meta"):
        model = cls(cfg)
    return sum(p.numel() for p in model.parameters())


def plan(args: argparse.Namespace) -> dict[str, Any]:
    """What the run will build and measure; builds configs only (meta device)."""
    from tests.support.tiny_models import bert_tokenizer

    out: dict[str, Any] = {"sections": list(args.only), "out": str(args.out), "device": args.device,
                           "dtype": args.dtype, "smoke": args.smoke}
    with tempfile.TemporaryDirectory() as tmp:
        tok = bert_tokenizer(Path(tmp) / "tok")
        if "probe" in args.only:
            out["probe"] = {}
            for name in args.models:
                backend, cfg, side = (tiny_probe_config if args.smoke else probe_config)(name, tok.vocab_size,
                                                                                         tok.pad_token_id)
                out["probe"][name] = {"backend": backend, "image_size": side,
                                      "params": meta_params(model_class(name), cfg),
                                      "pairs": args.images * args.captions_per_image, "naive_pairs": args.naive_pairs}
    if "train" in args.only:
        from train_throughput import configs
        from transformers import GitForCausalLM, LlamaForCausalLM

        git, llm = configs("small" if args.smoke else "real")
        out["train"] = {"captioner_params": meta_params(GitForCausalLM, git),
                        "llm_params": meta_params(LlamaForCausalLM, llm),
                        "command": train_command(args, Path(args.out) / "train.json")}
    if "explain" in args.only:
        out["explain"] = {"command": explain_command(args, Path(args.out) / "explain.json")}
    if "generate" in args.only:
        out["generate"] = {"commands": generate_commands(args, Path(args.out))}
    return out


def require_cuda() -> Any:
    import torch

    if not torch.cuda.is_available():
        built = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise Unavailable(f"this benchmark needs a CUDA GPU, and torch.cuda.is_available() is False "
                          f"(torch {torch.__version__}, {built}); use --dry-run to check the plan without one")
    return torch


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def release(device: str) -> None:
    """Give the CUDA cache back between models (nothing to do on the CPU)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def naive_pair(name: str, model: Any, processor: Any, image: Any, caption: str, torch: Any, device: str,
               dtype: Any) -> float:
    inputs = processor(images=image, text=caption, return_tensors="pt").to(device)
    inputs["pixel_values"] = inputs["pixel_values"].to(dtype)
    if name == "blip-base":
        return model(**inputs).itm_score.float().softmax(-1)[0, 1].item()
    if name == "blip2":
        out = model(**inputs, use_image_text_matching_head=True)
        return out.logits_per_image.float().softmax(-1)[0, 1].item()
    out = model(**inputs)
    scale = model.logit_scale.exp().float()  # connote's hf-clip defaults: the model's scale, threshold 0.25
    cos = out.logits_per_image.float() / scale
    return torch.sigmoid(scale * (cos - 0.25)).item()


def probe_section(args: argparse.Namespace, peak: float | None, log: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    from probe_throughput import make_pairs

    images, captions, pairs = make_pairs(args.images, args.captions_per_image, size=(640, 480), distinct=64)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        manifest = probe_files(Path(tmp) / "photos", images, captions, pairs)
        for name in args.models:
            try:
                results[name] = probe_one(name, args, peak, images, captions, pairs, log, manifest)
            except Exception as exc:  # one model's failure must not cost the other figures
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"probe {name}: failed: {results[name]['error']}")
                release(args.device)
    return results


def probe_files(folder: Path, images: list[Any], captions: list[str], pairs: list[tuple[int, int]]) -> Path:
    """The pairs as a CV-Probes manifest over the photos written as JPEG files (quality 90), for the figure of
    ``cv-probes run`` itself: files read ahead, decoded (on the GPU there), scored and stored chunk by chunk."""
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    for i, image in enumerate(images):
        image.save(folder / f"photo{i:05d}.jpg", quality=90)
    path = folder / "probes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "image", "image_kind", "caption", "caption_kind"])
        for k, (i, c) in enumerate(pairs):
            w.writerow([f"pair{k}", f"photo{i:05d}.jpg", "SG", captions[c], "SG" if k % 2 == 0 else "PG"])
    return path


def probe_run(matcher: Any, manifest: Path, args: argparse.Namespace) -> float:
    """Seconds of ``connote cv-probes run`` over ``manifest`` with the loaded ``matcher`` (its default chunks),
    store and outputs included."""
    from connote.cv_probes.task import run_probe

    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        t = time.perf_counter()
        run_probe(manifest, out=Path(tmp) / "run", model_obj=matcher, progress=False)
        synchronize(args.device)
        return time.perf_counter() - t


def probe_one(name: str, args: argparse.Namespace, peak: float | None, images: list[Any], captions: list[str],
              pairs: list[tuple[int, int]], log: Any, manifest: Path) -> dict[str, Any]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from connote.models import load_model
    from connote.models.engine import resolve_dtype
    from tests.support.tiny_models import bert_tokenizer

    device, dtype = args.device, resolve_dtype(args.dtype, args.device)  # the engine's own table
    cuda = device.startswith("cuda")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder = Path(tmp) / name
        tok = bert_tokenizer(folder / "_tok")
        backend, cfg, side = (tiny_probe_config if args.smoke else probe_config)(name, tok.vocab_size,
                                                                                 tok.pad_token_id)
        torch.manual_seed(0)
        with torch.device(device):
            model = model_class(name)(cfg)
        model.to(dtype).eval().save_pretrained(folder)
        processor = processor_for(name, tok, side)
        processor.save_pretrained(folder)
        params = sum(p.numel() for p in model.parameters())
        with torch.inference_mode():  # naive: processor + forward per pair, in the benchmark's dtype
            for i, c in pairs[:2]:
                naive_pair(name, model, processor, images[i], captions[c], torch, device, dtype)
            synchronize(device)
            t = time.perf_counter()
            naive_p = [naive_pair(name, model, processor, images[i], captions[c], torch, device, dtype)
                       for i, c in pairs[: args.naive_pairs]]
            synchronize(device)
            naive_s = time.perf_counter() - t
        del model
        release(device)
        matcher = load_model(f"{backend}:{folder}?device={device}&dtype={args.dtype}")
        matcher.match_probability(images, captions, pairs[:4])  # warm-up
        synchronize(device)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        ours_p = matcher.match_probability(images, captions, pairs)
        synchronize(device)
        ours_s = time.perf_counter() - t
        # the input side alone (read, decode, resize, normalise: the engine's own path, on every image of the
        # run) as a share of the engine's wall: what preprocessing costs the run when nothing overlaps it
        t = time.perf_counter()
        with torch.inference_mode():
            matcher._preprocess(images)
        synchronize(device)
        input_s = time.perf_counter() - t
        run_s = probe_run(matcher, manifest, args)
        sample = pairs[: min(len(pairs), 256)]
        counter = FlopCounterMode(display=False)
        with counter:
            matcher.match_probability(images, captions, sample)
        flops_per_pair = counter.get_total_flops() / len(sample)
        row = {"backend": backend, "params": params, "pairs": len(pairs), "naive_pairs": args.naive_pairs,
               "naive_pairs_per_s": args.naive_pairs / naive_s, "connote_pairs_per_s": len(pairs) / ours_s,
               "connote_peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
               "gflops_per_pair": flops_per_pair / 1e9, "plan": matcher.work_plan(),
               "input_s": input_s, "input_share_of_wall": input_s / ours_s,
               "run_pairs_per_s": len(pairs) / run_s,
               # the same numbers on both sides (up to the dtype's rounding): a speed-up must not change them
               "max_abs_dp": max(abs(float(a) - float(b)) for a, b in zip(naive_p, ours_p)),
               "section_s": time.perf_counter() - t0}
        row["speedup"] = row["connote_pairs_per_s"] / row["naive_pairs_per_s"]
        if peak:
            row["fraction_of_bf16_peak"] = flops_per_pair * row["connote_pairs_per_s"] / (peak * 1e12)
        del matcher
        release(device)
    log(f"probe {name}: naive {row['naive_pairs_per_s']:.1f} pairs/s, connote {row['connote_pairs_per_s']:.1f} "
        f"pairs/s ({row['speedup']:.1f}x), cv-probes run {row['run_pairs_per_s']:.1f} pairs/s, "
        f"{row['section_s']:.0f} s")
    return row


def run_script(cmd: list[str], timeout: float, log: Any) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        log(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
        return 124, ""
    if proc.returncode:
        log(f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc.returncode, proc.stdout


def explain_command(args: argparse.Namespace, json_path: Path) -> list[str]:
    """``explain_vs_mmshap.py`` on a real-size BLIP (tiny under ``--smoke``), connote in fp32 and the run's dtype."""
    size = ["--size", "tiny", "--pairs", "1", "--words", "2"] if args.smoke else ["--size", "base", "--threads", "4"]
    # connote in fp32 too: the T-SHAP error at equal (fp32) arithmetic, beside the run's dtype
    dtypes = "fp32" if args.dtype == "fp32" else f"fp32,{args.dtype}"
    return [sys.executable, str(BENCH / "explain_vs_mmshap.py"), *size, "--device", args.device,
            "--dtype", dtypes, "--json", str(json_path)]


def section_limit(args: argparse.Namespace, own: float) -> float:
    """A section's time limit: its own, or what is left of the whole run's budget (``--budget``) when less."""
    left = getattr(args, "deadline", float("inf")) - time.perf_counter()
    return max(1.0, min(own, left))


def script_section(name: str, cmd: list[str], json_path: Path, timeout: float, log: Any,
                   figures_on: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """Run one benchmark script; its exit status, time, output tail and (when it wrote them and exited with one
    of ``figures_on``) its JSON figures."""
    t = time.perf_counter()
    rc, stdout = run_script(cmd, timeout, log)
    result: dict[str, Any] = {"command": " ".join(cmd[1:]), "exit": rc, "seconds": time.perf_counter() - t,
                              "output_tail": stdout[-3000:]}
    if rc in figures_on and json_path.is_file():
        result["figures"] = json.loads(json_path.read_text())
    log(f"{name}: exit {rc}, {result['seconds']:.0f} s")
    return result


def explain_section(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    json_path = Path(args.out) / "explain.json"
    limit = section_limit(args, args.explain_timeout)
    return script_section("explain", explain_command(args, json_path), json_path, limit, log)


def train_command(args: argparse.Namespace, json_path: Path) -> list[str]:
    size, warmup = ("small", "1") if args.smoke else ("real", "2")
    return [sys.executable, str(BENCH / "train_throughput.py"), "--size", size, "--device", args.device,
            "--batch", str(args.train_batch), "--steps", str(args.train_steps), "--warmup", warmup,
            "--out", str(json_path), "--bf16"] + (["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else [])\
        + (["--settings", "yes", "yes", "auto"] if args.smoke else [])  # the GPU's compiled, packed path on a CPU


def train_section(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    json_path = Path(args.out) / "train.json"
    # 124: the time limit (the script rewrites its JSON after every side)
    limit = section_limit(args, args.train_timeout)
    return script_section("train", train_command(args, json_path), json_path, limit, log, figures_on=(0, 124))


def generate_commands(args: argparse.Namespace, out: Path) -> dict[str, list[str]]:
    """``generation.py``: the per-item HF loop vs connote's generate() for both generators, connote with the
    dynamic KV cache and with the static cache and a compiled decoding step (CUDA graphs on a GPU); in bf16, the
    smoke run too (its compiled path runs on the CPU in inductor's default mode)."""
    size = ["--size", "tiny", "--items", "2", "--max-new-tokens", "8"] if args.smoke else \
        ["--size", "real", "--items", str(args.generate_items)]
    dtype = "bf16" if args.smoke else args.dtype
    return {"generate": [sys.executable, str(BENCH / "generation.py"), *size, "--device", args.device,
                         "--dtype", dtype, "--json", str(out / "generate.json")]}


def generate_section(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    runs = generate_commands(args, Path(args.out))
    # exit 1: an fp32 output differed; 124: the time limit (the script rewrites its JSON after every figure)
    return {name: script_section(name, cmd, Path(cmd[-1]), section_limit(args, args.generate_timeout), log,
                                 figures_on=(0, 1, 124))
            for name, cmd in runs.items()}


def gib(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def table(figures: dict[str, Any]) -> str:
    lines = [f"GPU: {figures.get('gpu')}, bf16 peak {figures.get('peak_tflops')} TFLOP/s, "
             f"torch {figures.get('torch')}, total {figures.get('total_s', 0):.0f} s", ""]
    if figures.get("smoke"):
        lines[:0] = ["SMOKE RUN (--smoke): tiny models on the CPU; these figures measure nothing", ""]
    if figures.get("skipped"):
        lines += [f"Skipped (the run's budget was spent): {', '.join(figures['skipped'])}", ""]
    if "probe" in figures:
        lines += ["| probe model | params | naive pairs/s | connote pairs/s | ratio | cv-probes run pairs/s | "
                  "GFLOP/pair | share of bf16 peak | input side / wall | peak GiB | max abs dp |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, r in figures["probe"].items():
            if "error" in r:
                lines.append(f"| {name} | error: {r['error']} | | | | | | | | | |")
                continue
            share = r.get("fraction_of_bf16_peak")
            run = r.get("run_pairs_per_s")
            lines.append(f"| {name} | {r['params'] / 1e6:.1f}M | {r['naive_pairs_per_s']:.1f} | "
                         f"{r['connote_pairs_per_s']:.1f} | {r['speedup']:.1f}x | "
                         f"{'' if run is None else f'{run:.1f}'} | {r['gflops_per_pair']:.1f} | "
                         f"{'' if share is None else f'{share:.1%}'} | {r['input_share_of_wall']:.0%} | "
                         f"{gib(r['connote_peak_gib'])} | "
                         f"{r['max_abs_dp']:.1e} |")
        lines.append("")
    if "explain" in figures:
        e = figures["explain"]
        f = e.get("figures")
        if f:
            s = f["settings"]
            lines += [f"explain vs the public MM-SHAP path: BLIP {s['size']} ({f['params'] / 1e6:.0f}M), {s['pairs']} "
                      f"pairs, connote in {s['dtype']}", "",
                      "| path | calls/pair | vision passes | s/pair | mean abs T-SHAP error | wall ratio |",
                      "|---|---:|---:|---:|---:|---:|"]
            lines += [f"| {r['path']} | {r['calls']:.0f} | {r['vision_passes']:.0f} | {r['s_per_pair']:.3f} | "
                      f"{r['mean_abs_dT']:.4f} | {r['wall_ratio']:.1f}x |" for r in f["paths"]]
            lines.append("")
        else:
            lines += [f"explain vs MM-SHAP: exit {e['exit']}, {e['seconds']:.0f} s (see figures.json)", ""]
    if "train" in figures:
        t = figures["train"]
        f = t.get("figures")
        if f:
            lines += ["| GIT-LLaVA stage 2 | s/step | LLM tokens/s | MFU | MFU without GIT | peak GiB |",
                      "|---|---:|---:|---:|---:|---:|"]
            for side in ("plain_hf", "connote_eager", "connote"):
                row = f.get(side)
                if row is None:
                    continue
                mfu, mfu_llm = row.get("mfu"), row.get("mfu_llm")
                lines.append(f"| {side} | {row['s_per_step']:.3f} | {row['tokens_per_s']:.0f} | "
                             f"{'' if mfu is None else f'{mfu:.1%}'} | {'' if mfu_llm is None else f'{mfu_llm:.1%}'} "
                             f"| {gib(row.get('peak_mem_gib'))} |")
            lines.append(f"\nLLM {f['llm_params'] / 1e9:.2f}B params, captioner {f['git_params'] / 1e6:.0f}M, "
                         f"batch {f['batch']}, {f['llm_tokens_per_step']} LLM tokens/step")
        else:
            lines.append(f"GIT-LLaVA training: exit {t['exit']} (see figures.json)")
    if "generate" in figures:
        lines += ["", "| generation | cache | items | loop items/s | connote items/s | ratio | loop tokens/s | "
                  "connote tokens/s | peak GiB (loop / connote) | changed vs batch 1 | same as loop |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
        for run in figures["generate"].values():
            f = run.get("figures")
            if not f:
                lines.append(f"| exit {run['exit']} | | | | | | | | | | (see figures.json) |")
                continue
            for model in ("vlm", "git-llava"):
                if model not in f:
                    continue
                n = f[model]["naive"]
                for cache, c in f[model]["configs"].items():
                    mem = (f"{n['peak_cuda'] / 2**30:.1f} / {c['peak_cuda'] / 2**30:.1f}" if "peak_cuda" in c else
                           f"{n['peak_rss'] / 2**30:.1f} / {c['peak_rss'] / 2**30:.1f} (RSS)")
                    inv = c["invariance"]
                    lines.append(f"| {model} | {cache} | {c['items']} | {n['items_per_s']:.2f} | "
                                 f"{c['items_per_s']:.2f} | {c['speedup']:.1f}x | {n['tokens_per_s']:.0f} | "
                                 f"{c['tokens_per_s']:.0f} | {mem} | {inv['changed']}/{inv['items']} "
                                 f"({f[model]['dtype']}) | {c['identical_to_loop']}/{c['compared_to_loop']} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/gpu-figures"), help="folder for figures.json/.md")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--models", nargs="+", choices=PROBE_MODELS, default=list(PROBE_MODELS))
    ap.add_argument("--images", type=int, default=None, help="distinct photos per probe model (1024; smoke 4)")
    ap.add_argument("--captions-per-image", type=int, default=2)
    ap.add_argument("--naive-pairs", type=int, default=None, help="pairs the naive loop is timed on (128; smoke 4)")
    ap.add_argument("--train-batch", type=int, default=None, help="GIT-LLaVA videos per step (8; smoke 2)")
    ap.add_argument("--train-steps", type=int, default=None, help="timed training steps (5; smoke 1)")
    ap.add_argument("--train-timeout", type=float, default=100.0)
    ap.add_argument("--explain-timeout", type=float, default=120.0)
    ap.add_argument("--generate-items", type=int, default=16, help="stories / videos per generation side (16)")
    ap.add_argument("--generate-timeout", type=float, default=150.0)
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole run (420 on a GPU: a lent machine's call is 8 minutes; none under "
                         "--smoke); a section starts with what is left of it, at most its own limit")
    ap.add_argument("--peak-tflops", type=float, default=None, help="dense bf16 peak when the GPU is not in the table")
    ap.add_argument("--device", default=None, help="cuda (default), or cpu for --smoke")
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default=None,
                    help="both probe sides' and connote's explain dtype (bf16; smoke fp32)")
    ap.add_argument("--tmp", type=Path, default=None, help="where the random checkpoints are written")
    ap.add_argument("--dry-run", action="store_true", help="build configs on the meta device and print the plan")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny models and a few pairs, on the CPU unless --device says otherwise: runs every "
                         "section's code; its figures measure nothing")
    args = ap.parse_args(argv)
    defaults = {"images": (1024, 4), "naive_pairs": (128, 4), "train_batch": (8, 2), "train_steps": (5, 1),
                "device": ("cuda", "cpu"), "dtype": ("bf16", "fp32")}
    for name, (full, smoke) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, smoke if args.smoke else full)
    if args.budget is None:
        args.budget = float("inf") if args.smoke else 420.0
    for name in ("images", "captions_per_image", "naive_pairs", "train_batch", "train_steps", "generate_items"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.dry_run:
        print(json.dumps(plan(args), indent=2))
        return 0
    if args.device.startswith("cuda"):
        try:
            torch = require_cuda()
        except Unavailable as exc:
            print(f"gpu.sh: {exc}", file=sys.stderr)
            return 2
    else:
        import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    args.deadline = started + args.budget
    gpu = torch.cuda.get_device_name(torch.device(args.device)) if args.device.startswith("cuda") else args.device
    peak = args.peak_tflops or peak_bf16_tflops(gpu)
    figures: dict[str, Any] = {"gpu": gpu, "peak_tflops": peak, "torch": torch.__version__, "smoke": args.smoke,
                               "settings": {k: (str(v) if isinstance(v, Path) else None if v == float("inf") else v)
                                            for k, v in vars(args).items() if k != "deadline"}}

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {msg}", flush=True)

    def save() -> str:  # after every section: a run stopped from outside keeps what it measured
        figures["total_s"] = time.perf_counter() - started
        (args.out / "figures.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
        text = table(figures)
        (args.out / "figures.md").write_text(text)
        return text

    sections = {"probe": lambda: probe_section(args, peak, log), "explain": lambda: explain_section(args, log),
                "train": lambda: train_section(args, log), "generate": lambda: generate_section(args, log)}
    for name in SECTIONS:
        if name not in args.only:
            continue
        if args.deadline - time.perf_counter() < 10:
            log(f"{name}: skipped, the run's budget of {args.budget:.0f} s is spent")
            figures.setdefault("skipped", []).append(name)
            continue
        figures[name] = sections[name]()
        save()
    print(save())
    return 0


if __name__ == "__main__":
    sys.exit(main())
