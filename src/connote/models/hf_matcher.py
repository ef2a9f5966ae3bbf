"""Common loading of the Hugging Face image-text matching backends (:class:`HFMatcher`).

A backend (``hf_blip``, ``hf_blip2``, ``hf_flava``, ``hf_clip``) loads with ``from_pretrained`` from a hub id or a
local directory and plugs its architecture into :class:`~connote.models.engine.TensorMatcher`'s hooks: the
vision tower runs once per image, and only the cross-modal part runs per pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.registry import require
from connote.models.engine import TensorMatcher
from connote.models.hub_identity import weights_identity


class HFMatcher(TensorMatcher):
    """Common loading for the Hugging Face backends."""

    model_class = "AutoModel"
    default_weights: str | None = None

    def __init__(self, weights: str | None = None, *, revision: str | None = None,
                 max_length: int | str | None = None, **engine: Any) -> None:
        super().__init__(**engine)
        transformers = require("transformers", "hf")
        weights = weights or self.default_weights
        if not weights:
            raise ValueError(f"{self.backend} needs weights: a hub id or a local directory")
        self.weights = weights
        self.revision = revision
        cls = getattr(transformers, self.model_class)
        # loaded straight in the engine's dtype: a checkpoint saved in bf16 still runs in fp32 on CPU
        self.model = cls.from_pretrained(weights, revision=revision, dtype=self.dtype)
        self.model.to(self.device).eval()
        self.processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.image_processor = getattr(self.processor, "image_processor", None)
        self.max_length = int(max_length) if max_length else self._default_max_length()

    def _default_max_length(self) -> int:
        cfg = getattr(self.model.config, "text_config", None) or getattr(self.model.config, "qformer_config", None)
        return int(getattr(cfg, "max_position_embeddings", 512) or 512)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> HFMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(weights_identity(self.weights, self.revision, self.model))
        d["max_length"] = self.max_length
        return d

    def pixel_spec(self) -> Any:
        from connote.models.pixels import PixelSpec

        if getattr(self, "_pixel_spec", None) is None:
            self._pixel_spec = PixelSpec.from_processor(self.image_processor)
        return self._pixel_spec

    def processor_pixels(self, images: Sequence[Image.Image]) -> Any:
        pv = self.image_processor(images=list(images), return_tensors="pt")["pixel_values"]
        return pv.to(self.device, dtype=self.dtype if self.dtype != self.torch.float32 else None)

    def token_ids(self, captions: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(captions), add_special_tokens=True, truncation=True,
                             max_length=self.max_length)
        return [list(x) for x in enc["input_ids"]]

    def _ones(self, states: Any) -> Any:
        return self.torch.ones(states.shape[:-1], dtype=self.torch.long, device=states.device)

    @staticmethod
    def _p_match(logits: Any) -> Any:
        return logits.float().softmax(dim=-1)[:, 1]

    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> Any:
        """MM-SHAP masking game for one pair: this backend can be explained (``connote cv-probes explain``)."""
        from connote.models.masking import tensor_game

        return tensor_game(self, image, caption, grid=grid, compat=compat)

