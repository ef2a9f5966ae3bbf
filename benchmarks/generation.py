"""Generation throughput: a per-item Hugging Face ``generate`` loop vs connote's generation path.

Two generators, each on a random-init model saved with ``save_pretrained`` and loaded back through
the public path, and the same inputs on both sides:

* ``vlm``: a LLaVA-architecture chat VLM (the ``hf-vlm`` backend) writing a story for 5 photos, as
  ``connote vist generate`` asks it (the task's prompt, the requests in the task's batches: 8).
* ``git-llava``: a saved GIT-LLaVA folder (the ``git-llava`` backend) captioning 6 frames of a video,
  as ``connote vmc caption`` asks it (in the task's batches: 16).

The per-item loop is what a model card shows: processor -> ``model.generate`` -> decode for one item
at a time (for GIT-LLaVA: the public code's order, GIT forward with hidden states -> projector ->
the LLM's ``generate`` on the embeddings). connote's side is the backend's ``generate(requests)``.
Decoding is greedy on both sides; the benchmark exits non-zero if any output differs.

Each side runs in its own Python process (its peak resident memory is its own, from ``getrusage``;
on CUDA the peak allocated memory too), loads the model, warms up on one item, then generates for
every item. Printed side by side: items/s, new tokens/s, seconds, peak memory, the load average
while each side ran, and the ratios.

    python benchmarks/generation.py --size small                    # CPU (~2-4 min)
    python benchmarks/generation.py --size small --only vlm --items 8
    python benchmarks/generation.py --size real --device cuda       # GPU (gpu.sh runs this)
    python benchmarks/generation.py --size real --device cuda --option cache=static   # + torch.compile

Sizes: ``tiny`` (smoke: width 32, 32 px), ``small`` (width 256, 4 LLM layers, 64 px photos),
``real`` (CLIP ViT-L/14 at 336 px + a TinyLlama-1.1B-shaped Llama for the VLM; GIT-large video
+ the same Llama for GIT-LLaVA). Vocabularies are the test helpers' word-level ones (a few dozen
words), so the LM head is small at every size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

WORDS = ("the a man woman dog cat went to park beach party we had fun day family friends then after "
         "and was were happy great time food red blue sea sky is as bright fire ice sun").split()
MODELS = ("vlm", "git-llava")
DEFAULT_ITEMS = {"tiny": 3, "small": 16, "real": 64}
DEFAULT_TOKENS = {"vlm": 120, "git-llava": 48}  # the story and metaphor tasks' max_new_tokens
TASKS = {"vlm": "connote.vist.task:StorytellingTask", "git-llava": "connote.vmc.task:MetaphorCaptionTask"}
PHOTOS = {"vlm": 5, "git-llava": 6}


def size_params(size: str) -> dict[str, Any]:
    return {"tiny": {"hidden": 32, "image": 32, "layers": 2},
            "small": {"hidden": 256, "image": 64, "layers": 4},
            "real": {"hidden": 2048, "image": 336, "layers": 22}}[size]


def build_vlm(size: str, folder: Path) -> Path:
    """A LLaVA chat VLM with the test helpers' word tokenizer and chat template."""
    from tiny_sources import make_tiny_llava

    if size == "tiny":
        return make_tiny_llava(folder, WORDS)
    if size == "real":  # CLIP ViT-L/14 at 336 px (576 patches) + TinyLlama-1.1B's shape
        return make_tiny_llava(folder, WORDS, hidden=1024, image_size=336, patch_size=14, feature_layer=-2,
                               vision={"intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16},
                               text={"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
                                     "num_attention_heads": 32, "num_key_value_heads": 4,
                                     "max_position_embeddings": 4096})
    p = size_params(size)
    return make_tiny_llava(folder, WORDS, hidden=p["hidden"], image_size=p["image"], patch_size=16, feature_layer=-2,
                           vision={"intermediate_size": 4 * p["hidden"], "num_hidden_layers": 4},
                           text={"intermediate_size": 4 * p["hidden"], "num_hidden_layers": p["layers"],
                                 "max_position_embeddings": 2048})


def build_git_llava(size: str, folder: Path) -> Path:
    """A saved GIT-LLaVA folder (git_llava.json + projector + sources), as ``connote metaphor train`` writes."""
    import torch
    from transformers import (
        AutoProcessor,
        AutoTokenizer,
        CLIPImageProcessor,
        GitConfig,
        GitForCausalLM,
        GitProcessor,
        LlamaConfig,
        LlamaForCausalLM,
    )

    from connote.vmc.data import METAPHOR_PROMPT
    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.git_llava import GitLlava
    from connote.vmc.train.tiny import make_tiny_sources

    p = size_params(size)
    small = size != "real"
    git_dir, llm_dir = make_tiny_sources(folder / "sources", WORDS, hidden=p["hidden"] if small else 32,
                                         image_size=p["image"] if small else 32, llm_layers=p["layers"] if small else 2)
    if not small:  # GIT-large video (ViT-L/14 at 224 px) + TinyLlama-1.1B's shape, the tiny vocabularies
        for old in [*git_dir.glob("*.safetensors*"), *llm_dir.glob("*.safetensors*")]:
            old.unlink()  # the tiny weights, so that a sharded save is not shadowed by them
        proc = AutoProcessor.from_pretrained(git_dir)
        GitProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 224},
                                                        crop_size={"height": 224, "width": 224}),
                     tokenizer=proc.tokenizer).save_pretrained(git_dir)
        torch.manual_seed(0)
        GitForCausalLM(GitConfig(
            vision_config={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                           "num_attention_heads": 16, "image_size": 224, "patch_size": 14},
            hidden_size=1024, num_hidden_layers=6, num_attention_heads=16, intermediate_size=4096,
            vocab_size=proc.tokenizer.vocab_size, num_image_with_embedding=6, max_position_embeddings=1024,
            bos_token_id=2, eos_token_id=3, pad_token_id=0)).save_pretrained(git_dir)
        LlamaForCausalLM(LlamaConfig(
            vocab_size=len(AutoTokenizer.from_pretrained(llm_dir)), hidden_size=2048, intermediate_size=5632,
            num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096,
            bos_token_id=2, eos_token_id=3, pad_token_id=0)).save_pretrained(llm_dir)
    torch.manual_seed(0)
    model = GitLlava.build(ModelConfig(captioner=str(git_dir), llm=str(llm_dir), prompt=METAPHOR_PROMPT))
    return model.save(folder / "model", save_llm=False)


def photos(n_items: int, per_item: int, seed: int = 0) -> list[list[Any]]:
    import numpy as np
    from PIL import Image

    rng = np.random.RandomState(seed)
    return [[Image.fromarray((rng.rand(240, 320, 3) * 255).astype("uint8")) for _ in range(per_item)]
            for _ in range(n_items)]


# ---- one side, in its own process ---------------------------------------------------------------
def naive_vlm(folder: Path, device: str, dtype: Any, prompt: str):
    """The model card's loop: one conversation, processor, generate, decode per item."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=dtype).to(device).eval()
    processor = AutoProcessor.from_pretrained(folder)

    def run(items: list[list[Any]], max_new_tokens: int) -> tuple[list[str], int]:
        out, tokens = [], 0
        for images in items:
            messages = [{"role": "user", "content": [*[{"type": "image"}] * len(images),
                                                     {"type": "text", "text": prompt}]}]
            text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            inputs = processor(text=[text], images=[images], return_tensors="pt").to(device)
            inputs["pixel_values"] = inputs["pixel_values"].to(dtype)
            with torch.inference_mode():
                ids = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
            new = ids[0, inputs["input_ids"].shape[1]:]
            tokens += count_new(new, processor.tokenizer)
            out.append(processor.decode(new, skip_special_tokens=True).strip())
        return out, tokens

    return run


def naive_git_llava(folder: Path, device: str, dtype: Any, prompt: str):
    """The public GIT-LLaVA order per video: GIT forward (hidden states) -> projector -> LLM generate."""
    import torch

    from connote.vmc.train.git_llava import GitLlava

    model = GitLlava.from_pretrained(folder, dtype=dtype).to(device).eval()
    tok = model.tokenizer

    def run(items: list[list[Any]], max_new_tokens: int) -> tuple[list[str], int]:
        out, tokens = [], 0
        for frames in items:
            pv = model.processor(images=frames, return_tensors="pt").pixel_values[None].to(device, dtype)
            with torch.inference_mode():
                start = model.captioner.config.bos_token_id
                ids = torch.full((1, 1), int(start), dtype=torch.long, device=device)
                hidden = model.captioner(input_ids=ids, pixel_values=pv, output_hidden_states=True).hidden_states
                video = model.projector(hidden[model.cfg.layer]).to(dtype)
                emb = model.llm.get_input_embeddings()
                before, after = model._text_ids(prompt)
                embeds = torch.cat([emb(torch.tensor([before], device=device)), video,
                                    emb(torch.tensor([after], device=device))], dim=1)
                new = model.llm.generate(inputs_embeds=embeds, max_new_tokens=max_new_tokens, do_sample=False,
                                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)[0]
            tokens += count_new(new, tok)
            out.append(tok.decode(new, skip_special_tokens=True).strip())
        return out, tokens

    return run


def count_new(ids: Any, tokenizer: Any) -> int:
    """Generated tokens up to and including the first end-of-sequence (the rest is padding)."""
    ids = [int(i) for i in ids]
    eos = tokenizer.eos_token_id
    return ids.index(eos) + 1 if eos in ids else len(ids)


def connote_side(model_name: str, folder: Path, device: str, dtype: str, options: dict[str, str], batch: int):
    from connote.models.protocols import GenerationRequest
    from connote.models.registry import load_model

    backend = "hf-vlm" if model_name == "vlm" else "git-llava"
    query = "&".join(f"{k}={v}" for k, v in {"device": device, "dtype": dtype, **options}.items())
    gen = load_model(f"{backend}:{folder}?{query}")

    def run(items: list[list[Any]], max_new_tokens: int, prompt: str | None) -> tuple[list[str], None]:
        out: list[str] = []
        for i in range(0, len(items), batch):  # the task's generate() calls
            requests = [GenerationRequest(images=list(x), prompt=prompt, max_new_tokens=max_new_tokens)
                        for x in items[i:i + batch]]
            texts = gen.generate(requests)
            bad = [t for t in texts if isinstance(t, BaseException)]
            if bad:
                raise bad[0]
            out.extend(texts)
        return out, None  # the backend hands back text, not ids: tokens are counted on the loop's side

    return run


def worker(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    from sides import quiet, report, timed

    from connote.models.engine import resolve_dtype
    from connote.vist.task import STORY_PROMPT

    quiet(args.threads)
    items = photos(args.items, PHOTOS[args.model])
    dtype = resolve_dtype(args.dtype, args.device)
    if args.model == "vlm":
        prompt = STORY_PROMPT
    else:  # the prompt the folder was trained with, as the backend's default
        prompt = json.loads((args.folder / "git_llava.json").read_text())["model"]["prompt"]
    if args.worker == "naive":
        run = (naive_vlm if args.model == "vlm" else naive_git_llava)(args.folder, args.device, dtype, prompt)
    else:
        options = dict(kv.split("=", 1) for kv in args.option)
        inner = connote_side(args.model, args.folder, args.device, args.dtype, options, args.batch)

        def run(x: list[list[Any]], n: int) -> tuple[list[str], None]:
            return inner(x, n, prompt if args.model == "vlm" else None)
    run(items[:1], args.max_new_tokens)  # warm-up (and compilation, with a static cache on CUDA)
    (texts, tokens), figures = timed(lambda: run(items, args.max_new_tokens), args.device)
    report({"side": args.worker, "items": len(items), **figures, "items_per_s": len(items) / figures["seconds"],
            "tokens": tokens, "texts": texts, "dtype": str(dtype).replace("torch.", ""),
            "process_seconds": time.perf_counter() - started})


def run_side(side: str, model: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    from sides import run_worker

    cmd = [__file__, "--worker", side, "--model", model, "--folder", str(folder),
           "--device", args.device, "--dtype", args.dtype, "--items", str(args.items),
           "--max-new-tokens", str(args.max_new_tokens or DEFAULT_TOKENS[model]),
           "--batch", str(args.batch or task_batch(model))]
    cmd += ["--threads", str(args.threads)] if args.threads else []
    for kv in args.option:
        cmd += ["--option", kv]
    return run_worker(cmd, f"{side} side of {model}")


def task_batch(model: str) -> int:
    """The task's requests per generate() call at its defaults (what ``connote vist generate`` and ``connote
    vmc caption`` send; the backends' own ``batch_size`` defaults are as large)."""
    import importlib
    import inspect

    module, name = TASKS[model].split(":")
    task = getattr(importlib.import_module(module), name)
    return int(inspect.signature(task.__init__).parameters["batch_size"].default)


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def compare(model: str, naive: dict[str, Any], ours: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    n_tokens = args.max_new_tokens or DEFAULT_TOKENS[model]
    what = "story for 5 photos (hf-vlm)" if model == "vlm" else "metaphor caption of 6 frames (git-llava)"
    print(f"\n{model}: {args.size} random-init model, {what}; {args.items} items, greedy, "
          f"max {n_tokens} new tokens, connote in generate() calls of {args.batch or task_batch(model)} "
          f"(the task's: {task_batch(model)}){' with ' + ', '.join(args.option) if args.option else ''}, "
          f"device {args.device}, dtype {ours['dtype']}, torch threads {ours['torch_threads']}")
    ours["tokens"] = naive["tokens"]  # the loop counts ids; identical outputs have the same count
    for r in (naive, ours):
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
    cuda = "peak_cuda" in ours
    for r in (naive, ours):
        r["cpu_s_per_item"] = r["cpu_seconds"] / r["items"]
    print(f"{'':26}{'items/s':>9}{'tokens/s':>10}{'seconds':>9}{'process s':>11}{'peak RSS':>10}"
          + (f"{'peak CUDA':>11}" if cuda else "") + f"{'CPU s/item':>12}  load avg (1 min)")
    for name, r in (("per-item HF generate loop", naive), ("connote generate()", ours)):
        print(f"{name:26}{r['items_per_s']:9.3f}{r['tokens_per_s']:10.1f}{r['seconds']:9.2f}"
              f"{r['shell_seconds']:11.2f}{gb(r['peak_rss']):>10}" + (f"{gb(r['peak_cuda']):>11}" if cuda else "")
              + f"{r['cpu_s_per_item']:12.3f}  {r['load_average'][0]:.2f} -> {r['load_average'][1]:.2f}")
    ratio = ours["items_per_s"] / naive["items_per_s"]
    mem = ours["peak_rss"] / naive["peak_rss"]
    cpu_ratio = naive["cpu_s_per_item"] / ours["cpu_s_per_item"]
    print(f"{'ratio (connote/loop)':26}{ratio:8.2f}x{'':28}{mem:9.2f}x"
          + (f"{ours['peak_cuda'] / naive['peak_cuda']:10.2f}x" if cuda else "") + f"{cpu_ratio:11.2f}x")
    print("(CPU s/item: the process's user + system CPU time per item; with one torch thread it is the figure "
          "least disturbed by other jobs on a shared machine)")
    same = sum(a == b for a, b in zip(naive["texts"], ours["texts"]))
    print(f"outputs identical: {same}/{len(naive['texts'])}; {naive['tokens']} new tokens (counted in the loop's "
          f"ids, up to each end-of-sequence); first output: {naive['texts'][0][:80]!r}")
    return {"speedup": ratio, "cpu_speedup": cpu_ratio, "peak_rss_ratio": mem, "identical": same,
            "items": len(naive["texts"]),
            "naive": {k: v for k, v in naive.items() if k != "texts"},
            "connote": {k: v for k, v in ours.items() if k != "texts"},
            "mismatches": [[a, b] for a, b in zip(naive["texts"], ours["texts"]) if a != b][:3]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["tiny", "small", "real"], default="small")
    ap.add_argument("--only", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--dtype", default="auto", help="both sides' dtype (auto: bf16 on CUDA, fp32 on CPU)")
    ap.add_argument("--items", type=int, default=None, help="stories / videos (default: tiny 3, small 16, real 64)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the task's (stories 120, VMC 48)")
    ap.add_argument("--batch", type=int, default=None, help="requests per generate() call (default: the task's)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads in each side (default: torch's)")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a connote spec option, e.g. batch_size=16 or cache=static (repeatable)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--worker", choices=["naive", "connote"], help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.items = args.items or DEFAULT_ITEMS[args.size]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    figures: dict[str, Any] = {"size": args.size, "device": args.device, "items": args.items,
                               "load_average_start": os.getloadavg()}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.only:
            folder = (build_vlm if model == "vlm" else build_git_llava)(args.size, Path(tmp) / model)
            naive = run_side("naive", model, folder, args)
            ours = run_side("connote", model, folder, args)
            figures[model] = compare(model, naive, ours, args)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    differ = [m for m in args.only if figures[m]["identical"] != figures[m]["items"]]
    if differ:
        print(f"outputs differ between the loop and connote for: {', '.join(differ)} "
              f"(first mismatches: {[figures[m]['mismatches'] for m in differ]})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
