"""The GIT-LLaVA training loop on ``accelerate`` (one process, many GPUs or many nodes).

Stage 1 trains the projector alone (captioner and LLM frozen); stage 2 trains the projector and
the LLM (full, or LoRA adapters through peft). AdamW, linear warm-up over ``warmup_ratio`` of the
steps, then cosine decay; bf16 autocast on CUDA; gradient clipping; validation loss every epoch
(or ``eval_every`` steps) with early stopping; the best model is kept.

Determinism and distribution
----------------------------
* The data order of epoch ``e`` is a permutation drawn from ``seed`` and ``e`` alone. A step takes
  the next ``batch_size`` examples (the *global* batch, the last incomplete one dropped); process
  ``r`` of ``W`` takes its ``batch_size / W`` slice, split further into ``grad_accum`` micro-batches.
* The loss of a step is the summed caption-token cross-entropy divided by the number of caption
  tokens in the global batch (known in advance from the captions), so the gradients, and the loss,
  are the same for any number of processes (up to floating-point summation order).
* Checkpoints (``output_dir/checkpoints/step-N``) hold the trainable weights, the optimiser and
  scheduler states, every process's RNG states and the data position (epoch, batch in epoch) plus
  the early-stopping state; resuming continues exactly where the interrupted run was. Every file
  holds tensors and plain values only and is loaded with ``torch.load(weights_only=True)``, so a
  tampered checkpoint cannot run code; older checkpoints that need pickle are refused.
* Why not ``Accelerator.save_state``/``load_state``: they save every prepared model's full state dict, so
  a stage-1 checkpoint would hold the frozen captioner and LLM (a 7B LLM: ~14 GB per checkpoint, against the
  projector's few MB here), and objects added with ``register_for_checkpointing`` are loaded with
  ``weights_only=False`` (accelerate's ``load_custom_state``), which this project refuses. The RNG states
  saved here are the ones accelerate saves (Python, NumPy, torch, CUDA), as tensors and plain values.

Launch on many GPUs with ``accelerate launch -m connote.vmc.train --config c.yaml`` or
``torchrun --nproc_per_node N -m connote.vmc.train --config c.yaml``.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from connote.core.errors import InputError
from connote.vmc.train.config import TrainConfig
from connote.vmc.train.datasets import ExampleDataset, build_examples, collate


@dataclass
class TrainResult:
    """What a training run produced."""

    final_dir: str
    steps: int
    best_val_loss: float | None
    stopped_early: bool
    losses: list[float] = field(default_factory=list)


CHECKPOINT_FORMAT = 2
"""Bumped when a checkpoint's files change. Format 2 stores every state as tensors and plain Python
values, so resuming loads each file with ``torch.load(weights_only=True)`` and no file can run code."""


def _rng_state() -> dict[str, Any]:
    """Every RNG state as tensors, ints and floats (loadable with ``weights_only=True``)."""
    version, mt, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": {"version": version, "state": torch.tensor(mt, dtype=torch.int64), "gauss": gauss},
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    py, npy = state["python"], state["numpy"]
    random.setstate((py["version"], tuple(int(x) for x in py["state"].tolist()), py["gauss"]))
    np.random.set_state((npy["name"], npy["keys"].numpy().astype(np.uint32), npy["pos"], npy["has_gauss"],
                         npy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_checkpoint_file(path: Path) -> Any:
    """``torch.load`` with ``weights_only=True``: tensors and plain values only, never code.

    A file that needs full unpickling (a checkpoint from before format 2, or a crafted file) is
    refused with ``InputError`` rather than unpickled.
    """
    import pickle

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            "refusing to load: the file needs full unpickling, which can run arbitrary code "
            "(a checkpoint written before connote's checkpoint format 2, or a tampered file); "
            f"only tensors and plain values are loaded. Delete this checkpoint folder to start over "
            f"or resume from a newer one ({first})", path=path) from None
    except (OSError, RuntimeError, EOFError) as exc:
        raise InputError(f"cannot read checkpoint file ({type(exc).__name__}: {exc})", path=path) from None


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _latest_checkpoint(output_dir: Path) -> Path | None:
    ckpts = sorted((output_dir / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    ckpts = [c for c in ckpts if (c / "progress.json").exists()]
    return ckpts[-1] if ckpts else None


def _epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=g).tolist()


def train(cfg: TrainConfig, *, log: Callable[[str], None] | None = None,
          stop_after_steps: int | None = None) -> TrainResult:
    """Run one stage of GIT-LLaVA training as configured; returns where the final model is.

    ``stop_after_steps`` ends the run after that many optimiser steps *of this invocation*, as if
    it had been interrupted (the checkpoint written at that step lets a later run resume).
    """
    from accelerate import Accelerator
    from transformers import get_scheduler

    from connote.vmc.train.git_llava import GitLlava

    t = cfg.train
    use_bf16 = t.bf16 == "yes" or (t.bf16 == "auto" and torch.cuda.is_available())
    # several processes without CUDA (e.g. torchrun on CPUs): accelerate needs cpu=True to use gloo
    cpu_multi = not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) > 1
    # bf16 is applied with torch.autocast here rather than Accelerator(mixed_precision=...): the
    # accelerate state is process-wide, so runs with different precisions can share one process
    acc = Accelerator(cpu=cpu_multi)

    def autocast() -> Any:
        return torch.autocast(acc.device.type, dtype=torch.bfloat16, enabled=use_bf16)

    world, rank = acc.num_processes, acc.process_index
    out = Path(cfg.output_dir)
    say = log or (lambda m: print(m, flush=True))

    def info(msg: str) -> None:
        if acc.is_main_process:
            say(msg)

    if t.batch_size % (world * t.grad_accum):
        raise InputError(f"train.batch_size ({t.batch_size}) must be a multiple of processes x grad_accum "
                         f"({world} x {t.grad_accum})")
    micro = t.batch_size // (world * t.grad_accum)
    _seed_all(t.seed)

    # ---- model
    train_llm = cfg.stage == 2 and (t.train_llm if t.train_llm is not None else True)
    llm_source = None
    init = Path(cfg.init_from) if cfg.init_from else None
    if init is not None:
        if not (init / "git_llava.json").exists():
            raise InputError("init_from is not a saved GIT-LLaVA model (git_llava.json missing)", path=init)
        if (init / "llm").is_dir():
            llm_source = str(init / "llm")
    baseline = cfg.model.architecture == "git"  # the A.2 GIT baseline: every GIT weight trained, no LLM
    if baseline:
        from connote.vmc.train.git_baseline import GitBaseline

        model = GitBaseline.build(cfg.model)
    else:
        model = GitLlava.build(cfg.model, llm_source=llm_source)
    if use_bf16 and not baseline:  # frozen parts (and a LoRA LLM's base) run in bf16; trained weights stay fp32
        model.captioner.to(torch.bfloat16)
        if not train_llm or t.lora is not None:
            model.llm.to(torch.bfloat16)
    if init is not None:
        model.load_projector(init)
        if (init / "llm_adapter").is_dir():  # a LoRA-trained model: fold its adapter into the LLM
            from peft import PeftModel

            model.llm = PeftModel.from_pretrained(model.llm, str(init / "llm_adapter")).merge_and_unload()
        info(f"initialised from {init}")
    if train_llm and t.lora is not None:
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(r=t.lora.r, lora_alpha=t.lora.alpha, lora_dropout=t.lora.dropout,
                          target_modules=t.lora.target_modules, task_type="CAUSAL_LM")
        model.llm = get_peft_model(model.llm, lcfg)
    trainable = model.set_trainable(llm=train_llm)
    speed = {"pack": False, "compiled_layers": 0, "kernels": "none"}
    if not baseline:  # packing, compiled layers, fused kernels (connote.vmc.train.speed): the same loss, faster
        from connote.vmc.train.speed import configure

        speed = configure(model, t.pack, t.compile, t.kernels, str(acc.device))
    fast = {"pack": True} if speed["pack"] else {}
    n_train_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    what = "GIT (all weights)" if baseline else \
        'projector + LLM' + (' (LoRA)' if t.lora else '') if train_llm else 'projector only'
    info(f"stage {cfg.stage}: training {n_train_params:,} parameters in {len(trainable)} tensors ({what}); "
         f"{world} process(es), {'bf16' if use_bf16 else 'fp32'}; packed {'yes' if speed['pack'] else 'no'}, "
         f"{speed['compiled_layers']} compiled layer(s), kernels {speed['kernels']}")

    # ---- data
    train_ex, val_ex = build_examples(cfg.stage, cfg.data, cfg.model, t.seed, log=info)
    steps_per_epoch = len(train_ex) // t.batch_size
    if steps_per_epoch == 0:
        raise InputError(f"{len(train_ex)} training examples are fewer than train.batch_size ({t.batch_size})")
    total_steps = t.max_steps or math.ceil(t.epochs * steps_per_epoch)
    tok_count = {e.example_id: len(model.caption_ids(e.caption)) for e in train_ex + val_ex}
    ds_train = ExampleDataset(train_ex, cfg.model, model.pixel_values, cfg.data.frame_size)
    ds_val = ExampleDataset(val_ex, cfg.model, model.pixel_values, cfg.data.frame_size)

    # ---- optimisation
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in params if p.ndim >= 2]
    no_decay = [p for n, p in params if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": t.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=t.lr)
    warmup = math.ceil(t.warmup_ratio * total_steps)
    scheduler = get_scheduler(t.scheduler if t.scheduler != "constant" else "constant_with_warmup",
                              optimizer, num_warmup_steps=warmup, num_training_steps=total_steps)
    model.captioner.to(acc.device)
    ddp_model, optimizer = acc.prepare(model, optimizer)
    core: GitLlava = acc.unwrap_model(ddp_model)

    # ---- resume
    step, epoch, batch_in_epoch = 0, 0, 0
    best_val: float | None = None
    bad_evals = 0
    done = False
    ckpt = _latest_checkpoint(out) if cfg.resume else None
    if ckpt is not None:
        progress = json.loads((ckpt / "progress.json").read_text())
        if progress.get("world_size") != world:
            info(f"note: checkpoint written with {progress.get('world_size')} process(es), resuming with {world}")
        if progress.get("format", 1) < CHECKPOINT_FORMAT:
            raise InputError(
                f"checkpoint format {progress.get('format', 1)} stores optimizer/scheduler/RNG state as "
                f"pickles that can run code when loaded; this connote loads only format {CHECKPOINT_FORMAT} "
                "(tensors and plain values). Delete the checkpoints folder (or set resume: false) to start "
                "over", path=ckpt)
        state = load_checkpoint_file(ckpt / "trainable.pt")
        missing = set(state) ^ {n for n, _ in params}
        if missing:
            raise InputError(f"checkpoint does not match the configured model ({len(missing)} tensor(s) differ, "
                             f"e.g. {sorted(missing)[0]})", path=ckpt)
        with torch.no_grad():
            for n, p in core.named_parameters():
                if n in state:
                    p.copy_(state[n].to(p.device, p.dtype))
        optimizer.load_state_dict(load_checkpoint_file(ckpt / "optimizer.pt"))
        scheduler.load_state_dict(load_checkpoint_file(ckpt / "scheduler.pt"))
        rng_file = ckpt / f"rng-{rank}.pt"
        if rng_file.exists():
            _set_rng_state(load_checkpoint_file(rng_file))
        step, epoch, batch_in_epoch = progress["step"], progress["epoch"], progress["batch_in_epoch"]
        best_val, bad_evals, done = progress["best_val"], progress["bad_evals"], progress["done"]
        info(f"resumed from {ckpt} at step {step} (epoch {epoch}, batch {batch_in_epoch})")
    if acc.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")

    def evaluate() -> float | None:
        if not val_ex:
            return None
        ddp_model.eval()
        loss_sum = torch.zeros((), device=acc.device)
        tokens = torch.zeros((), device=acc.device)
        mine = list(range(rank, len(val_ex), world))
        for i in range(0, len(mine), micro):
            batch = collate([ds_val[j] for j in mine[i:i + micro]])
            with torch.no_grad(), autocast():
                ls, nt = core(batch["pixel_values"], batch["prompts"], batch["captions"], **fast)
            loss_sum += ls.detach().float()
            tokens += nt
        loss_sum, tokens = acc.reduce(loss_sum, "sum"), acc.reduce(tokens, "sum")
        ddp_model.train()
        return float(loss_sum / tokens.clamp(min=1))

    def save_checkpoint() -> None:
        d = out / "checkpoints" / f"step-{step}"
        if acc.is_main_process:
            d.mkdir(parents=True, exist_ok=True)
        acc.wait_for_everyone()
        torch.save(_rng_state(), d / f"rng-{rank}.pt")
        if acc.is_main_process:
            torch.save(core.trainable_state(), d / "trainable.pt")
            torch.save(optimizer.state_dict(), d / "optimizer.pt")
            torch.save(scheduler.state_dict(), d / "scheduler.pt")
        acc.wait_for_everyone()
        if acc.is_main_process:
            (d / "progress.json").write_text(json.dumps({
                "step": step, "epoch": epoch, "batch_in_epoch": batch_in_epoch, "best_val": best_val,
                "bad_evals": bad_evals, "done": done, "world_size": world, "total_steps": total_steps,
                "format": CHECKPOINT_FORMAT}))
            old = sorted((out / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
            for o in old[: max(0, len(old) - t.keep_checkpoints)]:
                shutil.rmtree(o, ignore_errors=True)
        acc.wait_for_everyone()

    def save_model(name: str) -> Path:
        target = out / name
        if acc.is_main_process:
            if target.exists():
                shutil.rmtree(target)
            core.save(target, save_llm=train_llm)
        acc.wait_for_everyone()
        return target

    losses: list[float] = []
    log_path = out / "train_log.jsonl"
    ddp_model.train()
    if not baseline:
        core.captioner.eval()
    steps_this_run = 0
    stopped_early = False
    t0 = time.time()
    while step < total_steps and not done:
        order = _epoch_order(len(train_ex), t.seed, epoch)
        ds_train.epoch = epoch  # random frames are re-drawn every epoch (and the same again on resume)
        # this process's micro-batches from the current data position to the end of the epoch,
        # decoded by DataLoader workers (num_workers) in exactly this order
        per_step = micro * t.grad_accum
        plan = [order[b * t.batch_size + rank * per_step:b * t.batch_size + (rank + 1) * per_step][m * micro:
                      (m + 1) * micro]
                for b in range(batch_in_epoch, steps_per_epoch) for m in range(t.grad_accum)]
        batches = iter(torch.utils.data.DataLoader(ds_train, batch_sampler=plan, collate_fn=collate,
                                                   num_workers=t.num_workers))
        while batch_in_epoch < steps_per_epoch and step < total_steps:
            global_ids = order[batch_in_epoch * t.batch_size:(batch_in_epoch + 1) * t.batch_size]
            global_tokens = sum(tok_count[train_ex[i].example_id] for i in global_ids)
            mine = global_ids[rank * micro * t.grad_accum:(rank + 1) * micro * t.grad_accum]
            step_loss = torch.zeros((), device=acc.device)
            for m in range(t.grad_accum):
                batch = next(batches)
                assert batch["ids"] == [train_ex[i].example_id for i in mine[m * micro:(m + 1) * micro]]
                last = m == t.grad_accum - 1
                ctx = nullcontext() if last or world == 1 else acc.no_sync(ddp_model)
                with ctx, autocast():
                    loss_sum, _ = ddp_model(batch["pixel_values"], batch["prompts"], batch["captions"], **fast)
                    # DDP averages gradients over processes: scale so the result is the global token mean
                    loss = loss_sum * world / global_tokens
                acc.backward(loss)
                step_loss += loss_sum.detach().float()
            if t.max_grad_norm:
                acc.clip_grad_norm_([p for _, p in params], t.max_grad_norm)
            lr_used = scheduler.get_last_lr()[0]
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            steps_this_run += 1
            batch_in_epoch += 1
            step_loss = float(acc.reduce(step_loss, "sum")) / global_tokens
            losses.append(step_loss)
            if acc.is_main_process and (step % t.log_every == 0 or step == total_steps):
                rec = {"step": step, "epoch": epoch, "loss": step_loss, "lr": lr_used,
                       "tokens": global_tokens, "elapsed_s": round(time.time() - t0, 3)}
                with log_path.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                say(f"step {step}/{total_steps} loss {step_loss:.4f} lr {rec['lr']:.3g}")
            end_of_epoch = batch_in_epoch == steps_per_epoch
            if (t.eval_every and step % t.eval_every == 0) or (not t.eval_every and end_of_epoch):
                val = evaluate()
                if val is not None:
                    if best_val is None or val < best_val:
                        best_val, bad_evals = val, 0
                        save_model("best")
                    else:
                        bad_evals += 1
                    info(f"validation loss {val:.4f} (best {best_val:.4f}, {bad_evals} without improvement)")
                    if acc.is_main_process:
                        with log_path.open("a") as fh:
                            fh.write(json.dumps({"step": step, "val_loss": val}) + "\n")
                    if t.early_stopping_patience is not None and bad_evals >= t.early_stopping_patience:
                        done = stopped_early = True
            if end_of_epoch:
                epoch, batch_in_epoch = epoch + 1, 0
            if step >= total_steps:
                done = True
            if done or (t.save_every and step % t.save_every == 0) or (not t.save_every and end_of_epoch):
                save_checkpoint()
            if done or end_of_epoch or (stop_after_steps is not None and steps_this_run >= stop_after_steps):
                break
        if stop_after_steps is not None and steps_this_run >= stop_after_steps and not done:
            return TrainResult(final_dir="", steps=step, best_val_loss=best_val, stopped_early=False,
                               losses=losses)
    if stopped_early:
        info(f"early stopping at step {step}")
    final = save_model("final")
    if best_val is not None and (out / "best").exists() and acc.is_main_process:
        # the best model (lowest validation loss) is the one to use
        shutil.rmtree(final)
        shutil.copytree(out / "best", final)
    acc.wait_for_everyone()
    return TrainResult(final_dir=str(final), steps=step, best_val_loss=best_val, stopped_early=stopped_early,
                       losses=losses)
