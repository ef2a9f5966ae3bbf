"""GIT-LLaVA training-step throughput: connote's step vs the same step in a plain Hugging Face loop.

Every side trains the same randomly initialised model (stage 2: projector + full LLM, AdamW) on the same
random batch: ``--batch`` videos of 6 frames through a frozen GIT, the projected decoder states plus the
instruction and a caption into a causal LM.

* ``plain_hf``: GIT forward -> projector -> ``llm(inputs_embeds=..., labels=...)`` (full-sequence logits,
  HF's loss) -> backward -> step, bf16 autocast like connote.
* ``connote``: ``GitLlava.forward`` as ``connote.vmc.train.loop`` runs it with its defaults (``train.pack``,
  ``train.compile``, ``train.kernels`` at ``auto``: on CUDA every LLM decoder layer compiled, Liger's kernels
  when installed, packing where the attention reads example boundaries; :mod:`connote.vmc.train.speed`).
* ``connote_eager`` (``--sides``): the same without compilation, packing or kernels (what the loop did before).

Prints, per side: seconds per step, LLM tokens/s, and model FLOPs utilisation: MFU with every model FLOP of
a step (6 x trainable LLM params x LLM tokens + 6 x projector params x video tokens + 2 x frozen GIT params x
GIT tokens) and ``mfu_llm`` without the frozen vision side's (GIT's forward), over the step time and the
device's dense bf16 peak (``--peak-tflops`` where the device is not in the table). Tokens are the real ones
(no padding). Each side warms up (``--warmup`` steps; a compiled side compiles there, its time printed)
before ``--steps`` timed steps; ``--out`` is rewritten after every side, so a time limit keeps the sides done.

    python benchmarks/train_throughput.py --size small --bf16            # the CPU smoke run (gpu.sh --smoke)
    python benchmarks/train_throughput.py --size real --device cuda      # GIT-large + ~1.1B Llama, one GPU

``real``: GIT-large video configuration (ViT-L/14 at 224 px, 6 frames, 6-layer 1024-wide decoder)
and a TinyLlama-1.1B-shaped Llama (2048 wide, 22 layers, 32k vocabulary), built on the device.
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

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_figures import peak_bf16_tflops  # noqa: E402  (one table of GPU peaks for both scripts)


def configs(size: str) -> tuple[Any, Any]:
    from transformers import GitConfig, LlamaConfig

    if size == "real":
        git = GitConfig(vision_config={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                                       "num_attention_heads": 16, "image_size": 224, "patch_size": 14},
                        hidden_size=1024, num_hidden_layers=6, num_attention_heads=16, intermediate_size=4096,
                        vocab_size=30522, num_image_with_embedding=6, max_position_embeddings=1024)
        llm = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                          num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096)
    else:
        git = GitConfig(vision_config={"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
                                       "num_attention_heads": 4, "image_size": 64, "patch_size": 16},
                        hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                        vocab_size=1000, num_image_with_embedding=6, max_position_embeddings=256)
        llm = LlamaConfig(vocab_size=8000, hidden_size=256, intermediate_size=704, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048)
    return git, llm


def build(size: str, device: str, folder: Path) -> Any:
    from transformers import GitForCausalLM, LlamaForCausalLM

    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.git_llava import GitLlava
    from connote.vmc.train.tiny import make_tiny_sources

    git_cfg, llm_cfg = configs(size)
    # a word-level tokenizer and GIT processor from the tiny sources; the models are real size
    tiny_git, tiny_llm = make_tiny_sources(folder, WORDS)
    from transformers import AutoProcessor, AutoTokenizer

    processor = AutoProcessor.from_pretrained(tiny_git)
    tokenizer = AutoTokenizer.from_pretrained(tiny_llm)
    torch.manual_seed(0)
    with torch.device(device):  # random init on the accelerator: seconds where a CPU takes a minute
        captioner = GitForCausalLM(git_cfg)
        llm = LlamaForCausalLM(llm_cfg)
    model = GitLlava(ModelConfig(captioner="random", llm="random"), captioner, processor, llm, tokenizer)
    model.set_trainable(llm=True)
    return model.to(device)


WORDS = "the apple is as red fire sea blue ice sun yellow gold leaf green grass".split()


def batch(size: str, n: int, device: str) -> tuple[torch.Tensor, list[str], list[str]]:
    side = 224 if size == "real" else 64
    g = torch.Generator().manual_seed(1)
    pv = torch.randn(n, 1, 6, 3, side, side, generator=g).to(device)
    caps = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(9)) for i in range(n)]
    return pv, ["What caption can best describe the metaphor in the video?"] * n, caps


def step_connote(model: Any, opt: torch.optim.Optimizer, pv: torch.Tensor, prompts: list[str],
                 caps: list[str], autocast: Any, pack: bool = False) -> float:
    with autocast():
        loss_sum, ntok = model(pv, prompts, caps, pack=pack)
        loss = loss_sum / ntok
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())


def step_plain(model: Any, opt: torch.optim.Optimizer, pv: torch.Tensor, prompts: list[str],
               caps: list[str], autocast: Any) -> float:
    """What one writes by hand: full logits and HF's loss over a labels tensor."""
    with autocast():
        with torch.no_grad():
            out = model.captioner(input_ids=torch.full((pv.shape[0], 1), 2, device=pv.device),
                                  pixel_values=pv[:, 0], output_hidden_states=True)
            states = out.hidden_states[-2]
        video = model.projector(states)
        emb = model.llm.get_input_embeddings()
        seqs, labels = [], []
        for i, cap in enumerate(caps):
            before, after = model._text_ids(prompts[i])
            cap_ids = model.caption_ids(cap)
            ids_after = torch.tensor(after + cap_ids, device=pv.device)
            seqs.append(torch.cat([emb(torch.tensor(before, device=pv.device)), video[i], emb(ids_after)]))
            labels.append(torch.tensor([-100] * (seqs[-1].shape[0] - len(cap_ids)) + cap_ids, device=pv.device))
        length = max(s.shape[0] for s in seqs)
        embeds = torch.zeros(len(seqs), length, seqs[0].shape[1], device=pv.device, dtype=seqs[0].dtype)
        lab = torch.full((len(seqs), length), -100, device=pv.device)
        mask = torch.zeros(len(seqs), length, dtype=torch.long, device=pv.device)
        for i, s in enumerate(seqs):
            embeds[i, :s.shape[0]] = s
            lab[i, :s.shape[0]] = labels[i]
            mask[i, :s.shape[0]] = 1
        loss = model.llm(inputs_embeds=embeds, attention_mask=mask, labels=lab).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())


def step_flops(model: Any, pv: torch.Tensor, llm_tokens: int) -> dict[str, float]:
    """Model FLOPs of one step: all, and the trained side's alone (LLM and projector, forward and backward)."""
    n_llm = sum(p.numel() for p in model.llm.parameters())
    n_git = sum(p.numel() for p in model.captioner.parameters())
    n_proj = sum(p.numel() for p in model.projector.parameters())
    side = pv.shape[-1]
    patch = model.captioner.config.vision_config.patch_size
    git_tokens = pv.shape[0] * (6 * ((side // patch) ** 2 + 1) + 1)
    trained = 6 * n_llm * llm_tokens + 6 * n_proj * git_tokens
    return {"all": trained + 2 * n_git * git_tokens, "llm": trained}


#: side -> (step function, loop settings: pack, compile, kernels)
#: (run in this order: Liger's kernels, once in, stay in the model's modules)
SIDES = {"plain_hf": (step_plain, None), "connote_eager": (step_connote, ("no", "no", "none")),
         "connote": (step_connote, ("auto", "auto", "auto"))}


def run_side(name: str, model: Any, state: dict[str, Any], args: argparse.Namespace, pv: torch.Tensor,
             prompts: list[str], caps: list[str], autocast: Any, flops: dict[str, float], peak: float | None,
             llm_tokens: int) -> dict[str, Any]:
    """Warm-up and timed steps of one side on a fresh copy of the weights (a compiled side compiles in its warm-up)."""
    from connote.vmc.train.speed import configure

    fn, settings = SIDES[name]
    if name == "connote" and args.settings:
        settings = tuple(args.settings)
    model.load_state_dict(state)
    extra: dict[str, Any] = {}
    resolved = None
    if settings is not None:
        resolved = configure(model, *settings, args.device)
        extra = {"pack": resolved["pack"]}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=None)
    t0 = time.perf_counter()
    losses = [fn(model, opt, pv, prompts, caps, autocast, **extra) for _ in range(args.warmup)]
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(args.steps):
        losses.append(fn(model, opt, pv, prompts, caps, autocast, **extra))
    if cuda:
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / args.steps
    row: dict[str, Any] = {"s_per_step": dt, "tokens_per_s": llm_tokens / dt, "first_loss": losses[0],
                           "warmup_s": warm, "settings": resolved}
    if peak:
        row["mfu"] = flops["all"] / dt / (peak * 1e12)
        row["mfu_llm"] = flops["llm"] / dt / (peak * 1e12)
    if cuda:
        row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    del opt
    return row


def unwrap_compiled(model: Any) -> None:
    """Undo ``nn.Module.compile`` on the layers (the next side starts eager)."""
    from connote.vmc.train.speed import decoder_layers

    for layer in decoder_layers(model.llm):
        layer._compiled_call_impl = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["small", "real"], default="small")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sides", nargs="+", choices=list(SIDES), default=["plain_hf", "connote"])
    ap.add_argument("--settings", nargs=3, metavar=("PACK", "COMPILE", "KERNELS"), default=None,
                    help="the connote side's train.pack, train.compile and train.kernels (default: auto auto auto; "
                         "the smoke run asks yes yes auto, the GPU's compiled and packed path on the CPU)")
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                    help="bf16 autocast (default: on for CUDA)")
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    args = ap.parse_args()
    if args.device == "cpu":
        torch.set_num_threads(args.threads or max(1, os.cpu_count() or 1))
    bf16 = args.bf16 if args.bf16 is not None else args.device.startswith("cuda")
    peak = args.peak_tflops
    if peak is None and args.device.startswith("cuda"):
        peak = peak_bf16_tflops(torch.cuda.get_device_name(torch.device(args.device)))

    def autocast() -> Any:
        return torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=bf16)

    def save() -> None:
        if args.out:
            tmp = args.out.with_name(args.out.name + ".tmp")
            tmp.write_text(json.dumps(results, indent=2) + "\n")
            os.replace(tmp, args.out)

    started = time.perf_counter()
    results: dict[str, Any] = {"size": args.size, "device": args.device, "batch": args.batch, "bf16": bf16,
                               "peak_tflops": peak}
    with tempfile.TemporaryDirectory() as tmp:
        model = build(args.size, args.device, Path(tmp))
        model.captioner.eval()
        if bf16:  # the frozen captioner runs in bf16, as the training loop runs it
            model.captioner.to(torch.bfloat16)
        pv, prompts, caps = batch(args.size, args.batch, args.device)
        embeds, mask, labels, _ = model._sequences(model.encode(pv), prompts, caps)
        llm_tokens = int(mask.sum())  # real tokens: a packed step has no others, a padded one computes its pads too
        flops = step_flops(model, pv, llm_tokens)
        results.update({"llm_params": sum(p.numel() for p in model.llm.parameters()),
                        "git_params": sum(p.numel() for p in model.captioner.parameters()),
                        "llm_tokens_per_step": llm_tokens, "padded_llm_tokens_per_step": int(mask.numel()),
                        "caption_tokens_per_step": int((labels != -100).sum()),
                        "model_tflops_per_step": flops["all"] / 1e12, "llm_tflops_per_step": flops["llm"] / 1e12,
                        "build_s": time.perf_counter() - started})
        save()
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        for name in [side for side in SIDES if side in args.sides]:
            results[name] = run_side(name, model, state, args, pv, prompts, caps, autocast, flops, peak, llm_tokens)
            unwrap_compiled(model)
            model.fused_loss = None
            if "plain_hf" in results and name != "plain_hf":
                results[f"{name}_speedup"] = results["plain_hf"]["s_per_step"] / results[name]["s_per_step"]
            save()
    if "plain_hf" in results and "connote" in results:
        results["speedup"] = results["plain_hf"]["s_per_step"] / results["connote"]["s_per_step"]
    results["total_s"] = time.perf_counter() - started
    save()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
