"""GIT-LLaVA training-step throughput: connote's step vs the same step in a plain Hugging Face loop.

Both train the same randomly initialised model (stage 2: projector + full LLM, AdamW) on the same
random batch: ``--batch`` videos of 6 frames through a frozen GIT, the projected decoder states
plus the instruction and a caption into a causal LM.

* plain HF loop: GIT forward -> projector -> ``llm(inputs_embeds=..., labels=...)`` (full-sequence
  logits, HF's loss) -> backward -> step, fp32 or bf16 autocast like connote.
* connote: ``GitLlava.forward`` (logits only at caption positions, summed token loss normalised by
  the caption tokens) -> backward -> step, as ``connote.vmc.train.loop`` runs it.

Prints, per side: seconds per step, LLM tokens/s, and model FLOPs utilisation (MFU: the model FLOPs
of a step, 6 x trainable LLM params x LLM tokens + 2 x frozen GIT params x GIT tokens
+ 6 x projector params x video tokens, over the step time and the device's peak bf16 FLOP/s; pass
``--peak-tflops`` where the device is not in the table).

    python benchmarks/train_throughput.py --size small                  # CPU smoke run (random tiny-ish)
    python benchmarks/train_throughput.py --size real --device cuda     # GIT-large + ~1.1B Llama, one GPU

``real``: GIT-large video configuration (ViT-L/14 at 224 px, 6 frames, 6-layer 1024-wide decoder)
and a TinyLlama-1.1B-shaped Llama (2048 wide, 22 layers, 32k vocabulary).
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
from gpu_figures import PEAK_BF16_TFLOPS  # noqa: E402  (one table of GPU peaks for both scripts)


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

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tiny tokenizer sources
    from connote.vmc.train.tiny import make_tiny_sources

    git_cfg, llm_cfg = configs(size)
    # a word-level tokenizer and GIT processor from the tiny sources; the models are real size
    tiny_git, tiny_llm = make_tiny_sources(folder, WORDS)
    from transformers import AutoProcessor, AutoTokenizer

    processor = AutoProcessor.from_pretrained(tiny_git)
    tokenizer = AutoTokenizer.from_pretrained(tiny_llm)
    torch.manual_seed(0)
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
                 caps: list[str], autocast: Any) -> float:
    with autocast():
        loss_sum, ntok = model(pv, prompts, caps)
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


def step_flops(model: Any, pv: torch.Tensor, llm_tokens: int) -> float:
    n_llm = sum(p.numel() for p in model.llm.parameters())
    n_git = sum(p.numel() for p in model.captioner.parameters())
    n_proj = sum(p.numel() for p in model.projector.parameters())
    side = pv.shape[-1]
    patch = model.captioner.config.vision_config.patch_size
    git_tokens = pv.shape[0] * (6 * ((side // patch) ** 2 + 1) + 1)
    return 6 * n_llm * llm_tokens + 2 * n_git * git_tokens + 6 * n_proj * git_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["small", "real"], default="small")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
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
        name = torch.cuda.get_device_name()
        peak = next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)

    def autocast() -> Any:
        return torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=bf16)

    results: dict[str, Any] = {"size": args.size, "device": args.device, "batch": args.batch, "bf16": bf16,
                               "peak_tflops": peak}
    with tempfile.TemporaryDirectory() as tmp:
        model = build(args.size, args.device, Path(tmp))
        model.captioner.eval()
        pv, prompts, caps = batch(args.size, args.batch, args.device)
        embeds, _, labels, _ = model._sequences(model.encode(pv), prompts, caps)
        llm_tokens = int(embeds.shape[0] * embeds.shape[1])
        flops = step_flops(model, pv, llm_tokens)
        results.update({"llm_params": sum(p.numel() for p in model.llm.parameters()),
                        "git_params": sum(p.numel() for p in model.captioner.parameters()),
                        "llm_tokens_per_step": llm_tokens, "caption_tokens_per_step": int((labels != -100).sum()),
                        "model_tflops_per_step": flops / 1e12})
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        for name, fn in (("plain_hf", step_plain), ("connote", step_connote)):
            model.load_state_dict(state)
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=None)
            losses = []
            for _ in range(args.warmup):
                losses.append(fn(model, opt, pv, prompts, caps, autocast))
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                losses.append(fn(model, opt, pv, prompts, caps, autocast))
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / args.steps
            row = {"s_per_step": dt, "tokens_per_s": llm_tokens / dt, "first_loss": losses[0]}
            if peak:
                row["mfu"] = flops / dt / (peak * 1e12)
            if args.device.startswith("cuda"):
                row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
            results[name] = row
            del opt
    results["speedup"] = results["plain_hf"]["s_per_step"] / results["connote"]["s_per_step"]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
