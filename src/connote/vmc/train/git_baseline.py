"""The fine-tuned GIT baseline of the VMC paper (appendix A.2): GIT-large VaTeX fine-tuned on VMC, batch size 4.

"We finetune the GIT model that is already fine-tuned for video captioning on VaTEx dataset on our VMC dataset.
The model is fine-tuned with a batch size of 4." Every weight of ``GitForCausalLM`` is trained (vision encoder
and text decoder) on the VMC captions of the videos' frames (6 frames: two from each third, what the
``git-video`` backend samples), with GIT's own language-modelling loss: cross-entropy of every caption token
after ``[CLS]`` up to and including ``[SEP]``, image positions excluded. No prompt: GIT captions from the frames.

It runs in the GIT-LLaVA loop (:func:`connote.vmc.train.loop.train`: AdamW, warm-up, cosine decay, validation and
early stopping, exact-resume checkpoints) when the config says ``model.architecture: git``; the loop talks to
:class:`GitBaseline` through the same methods as to :class:`~connote.vmc.train.git_llava.GitLlava`. ``final/`` is a
plain ``save_pretrained`` folder (model + processor), so ``connote vmc caption --model git-video:DIR``
captions with it (:mod:`connote.models.git`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch import nn

from connote.core.errors import InputError
from connote.vmc.train.config import ModelConfig

FORMAT = "connote.git_baseline/1"


class GitBaseline(nn.Module):
    """``GitForCausalLM`` + its processor, trained end to end on (frames, caption)."""

    def __init__(self, cfg: ModelConfig, captioner: Any, processor: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.captioner = captioner
        self.processor = processor
        n_emb = getattr(captioner.config, "num_image_with_embedding", None)
        if cfg.clips != 1:
            raise InputError("the GIT baseline takes one clip (model.clips: 1): GIT sees one 6-frame video")
        if (n_emb or 1) != cfg.frames_per_clip:
            raise InputError(f"the captioner takes {n_emb or 1} frame(s) per video (num_image_with_embedding) but "
                             f"model.frames_per_clip is {cfg.frames_per_clip}")
        self.tokenizer = processor.tokenizer

    @classmethod
    def build(cls, cfg: ModelConfig) -> GitBaseline:
        """Load the captioner named in ``cfg.captioner`` (hub id or local folder)."""
        from transformers import AutoProcessor, GitForCausalLM

        return cls(cfg, GitForCausalLM.from_pretrained(cfg.captioner), AutoProcessor.from_pretrained(cfg.captioner))

    # ----------------------------------------------------------------- what the loop calls
    def pixel_values(self, clips: Sequence[Sequence[Image.Image]]) -> torch.Tensor:
        """``(1, frames, 3, H, W)`` pixel values of one video through GIT's processor."""
        flat = [im for clip in clips for im in clip]
        pv = self.processor(images=flat, return_tensors="pt").pixel_values
        return pv.view(len(clips), len(clips[0]), *pv.shape[1:])

    def _ids(self, caption: str) -> list[int]:
        ids = self.tokenizer(caption.strip(), add_special_tokens=True).input_ids  # [CLS] caption [SEP]
        limit = self.cfg.max_caption_tokens + 1
        return ids if len(ids) <= limit else ids[:limit - 1] + [ids[-1]]

    def caption_ids(self, caption: str) -> list[int]:
        """The tokens the loss covers: the caption after ``[CLS]``, ``[SEP]`` included."""
        return self._ids(caption)[1:]

    def forward(self, pixel_values: torch.Tensor, prompts: Sequence[str],
                captions: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed caption-token cross-entropy (GIT's loss, not averaged) and the number of caption tokens."""
        dev = next(self.captioner.parameters()).device
        rows = [self._ids(c) for c in captions]
        length = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(rows), length), pad, dtype=torch.long, device=dev)
        mask = torch.zeros((len(rows), length), dtype=torch.long, device=dev)
        for i, r in enumerate(rows):
            input_ids[i, :len(r)] = torch.tensor(r, device=dev)
            mask[i, :len(r)] = 1
        pv = pixel_values[:, 0].to(dev, next(self.captioner.parameters()).dtype)
        if self.cfg.frames_per_clip == 1:
            pv = pv[:, 0]
        logits = self.captioner(input_ids=input_ids, attention_mask=mask, pixel_values=pv).logits
        text_logits = logits[:, -length:][:, :-1]  # the text positions come after the image tokens
        target = input_ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        loss = nn.functional.cross_entropy(text_logits.float().reshape(-1, text_logits.shape[-1]),
                                           target.reshape(-1), ignore_index=-100, reduction="sum")
        return loss, (target != -100).sum()

    def set_trainable(self, *, llm: bool = True) -> list[str]:
        """Every GIT weight is trained (``llm`` is GIT-LLaVA's switch and means nothing here)."""
        for p in self.captioner.parameters():
            p.requires_grad_(True)
        return [n for n, p in self.named_parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().cpu().clone() for n, p in self.named_parameters() if p.requires_grad}

    def save(self, folder: str | Path, *, save_llm: bool = True) -> Path:
        """``save_pretrained`` of the model and processor (what ``git-video:FOLDER`` loads) + ``git_baseline.json``."""
        import dataclasses

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.captioner.save_pretrained(str(folder))
        self.processor.save_pretrained(str(folder))
        (folder / "git_baseline.json").write_text(json.dumps(
            {"format": FORMAT, "model": dataclasses.asdict(self.cfg),
             "caption_with": f"connote vmc caption --model git-video:{folder}"}, indent=2) + "\n")
        return folder
