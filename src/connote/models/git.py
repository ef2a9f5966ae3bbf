"""GIT captioning (``GitForCausalLM`` + its processor) from a hub id or a local folder.

A request's images are a video's sampled frames (GIT-VaTeX takes 6 frames as one video) or one photo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.core.errors import InputError
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.hub_identity import weights_identity
from connote.models.protocols import GenerationRequest


def _frames(n: Any) -> tuple[str, int, int]:
    """GIT-VaTeX's six frames are two from each third of the clip; other counts are spread uniformly."""
    n = int(n or 1)
    return ("segments", 6, 6) if n == 6 else ("uniform", n, n)


class GitVideoCaptioner:
    """GIT video captioning (``GitForCausalLM`` + its processor) from a hub id or local folder."""

    def __init__(self, weights: str, *, revision: str | None = None, device: str | None = None,
                 dtype: str | None = None, num_beams: int | str = 1) -> None:
        from transformers import AutoProcessor, GitForCausalLM

        if not weights:
            raise InputError("git-video needs weights: a hub id (microsoft/git-large-vatex) or a folder")
        self.weights = weights
        self.device = resolve_device(device)
        self.revision = revision
        self.model = GitForCausalLM.from_pretrained(weights, revision=revision,
                                                    dtype=resolve_dtype(dtype, self.device)).to(self.device)
        self.model.eval()
        self.processor = AutoProcessor.from_pretrained(weights, revision=revision)
        self.frames = int(getattr(self.model.config, "num_image_with_embedding", None) or 1)
        self.num_beams = int(num_beams)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> GitVideoCaptioner:
        return cls(weights or "", **options)

    @staticmethod
    def spec_needs(weights: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """The frames its weights take as one video (``num_image_with_embedding`` of its config.json)."""
        from connote.models.hub import config_json

        return {"frames": _frames(config_json(weights or "", options.get("revision")).get("num_image_with_embedding"))}

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return _frames(self.frames)

    def describe(self) -> dict[str, Any]:
        return {"backend": "git-video", **weights_identity(self.weights, self.revision, self.model),
                "frames": self.frames, "dtype": str(self.model.dtype), "num_beams": self.num_beams}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        import torch

        from connote.runs.speed import hf_generate

        out = []
        for req in requests:
            frames = list(req.images)[: self.frames]
            pv = self.processor(images=frames, return_tensors="pt").pixel_values.to(self.device, self.model.dtype)
            pv = pv.unsqueeze(0) if self.frames > 1 else pv[:1]
            with torch.inference_mode():
                # GIT's output starts with the one [CLS] token it was started from
                ids = hf_generate(self.model, 1, pixel_values=pv, max_new_tokens=req.max_new_tokens,
                                  num_beams=self.num_beams, **req.sampling())
            out.append(self.processor.batch_decode(ids, skip_special_tokens=True)[0].strip())
        return out


