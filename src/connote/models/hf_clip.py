"""CLIP (``hf-clip``): cosine similarity calibrated to p(match), on the matching engine."""

from __future__ import annotations

from typing import Any

from connote.models.hf_matcher import HFMatcher
from connote.models.indices import device_index, index_values


class ClipMatcher(HFMatcher):
    """CLIP: cosine similarity mapped to p(match) by a logistic calibration.

    ``p = sigmoid(scale * (cos - threshold))``. ``scale`` defaults to the model's learned
    ``logit_scale.exp()`` (100 for trained CLIP, the temperature CLIP's own softmax uses) and
    ``threshold`` to 0.25, roughly midway between typical matching (~0.30) and non-matching
    (~0.20) cosines of OpenAI CLIP ViT-B models. Both are options of the spec
    (``hf-clip:ID?threshold=0.22&scale=50``) and part of the fingerprint; accuracy depends on
    the threshold, correlations with human votes do not (the map is monotone).
    """

    backend = "hf-clip"
    #: Under ``--compat mmshap`` the last id (end of text) is restored too, as the public MM-SHAP CLIP script does.
    mmshap_keep_last = True
    model_class = "CLIPModel"
    default_weights = "openai/clip-vit-base-patch32"
    caches_text = True

    def __init__(self, weights: str | None = None, *, threshold: float | str = 0.25,
                 scale: float | str | None = None, **kw: Any) -> None:
        super().__init__(weights, **kw)
        self.threshold = float(threshold)
        self.scale = float(scale) if scale not in (None, "") else float(self.model.logit_scale.exp().item())

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["calibration"] = {"kind": "logistic", "threshold": self.threshold, "scale": round(self.scale, 6)}
        return d

    @staticmethod
    def _features(out: Any) -> Any:
        return out.pooler_output if hasattr(out, "pooler_output") else out

    def encode_images(self, pixel_values: Any) -> Any:
        feats = self._features(self.model.get_image_features(pixel_values=pixel_values))
        return self.torch.nn.functional.normalize(feats.float(), dim=-1)

    def encode_texts(self, input_ids: Any, attention_mask: Any) -> Any:
        feats = self._features(self.model.get_text_features(input_ids=input_ids,
                                                            attention_mask=attention_mask))
        return self.torch.nn.functional.normalize(feats.float(), dim=-1)

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        cos = (image_states.float() * text_states.float()).sum(-1)
        return self.torch.sigmoid(self.scale * (cos - self.threshold))

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        texts = device_index(range(len(rows)), rows.device)
        return self.score_text_rows(image_states, rows, text_states, texts, input_ids, attention_mask)

    def score_text_rows(self, image_states: Any, image_rows: Any, text_states: Any, text_rows: Any,
                        input_ids: Any, attention_mask: Any) -> Any:
        """The cosines of the rows' distinct images against the batch's captions, one product in float32 (autocast
        off: bf16 would round the cosines the calibration scales by ~100), read at the rows."""
        torch = self.torch
        rows = index_values(image_rows)  # the distinct images from the values (no read from the device)
        images = sorted(set(rows))
        slot = {image: k for k, image in enumerate(images)}
        inverse = device_index([slot[r] for r in rows], image_rows.device)
        if isinstance(image_states, list):  # ImageStates: one (1, dim) state per image
            vectors = torch.cat([image_states[i] for i in images])
        else:
            vectors = image_states.index_select(0, device_index(images, image_states.device))
        with torch.autocast(device_type=vectors.device.type, enabled=False):
            cos = (vectors.float() @ text_states.float().T)[inverse, text_rows]
        return torch.sigmoid(self.scale * (cos - self.threshold))
