"""GIT-LLaVA: a frozen GIT video captioner, a 2-layer GELU projector and a causal LM.

The video (``clips`` groups of ``frames_per_clip`` frames) goes through the frozen
``GitForCausalLM`` with only its start token as text; the decoder's hidden states at ``layer``
(``hidden_states[layer]``, -2 as the public code: the output of the second-to-last decoder layer,
over all visual and text positions) are the video representation. GIT-LLaVA-X encodes each clip
separately and **sums** the clip representations. The projector maps them into the LLM's input
embedding space, where they replace ``<video>`` in the chat template::

    USER: <video>\\n{prompt} ASSISTANT: {caption}</s>

The loss is the cross-entropy of the caption tokens (and the end-of-sequence token) only.

Saved models (:meth:`GitLlava.save`) are folders with ``git_llava.json`` (the architecture and
where the captioner and LLM come from), ``projector.safetensors`` and, when the LLM was trained,
``llm/`` (full weights + tokenizer) or ``llm_adapter/`` (a peft LoRA adapter).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch import nn

from connote.core.errors import InputError
from connote.vmc.train.config import FORMAT, ModelConfig, read_saved


def _resolve(source: str) -> str:
    """Local paths become absolute (so a saved model finds them again); hub ids stay as they are."""
    p = Path(source)
    return str(p.resolve()) if p.exists() else source


class Projector(nn.Sequential):
    """Linear -> GELU -> Linear, from the captioner's width to the LLM's embedding width."""

    def __init__(self, d_in: int, d_out: int, d_hidden: int | None = None) -> None:
        d_hidden = d_hidden or d_out
        super().__init__(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out))


class GitLlava(nn.Module):
    """The model; build with :meth:`build` (from sources) or :meth:`from_pretrained` (saved)."""

    def __init__(self, cfg: ModelConfig, captioner: Any, processor: Any, llm: Any, tokenizer: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.captioner = captioner
        self.processor = processor
        self.llm = llm
        self.tokenizer = tokenizer
        n_emb = getattr(captioner.config, "num_image_with_embedding", None)
        if n_emb is not None and n_emb < cfg.frames_per_clip:
            raise InputError(f"the captioner takes at most {n_emb} frames per video "
                             f"(num_image_with_embedding) but model.frames_per_clip is {cfg.frames_per_clip}")
        if cfg.frames_per_clip > 1 and n_emb is None:
            raise InputError("the captioner is an image GIT (num_image_with_embedding is unset); "
                             "use a video GIT (e.g. microsoft/git-large-vatex) or frames_per_clip: 1")
        n_layers = captioner.config.num_hidden_layers
        if not -(n_layers + 1) <= cfg.layer <= n_layers:
            raise InputError(f"model.layer {cfg.layer} is out of range: the captioner has {n_layers} decoder "
                             f"layers (hidden_states indices {-(n_layers + 1)}..{n_layers})")
        d_git = captioner.config.hidden_size
        d_llm = llm.get_input_embeddings().weight.shape[1]
        self.projector = Projector(d_git, d_llm, cfg.projector_hidden)
        for p in self.captioner.parameters():
            p.requires_grad_(False)
        self.captioner.eval()
        before, after = cfg.template.split("<video>", 1)
        self._before_text, self._after_text = before, after
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    # ----------------------------------------------------------------- construction
    @classmethod
    def build(cls, cfg: ModelConfig, *, dtype: torch.dtype | None = None,
              llm_source: str | None = None) -> GitLlava:
        """Load the captioner and LLM named in ``cfg`` (hub ids or local folders)."""
        from transformers import AutoModelForCausalLM, AutoProcessor, AutoTokenizer, GitForCausalLM

        cfg = dataclasses.replace(cfg, captioner=_resolve(cfg.captioner), llm=_resolve(cfg.llm))
        kw = {"dtype": dtype} if dtype is not None else {}
        captioner = GitForCausalLM.from_pretrained(cfg.captioner, **kw)
        processor = AutoProcessor.from_pretrained(cfg.captioner)
        src = llm_source or cfg.llm
        llm = AutoModelForCausalLM.from_pretrained(src, **kw)
        tokenizer = AutoTokenizer.from_pretrained(src)
        return cls(cfg, captioner, processor, llm, tokenizer)

    @classmethod
    def from_pretrained(cls, folder: str | Path, *, dtype: torch.dtype | None = None,
                        merge_adapter: bool = False) -> GitLlava:
        """Load a model saved by :meth:`save` (``merge_adapter`` folds a LoRA adapter in); ``dtype`` is every
        part's, the projector's too (it is saved in float32)."""
        folder = Path(folder)
        meta, cfg = read_saved(folder)
        llm_source = str(folder / "llm") if meta.get("llm_saved") else None
        model = cls.build(cfg, dtype=dtype, llm_source=llm_source)
        if meta.get("adapter"):
            from peft import PeftModel

            model.llm = PeftModel.from_pretrained(model.llm, str(folder / meta["adapter"]))
            if merge_adapter:
                model.llm = model.llm.merge_and_unload()
        model.load_projector(folder)
        if dtype is not None:  # one dtype throughout: the projector's output meets the LLM's embeddings
            model.projector.to(dtype)
        return model

    def load_projector(self, folder: str | Path) -> None:
        from safetensors.torch import load_file

        path = Path(folder) / "projector.safetensors"
        if not path.exists():
            raise InputError("projector.safetensors missing", path=folder)
        state = load_file(str(path))
        try:
            self.projector.load_state_dict(state)
        except RuntimeError as exc:
            raise InputError(f"the projector does not fit this captioner/LLM pair: {exc}", path=path) from exc

    def save(self, folder: str | Path, *, save_llm: bool = True) -> Path:
        """Write ``git_llava.json``, the projector and (if ``save_llm``) the LLM or its adapter."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.projector.state_dict().items()}
        save_file(state, str(folder / "projector.safetensors"))
        adapter = None
        llm_saved = False
        if save_llm:
            if hasattr(self.llm, "peft_config"):
                self.llm.save_pretrained(str(folder / "llm_adapter"))
                adapter = "llm_adapter"
            else:
                self.llm.save_pretrained(str(folder / "llm"))
                self.tokenizer.save_pretrained(str(folder / "llm"))
                llm_saved = True
        meta = {"format": FORMAT, "model": dataclasses.asdict(self.cfg), "llm_saved": llm_saved,
                "adapter": adapter}
        (folder / "git_llava.json").write_text(json.dumps(meta, indent=2) + "\n")
        return folder

    # ----------------------------------------------------------------- inputs
    def _base_llm(self) -> Any:
        llm = self.llm
        while hasattr(llm, "get_base_model") and llm is not llm.get_base_model():
            llm = llm.get_base_model()
        return llm

    def pixel_values(self, clips: Sequence[Sequence[Image.Image]]) -> torch.Tensor:
        """``(clips, frames, 3, H, W)`` pixel values for one video through GIT's processor."""
        return self.videos_pixel_values([clips])[0]

    def videos_pixel_values(self, videos: Sequence[Sequence[Sequence[Image.Image]]]) -> torch.Tensor:
        """``(videos, clips, frames, 3, H, W)`` pixel values of several videos (each a list of clips) in one
        call of GIT's processor: the same values as one call per video (the processor works image by
        image), without paying its per-call cost once per video."""
        for clips in videos:
            if len(clips) != self.cfg.clips:
                raise ValueError(f"expected {self.cfg.clips} clip(s), got {len(clips)}")
            if any(len(clip) != len(clips[0]) for clip in clips):
                raise ValueError(f"clips of different lengths: {[len(clip) for clip in clips]}")
        per_clip = len(videos[0][0])
        if any(len(clip) != per_clip for clips in videos for clip in clips):
            raise ValueError("videos with different numbers of frames per clip cannot share a processor call")
        flat = [im for clips in videos for clip in clips for im in clip]
        pv = self.processor(images=flat, return_tensors="pt").pixel_values
        return pv.view(len(videos), self.cfg.clips, per_clip, *pv.shape[1:])

    def caption_ids(self, caption: str) -> list[int]:
        """Caption tokens plus end-of-sequence, truncated to ``max_caption_tokens``."""
        ids = self.tokenizer(" " + caption.strip(), add_special_tokens=False).input_ids
        ids = ids[: self.cfg.max_caption_tokens - 1]
        return ids + [self.tokenizer.eos_token_id]

    def _text_ids(self, prompt: str) -> tuple[list[int], list[int]]:
        before = self.tokenizer(self._before_text, add_special_tokens=False).input_ids
        bos = self.tokenizer.bos_token_id
        if bos is not None and (not before or before[0] != bos):
            before = [bos] + before
        after = self.tokenizer(self._after_text.format(prompt=prompt), add_special_tokens=False).input_ids
        return before, after

    # ----------------------------------------------------------------- the model
    @torch.no_grad()
    def encode(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """Frozen captioner states ``(B, T, d_git)`` from ``(B, clips, frames, 3, H, W)``, summed over clips."""
        b, k = pixel_values.shape[:2]
        dev = next(self.captioner.parameters()).device
        dtype = next(self.captioner.parameters()).dtype
        start = self.captioner.config.bos_token_id
        if start is None:
            start = self.processor.tokenizer.cls_token_id
        input_ids = torch.full((b * k, 1), int(start), dtype=torch.long, device=dev)
        flat = pixel_values.reshape(b * k, *pixel_values.shape[2:]).to(dev, dtype)
        if self.cfg.frames_per_clip == 1:
            flat = flat[:, 0]
        # the base GitModel: the same hidden states as GitForCausalLM's, without the LM head's logits over
        # every visual position (at GIT-large, 6 x 257 + 1 positions x a 30,522-word vocabulary per video)
        git = getattr(self.captioner, "git", self.captioner)
        out = git(input_ids=input_ids, pixel_values=flat, output_hidden_states=True)
        states = out.hidden_states[self.cfg.layer]
        return states.view(b, k, *states.shape[1:]).sum(dim=1)

    def _rows(self, video: torch.Tensor, prompts: Sequence[str],
              captions: Sequence[str] | None) -> list[tuple[torch.Tensor, list[int]]]:
        """Per example: its embeddings (instruction, projected video, caption) and labels (-100 off the caption)."""
        emb = self.llm.get_input_embeddings()
        dev = emb.weight.device
        projected = self.projector(video.to(dev, self.projector[0].weight.dtype)).to(emb.weight.dtype)
        rows: list[tuple[torch.Tensor, list[int]]] = []
        for i, prompt in enumerate(prompts):
            before, after = self._text_ids(prompt)
            cap = self.caption_ids(captions[i]) if captions is not None else []
            pieces = [emb(torch.tensor(before, device=dev)), projected[i],
                      emb(torch.tensor(after + cap, device=dev, dtype=torch.long))]
            seq = torch.cat(pieces, dim=0)
            rows.append((seq, [-100] * (seq.shape[0] - len(cap)) + cap))
        return rows

    def _sequences(self, video: torch.Tensor, prompts: Sequence[str],
                   captions: Sequence[str] | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, int]:
        """Embeddings, attention mask and labels; right-padded for training, left-padded for generation."""
        rows = self._rows(video, prompts, captions)
        emb = self.llm.get_input_embeddings()
        dev = emb.weight.device
        length = max(r[0].shape[0] for r in rows)
        d = rows[0][0].shape[1]
        pad_id = self.tokenizer.pad_token_id
        pad_vec = emb(torch.tensor([pad_id], device=dev))[0]
        embeds = pad_vec.expand(len(rows), length, d).clone()
        mask = torch.zeros(len(rows), length, dtype=torch.long, device=dev)
        labels_t = torch.full((len(rows), length), -100, dtype=torch.long, device=dev)
        first_label = length
        for i, (seq, labels) in enumerate(rows):
            n = seq.shape[0]
            if captions is None:  # left padding for generation
                embeds[i, length - n:] = seq
                mask[i, length - n:] = 1
            else:
                embeds[i, :n] = seq
                mask[i, :n] = 1
                labels_t[i, :n] = torch.tensor(labels, device=dev)
                first_label = min(first_label, n - sum(x != -100 for x in labels))
        return embeds, mask, (labels_t if captions is not None else None), first_label

    def _packed(self, video: torch.Tensor, prompts: Sequence[str],
                captions: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The examples end to end in one row, no padding: embeddings ``(1, total, d)``, position ids that restart
        at 0 with every example (transformers reads the restarts as example boundaries and keeps attention within
        each), the positions whose output predicts a caption token, and those tokens."""
        rows = self._rows(video, prompts, captions)
        dev = rows[0][0].device
        positions, targets, starts = [], [], 0
        for seq, labels in rows:
            for j in range(1, len(labels)):
                if labels[j] != -100:  # the output at j - 1 predicts token j
                    positions.append(starts + j - 1)
                    targets.append(labels[j])
            starts += seq.shape[0]
        embeds = torch.cat([seq for seq, _ in rows])[None]
        position_ids = torch.cat([torch.arange(seq.shape[0], device=dev) for seq, _ in rows])[None]
        return (embeds, position_ids, torch.tensor(positions, device=dev),
                torch.tensor(targets, device=dev, dtype=torch.long))

    def forward(self, pixel_values: torch.Tensor, prompts: Sequence[str],
                captions: Sequence[str], *, pack: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed caption-token cross-entropy and the number of caption tokens.

        The LLM's decoder gives the hidden states, and the LM head runs only where the next token is a caption
        token (a few dozen positions of ~1,500 per video). ``pack`` runs the batch as one row without padding
        (:meth:`_packed`): the same loss, up to floating-point summation order."""
        video = self.encode(pixel_values)
        decoder = self.llm.get_decoder()
        if pack:
            embeds, position_ids, positions, targets = self._packed(video, prompts, captions)
            hidden = decoder(inputs_embeds=embeds, position_ids=position_ids, use_cache=False).last_hidden_state
            states = hidden[0, positions]
        else:
            embeds, mask, labels, _ = self._sequences(video, prompts, captions)
            assert labels is not None
            hidden = decoder(inputs_embeds=embeds, attention_mask=mask, use_cache=False).last_hidden_state
            keep = labels[:, 1:] != -100
            states, targets = hidden[:, :-1][keep], labels[:, 1:][keep]
        return self.caption_loss(states, targets), torch.tensor(targets.numel(), device=targets.device)

    def caption_loss(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed cross-entropy of ``targets`` from the decoder's final ``states`` through the LM head (in float32;
        with ``fused_loss`` set, e.g. Liger's fused linear cross-entropy, the head and the loss in one kernel)."""
        head = self.llm.get_output_embeddings()
        fused = getattr(self, "fused_loss", None)
        if fused is not None:
            return fused(head.weight, states, targets)
        logits = head(states)
        return nn.functional.cross_entropy(logits.float(), targets, reduction="sum")

    @torch.no_grad()
    def generate(self, pixel_values: torch.Tensor, prompts: Sequence[str] | None = None,
                 max_new_tokens: int = 48, **gen_kwargs: Any) -> list[str]:
        """Greedy (by default) captions for a batch ``(B, clips, frames, 3, H, W)``."""
        prompts = list(prompts) if prompts is not None else [self.cfg.prompt] * pixel_values.shape[0]
        video = self.encode(pixel_values)
        embeds, mask, _, _ = self._sequences(video, prompts, None)
        kwargs = {"do_sample": False, "num_beams": 1, **gen_kwargs}
        out = self.llm.generate(inputs_embeds=embeds, attention_mask=mask, max_new_tokens=max_new_tokens,
                                pad_token_id=self.tokenizer.pad_token_id,
                                eos_token_id=self.tokenizer.eos_token_id, **kwargs)
        return [t.strip() for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]

    # ----------------------------------------------------------------- training helpers
    def set_trainable(self, *, llm: bool) -> list[str]:
        """Freeze the captioner, train the projector and (if ``llm``) the LLM; returns trainable names."""
        for p in self.captioner.parameters():
            p.requires_grad_(False)
        for p in self.projector.parameters():
            p.requires_grad_(True)
        if not hasattr(self.llm, "peft_config"):
            for p in self.llm.parameters():
                p.requires_grad_(llm)
        return [n for n, p in self.named_parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trainable parameters by name (what a checkpoint needs)."""
        return {n: p.detach().cpu().clone() for n, p in self.named_parameters() if p.requires_grad}
