"""Generation throughput: a per-item Hugging Face ``generate`` loop vs connote's generation path.

Two generators, each on a random-init model saved with ``save_pretrained`` and loaded back through
the public path, and the same inputs on both sides:

* ``vlm``: a LLaVA-architecture chat VLM (the ``hf-vlm`` backend) writing a story for 5 photos, as
  ``connote vist generate`` asks it (the task's prompt, the requests in the task's batches: 8).
* ``git-llava``: a saved GIT-LLaVA folder (the ``git-llava`` backend) captioning 6 frames of a video,
  as ``connote vmc caption`` asks it (in the task's batches: 16).

The per-item loop is what a model card shows: processor -> ``model.generate`` -> decode for one item
at a time (for GIT-LLaVA: the public code's order, GIT forward with hidden states -> projector ->
the LLM's ``generate`` on the embeddings). connote's side is the backend's ``generate(requests)`` in
each *configuration* (``--configs``): ``dynamic`` (transformers' dynamic KV cache, eager) and ``static``
(the static cache with the decoding step compiled: CUDA graphs on a GPU, where it is connote's default;
inductor's default mode on a CPU). Decoding is greedy on both sides.

Batch invariance: connote's side also generates the first ``--invariance-items`` items one request per
call (the dynamic cache) and counts, for every configuration, the items whose batched text differs from
that batch-1 text: the flip rate ``connote ... --check-invariance`` reports. In fp32 it must be 0 (the
benchmark exits 1 otherwise, and likewise when the loop's and connote's fp32 texts differ); in bf16 it is
printed (connote's LM head runs in fp32 there, the loop's in bf16, so the loop comparison is shown only).

Each side runs in its own Python process (the loop's peak resident memory is its own, from ``getrusage``;
on CUDA the peak allocated memory of each configuration), loads the model, warms up (a configuration
that compiles warms up on one full batch, the shapes it will run), then generates for its items. The
loop is timed on ``--naive-items`` items (it runs them one by one, so its rate needs few), connote on
``--items``. Printed side by side: items/s, new tokens/s, seconds, peak memory, the load average and the
ratios; ``--json`` is rewritten after every measurement, so a run stopped at a time limit keeps its figures.

    python benchmarks/generation.py --size small                    # CPU (~3-5 min)
    python benchmarks/generation.py --size tiny --dtype bf16        # the smoke run (gpu.sh --smoke), ~1 min
    python benchmarks/generation.py --size real --device cuda       # GPU (gpu.sh runs this), ~150 s

Sizes: ``tiny`` (smoke: width 32, 32 px), ``small`` (width 256, 4 LLM layers, 64 px photos),
``real`` (CLIP ViT-L/14 at 336 px + a TinyLlama-1.1B-shaped Llama for the VLM; GIT-large video
+ the same Llama for GIT-LLaVA; built on the device, saved in the run's dtype). Vocabularies are the
test helpers' word-level ones (a few dozen words), so the LM head is small at every size. GPU defaults
(``real``): 16 items (two of the VLM task's batches of 8), the loop on 2, 64 new tokens for a story, the
metaphor task's 48 for a caption, 4 items at batch 1.
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
sys.path.insert(0, str(ROOT))  # the test helpers (tests.support) that build the tiny tokenizers
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

WORDS = ("the a man woman dog cat went to park beach party we had fun day family friends then after "
         "and was were happy great time food red blue sea sky is as bright fire ice sun").split()
MODELS = ("vlm", "git-llava")
#: connote's configurations: spec options on top of the run's device and dtype
CONFIGS = {"dynamic": {"cache": "dynamic"}, "static": {"cache": "static", "compile": "true"}}
DEFAULT_ITEMS = {"tiny": 2, "small": 16, "real": 16}
DEFAULT_NAIVE_ITEMS = {"tiny": 2, "small": 8, "real": 2}
DEFAULT_INVARIANCE = {"tiny": 2, "small": 8, "real": 4}
#: the story and metaphor tasks' max_new_tokens; on a GPU at real size a story gets 64 (the section's budget)
TASK_TOKENS = {"vlm": 120, "git-llava": 48}
REAL_TOKENS = {"vlm": 64, "git-llava": 48}
TASKS = {"vlm": "connote.vist.task:StorytellingTask", "git-llava": "connote.vmc.task:MetaphorCaptionTask"}
PHOTOS = {"vlm": 5, "git-llava": 6}


def size_params(size: str) -> dict[str, Any]:
    return {"tiny": {"hidden": 32, "image": 32, "layers": 2},
            "small": {"hidden": 256, "image": 64, "layers": 4},
            "real": {"hidden": 2048, "image": 336, "layers": 22}}[size]


#: TinyLlama-1.1B's shape (both generators' LLM at real size)
LLAMA_1B = {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32,
            "num_key_value_heads": 4, "max_position_embeddings": 4096}


def build_vlm(size: str, folder: Path, device: str = "cpu", dtype: str | None = None) -> Path:
    """A LLaVA chat VLM with the test helpers' word tokenizer and chat template."""
    from tests.support.tiny_sources import make_tiny_llava

    if size == "tiny":
        return make_tiny_llava(folder, WORDS)
    if size == "real":  # CLIP ViT-L/14 at 336 px (576 patches) + TinyLlama-1.1B's shape
        return make_tiny_llava(folder, WORDS, hidden=1024, image_size=336, patch_size=14, feature_layer=-2,
                               vision={"intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16},
                               text=LLAMA_1B, device=device, dtype=dtype)
    p = size_params(size)
    return make_tiny_llava(folder, WORDS, hidden=p["hidden"], image_size=p["image"], patch_size=16, feature_layer=-2,
                           vision={"intermediate_size": 4 * p["hidden"], "num_hidden_layers": 4},
                           text={"intermediate_size": 4 * p["hidden"], "num_hidden_layers": p["layers"],
                                 "max_position_embeddings": 2048})


def build_git_llava(size: str, folder: Path, device: str = "cpu", dtype: str | None = None) -> Path:
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
        cast = getattr(torch, dtype) if dtype else torch.float32
        with torch.device(device):  # random init on the accelerator: seconds, not a minute
            git = GitForCausalLM(GitConfig(
                vision_config={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                               "num_attention_heads": 16, "image_size": 224, "patch_size": 14},
                hidden_size=1024, num_hidden_layers=6, num_attention_heads=16, intermediate_size=4096,
                vocab_size=proc.tokenizer.vocab_size, num_image_with_embedding=6, max_position_embeddings=1024,
                bos_token_id=2, eos_token_id=3, pad_token_id=0))
            git.to(cast).save_pretrained(git_dir)
            del git
            llm = LlamaForCausalLM(LlamaConfig(vocab_size=len(AutoTokenizer.from_pretrained(llm_dir)), **LLAMA_1B,
                                               bos_token_id=2, eos_token_id=3, pad_token_id=0))
            llm.to(cast).save_pretrained(llm_dir)
            del llm
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
                video = model.projector(hidden[model.cfg.layer])
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


def connote_generator(model_name: str, folder: Path, device: str, dtype: str, options: dict[str, str]) -> Any:
    from connote.models.registry import load_model

    backend = "hf-vlm" if model_name == "vlm" else "git-llava"
    query = "&".join(f"{k}={v}" for k, v in {"device": device, "dtype": dtype, **options}.items())
    return load_model(f"{backend}:{folder}?{query}")


def generate_in_batches(gen: Any, items: list[list[Any]], max_new_tokens: int, prompt: str | None,
                        batch: int) -> list[str]:
    """The task's ``generate()`` calls: ``batch`` requests each."""
    from connote.models.protocols import GenerationRequest

    out: list[str] = []
    for i in range(0, len(items), batch):
        requests = [GenerationRequest(images=list(x), prompt=prompt, max_new_tokens=max_new_tokens)
                    for x in items[i:i + batch]]
        texts = gen.generate(requests)
        bad = [t for t in texts if isinstance(t, BaseException)]
        if bad:
            raise bad[0]
        out.extend(texts)
    return out


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
    base = {"items": len(items), "dtype": str(dtype).replace("torch.", "")}
    if args.worker == "naive":
        run = (naive_vlm if args.model == "vlm" else naive_git_llava)(args.folder, args.device, dtype, prompt)
        run(items[:1], min(8, args.max_new_tokens))  # warm-up: nothing compiles on this side
        (texts, tokens), figures = timed(lambda: run(items, args.max_new_tokens), args.device)
        report({"side": "naive", **base, **figures, "tokens": tokens, "texts": texts,
                "process_seconds": time.perf_counter() - started})
        return
    ask = prompt if args.model == "vlm" else None
    alone: list[str] | None = None
    for name in args.configs:
        alone = connote_config(name, args, items, ask, alone, {**base, "started": started})


def connote_config(name: str, args: argparse.Namespace, items: list[list[Any]], ask: str | None,
                   alone: list[str] | None, base: dict[str, Any]) -> list[str]:
    """One configuration of connote's side: load, warm up, time, (once) the batch-1 reference; one RESULT line."""
    import torch
    from sides import report, timed

    extra = dict(kv.split("=", 1) for kv in args.option)
    t0 = time.perf_counter()
    gen = connote_generator(args.model, args.folder, args.device, args.dtype, {**CONFIGS[name], **extra})
    decoding = getattr(gen, "decoding", None)  # connote.models.decoding: what the backend resolved
    compiled = bool(getattr(decoding, "compiled", False))
    # warm-up: a compiling configuration on one full batch (the shapes it will run), else one short item
    generate_in_batches(gen, items[:args.batch] if compiled else items[:1], args.max_new_tokens if compiled else 8,
                        ask, args.batch)
    warm_s = time.perf_counter() - t0
    texts, figures = timed(lambda: generate_in_batches(gen, items, args.max_new_tokens, ask, args.batch),
                           args.device)
    if alone is None:  # the batch-1 reference, once: each of the first items in a call of its own
        alone = [generate_in_batches(gen, [x], args.max_new_tokens, ask, 1)[0] for x in items[:args.invariance_items]]
    started = base.pop("started")
    report({"side": "connote", "config": name, "options": {**CONFIGS[name], **extra}, **base, **figures,
            "texts": texts, "alone": alone, "tokens": sum(text_tokens(gen, t, args.max_new_tokens) for t in texts),
            "cache": getattr(decoding, "cache", None), "compiled": compiled, "load_and_warmup_s": warm_s,
            "process_seconds": time.perf_counter() - started})
    if args.device.startswith("cuda"):
        del gen
        torch.cuda.empty_cache()
    return alone


def text_tokens(gen: Any, text: str, max_new_tokens: int) -> int:
    """New tokens of a generated text as the loop counts them (up to and including the end of sequence): the
    benchmark's word-level tokenizers encode a decoded text back to the same ids."""
    tok = gen.processor.tokenizer if hasattr(gen, "processor") else gen.model.tokenizer
    return min(max_new_tokens, len(tok(text, add_special_tokens=False).input_ids) + 1)


def side_command(side: str, model: str, folder: Path, args: argparse.Namespace) -> list[str]:
    cmd = [__file__, "--worker", side, "--model", model, "--folder", str(folder),
           "--device", args.device, "--dtype", args.dtype,
           "--items", str(args.naive_items if side == "naive" else args.items),
           "--max-new-tokens", str(tokens_for(model, args)), "--batch", str(args.batch or task_batch(model)),
           "--invariance-items", str(args.invariance_items), "--configs", *args.configs]
    cmd += ["--threads", str(args.threads)] if args.threads else []
    for kv in args.option:
        cmd += ["--option", kv]
    return cmd


def tokens_for(model: str, args: argparse.Namespace) -> int:
    return args.max_new_tokens or (REAL_TOKENS if args.size == "real" else TASK_TOKENS)[model]


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


def per_second(side: dict[str, Any]) -> None:
    side["items_per_s"] = side["items"] / side["seconds"]
    side["tokens_per_s"] = side["tokens"] / side["seconds"]
    side["cpu_s_per_item"] = side["cpu_seconds"] / side["items"]


def figure_row(name: str, r: dict[str, Any], cuda: bool) -> str:
    return (f"{name:28}{r['items']:6}{r['items_per_s']:9.3f}{r['tokens_per_s']:10.1f}{r['seconds']:9.2f}"
            + (f"{gb(r['peak_cuda']):>11}" if cuda else f"{gb(r['peak_rss']):>10}")
            + f"{r['cpu_s_per_item']:12.3f}  {r['load_average'][0]:.2f} -> {r['load_average'][1]:.2f}")


def summarize(model: str, naive: dict[str, Any], configs: dict[str, dict[str, Any]],
              args: argparse.Namespace) -> dict[str, Any]:
    """The figures of one generator: the loop, each configuration, ratios, identity and the flip rate."""
    per_second(naive)
    out: dict[str, Any] = {"items": args.items, "naive_items": naive["items"],
                           "max_new_tokens": tokens_for(model, args), "batch": args.batch or task_batch(model),
                           "dtype": naive["dtype"],
                           "naive": {k: v for k, v in naive.items() if k != "texts"}, "configs": {}}
    for name, ours in configs.items():
        per_second(ours)
        k = len(ours["alone"])
        changed = [i for i in range(k) if ours["texts"][i] != ours["alone"][i]]
        shared = min(len(naive["texts"]), len(ours["texts"]))
        same = sum(naive["texts"][i] == ours["texts"][i] for i in range(shared))
        out["configs"][name] = {
            **{key: v for key, v in ours.items() if key not in ("texts", "alone")},
            "speedup": ours["items_per_s"] / naive["items_per_s"],
            "identical_to_loop": same, "compared_to_loop": shared,
            "invariance": {"items": k, "changed": len(changed), "share_changed": len(changed) / k if k else None,
                           "reference": "connote, one request per generate() call, dynamic cache"},
            "mismatches": [[naive["texts"][i], ours["texts"][i]] for i in range(shared)
                           if naive["texts"][i] != ours["texts"][i]][:3]}
    return out


def print_figures(model: str, fig: dict[str, Any], args: argparse.Namespace) -> None:
    what = "story for 5 photos (hf-vlm)" if model == "vlm" else "metaphor caption of 6 frames (git-llava)"
    cuda = "peak_cuda" in fig["naive"]
    print(f"\n{model}: {args.size} random-init model, {what}; greedy, max {fig['max_new_tokens']} new tokens, "
          f"connote in generate() calls of {fig['batch']} (the task's: {task_batch(model)}), device {args.device}, "
          f"dtype {fig['dtype']}, torch threads {fig['naive']['torch_threads']}")
    print(f"{'':28}{'items':>6}{'items/s':>9}{'tokens/s':>10}{'seconds':>9}"
          + (f"{'peak CUDA':>11}" if cuda else f"{'peak RSS':>10}") + f"{'CPU s/item':>12}  load avg (1 min)")
    print(figure_row("per-item HF generate loop", fig["naive"], cuda))
    for name, c in fig["configs"].items():
        print(figure_row(f"connote ({name} cache)", c, cuda) + f"   {c['speedup']:.2f}x the loop")
    for name, c in fig["configs"].items():
        inv = c["invariance"]
        print(f"connote ({name}): {c['identical_to_loop']}/{c['compared_to_loop']} texts identical to the loop's; "
              f"batch invariance: {inv['changed']} of {inv['items']} changed vs batch 1 "
              f"({(inv['share_changed'] or 0):.0%} flip rate, {fig['dtype']}); load + warm-up "
              f"{c['load_and_warmup_s']:.1f} s{' (compiled)' if c.get('compiled') else ''}")


def write_json(path: Path | None, figures: dict[str, Any]) -> None:
    """Rewrite ``path`` (atomically: a reader never sees half a file) with everything measured so far."""
    if path is None:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(figures, indent=2) + "\n")
    os.replace(tmp, path)


def measure(model: str, folder: Path, args: argparse.Namespace, figures: dict[str, Any]) -> bool:
    """Both sides of one generator, the JSON rewritten after each result; False when a side failed."""
    from sides import stream_worker

    got: dict[str, Any] = {"naive": None, "configs": {}}

    def on_result(result: dict[str, Any]) -> None:
        if result["side"] == "naive":
            got["naive"] = result
        else:
            got["configs"][result["config"]] = result
        if got["naive"] is not None:
            figures[model] = summarize(model, dict(got["naive"]), {k: dict(v) for k, v in got["configs"].items()},
                                       args)
            write_json(args.json, figures)

    ok = stream_worker(side_command("naive", model, folder, args), f"loop side of {model}", on_result) == 0
    ok = stream_worker(side_command("connote", model, folder, args), f"connote side of {model}", on_result) == 0 and ok
    if model in figures:
        print_figures(model, figures[model], args)
    return ok


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["tiny", "small", "real"], default="small")
    ap.add_argument("--only", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--dtype", default="auto", help="both sides' dtype (auto: bf16 on CUDA, fp32 on CPU)")
    ap.add_argument("--items", type=int, default=None, help="connote's stories / videos (tiny 2, small 16, real 16)")
    ap.add_argument("--naive-items", type=int, default=None, help="the loop's (tiny 2, small 8, real 2)")
    ap.add_argument("--invariance-items", type=int, default=None,
                    help="items also generated one per call, for the flip rate (tiny 2, small 8, real 4)")
    ap.add_argument("--max-new-tokens", type=int, default=None,
                    help="default: the task's (stories 120, VMC 48); at real size stories get 64")
    ap.add_argument("--batch", type=int, default=None, help="requests per generate() call (default: the task's)")
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS),
                    help="connote's configurations, in this order (default: dynamic static)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads in each side (default: torch's)")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a connote spec option for every configuration, e.g. logits=model (repeatable)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here (after every result)")
    ap.add_argument("--worker", choices=["naive", "connote"], help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.items = args.items or DEFAULT_ITEMS[args.size]
    args.naive_items = min(args.naive_items or DEFAULT_NAIVE_ITEMS[args.size], args.items)
    args.invariance_items = min(args.invariance_items if args.invariance_items is not None
                                else DEFAULT_INVARIANCE[args.size], args.items)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    from connote.models.engine import resolve_dtype

    dtype = str(resolve_dtype(args.dtype, args.device)).replace("torch.", "")
    figures: dict[str, Any] = {"size": args.size, "device": args.device, "dtype": dtype, "items": args.items,
                               "configs": args.configs, "load_average_start": os.getloadavg()}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs",
          flush=True)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.only:
            build = build_vlm if model == "vlm" else build_git_llava
            t = time.perf_counter()
            folder = build(args.size, Path(tmp) / model, args.device, dtype if args.size == "real" else None)
            figures.setdefault("build_seconds", {})[model] = time.perf_counter() - t
            if not measure(model, folder, args, figures):
                failed.append(model)
    figures["load_average_end"] = os.getloadavg()
    write_json(args.json, figures)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if failed:
        return 2
    # in fp32 batching must change nothing: not against the loop, not against batch 1
    differ = [f"{m} ({name})" for m in args.only for name, c in figures[m]["configs"].items()
              if dtype == "float32" and name == "dynamic"
              and (c["invariance"]["changed"] or c["identical_to_loop"] != c["compared_to_loop"])]
    if differ:
        print(f"fp32 outputs differ from the loop's or from batch 1 for: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
