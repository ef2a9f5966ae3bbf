"""BLIP's image-text matching head (``hf-blip-itm``) on the matching engine."""

from __future__ import annotations

import types
from typing import Any

from connote.models.blip_attention import (
    TEXT_ATTENTION_PARAMETERS,
    CrossSide,
    ImageSideLinear,
    leading_parameters,
    sdpa_text_attention,
    sdpa_vision_attention,
)
from connote.models.engine import ImageStates, index_states
from connote.models.grouped import RowGroups
from connote.models.hf_matcher import HFMatcher
from connote.models.indices import device_index, index_values


class BlipItmMatcher(HFMatcher):
    """BLIP ITM head: p(match) = softmax(itm_head(text_encoder(text | image)[CLS]))[1].

    The image state holds the vision tokens and, per text layer, their cross-attention keys and
    values, so captions of the same image share all image-side work (``cache_cross_attention=false``
    keeps only the vision tokens, for less memory per image). Under the default fused attention a
    scoring batch's rows are grouped by image and each cross-attention layer reads an image's keys
    and values once for all of its rows (:class:`CrossSide`), instead of a copy per row: an MM-SHAP
    masking game scores hundreds of rows against a few masked images, and at BLIP-base size those
    copies (44 MB per row) cost more than the rows' own compute.
    """

    backend = "hf-blip-itm"
    model_class = "BlipForImageTextRetrieval"
    default_weights = "Salesforce/blip-itm-base-coco"

    def __init__(self, weights: str | None = None, *, cache_cross_attention: bool | str = True,
                 attention: str = "sdpa", **kw: Any) -> None:
        if attention not in ("sdpa", "eager"):  # before loading the weights
            raise ValueError(f"attention must be sdpa or eager, got {attention!r}")
        super().__init__(weights, **kw)
        self.cache_cross_attention = str(cache_cross_attention).lower() not in ("false", "0", "no")
        self.attention = attention
        if attention == "sdpa":
            # transformers' BLIP has only eager attention; the fused kernel computes the same softmax
            # attention without materialising its score matrices (p(match) agrees to ~1e-7)
            for module in self.model.modules():
                kind = type(module).__name__
                if kind == "BlipAttention" and leading_parameters(module, 1) == ["hidden_states"]:
                    module.forward = types.MethodType(sdpa_vision_attention, module)
                elif kind == "BlipTextSelfAttention" and leading_parameters(module, 4) == TEXT_ATTENTION_PARAMETERS:
                    module.forward = types.MethodType(sdpa_text_attention, module)
        self._projections: list[ImageSideLinear] = []
        self._sides: list[CrossSide] = []
        width = self.model.config.vision_config.hidden_size
        offset = width
        for layer in self.model.text_encoder.encoder.layer:
            cross = getattr(layer, "crossattention", None)
            if cross is None:
                continue
            if self.cache_cross_attention:
                for name in ("key", "value"):
                    wrapped = ImageSideLinear(getattr(cross.self, name))
                    cross.self.__dict__[name] = wrapped  # shadows the submodule for calls only
                    self._projections.append(wrapped)
            self._sides.append(CrossSide(cross.self, width, offset if self.cache_cross_attention else None))
            offset += 2 * cross.self.all_head_size
        if not all(getattr(side.attention.forward, "__func__", None) is sdpa_text_attention for side in self._sides):
            self._sides = []  # eager attention (or a transformers whose forward was not taken over): rows gathered
        for side in self._sides:
            side.attention.__dict__["_connote_side"] = side

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        if self.attention != "sdpa":  # the default is left out, so runs made before it stay resumable
            d["attention"] = self.attention
        return d

    def encode_images(self, pixel_values: Any) -> Any:
        return self.expand_states(self.model.vision_model(pixel_values=pixel_values).last_hidden_state)

    def compact_state(self, state: Any) -> Any | None:
        """The vision tokens alone (a copy: 1/25 of a BLIP-base state), when the state caches keys and values."""
        if not self._projections:
            return None
        return state[..., :self.model.config.vision_config.hidden_size].clone()

    def expand_states(self, compact: Any) -> Any:
        """Image states from vision tokens: the tokens and every cross-attention layer's keys and values."""
        if not self._projections:
            return compact
        return self.torch.cat([compact] + [p.linear(compact) for p in self._projections], dim=-1)

    def score_bytes_per_pair(self) -> int:
        """A pair's vision tokens plus one layer's keys and values (layers are gathered one at a time)."""
        if not self._projections:
            return super().score_bytes_per_pair()
        width = self.model.config.vision_config.hidden_size
        total = width + sum(p.linear.out_features for p in self._projections)
        per_layer = width + 2 * self._projections[0].linear.out_features
        return max(1, self.image_state_bytes() * per_layer // total)

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        rows = device_index(range(image_states.shape[0]), image_states.device)
        return self.score_rows(image_states, rows, input_ids, attention_mask, text_states)

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any,
                   text_states: Any) -> Any:
        if self._sides and len(rows):
            return self._score_grouped(image_states, RowGroups(index_values(rows), input_ids.device), input_ids,
                                       attention_mask)
        # eager attention (the parity option): transformers' own cross-attention, on rows gathered per layer
        if isinstance(image_states, ImageStates):
            image_states = index_states(image_states, rows)
            rows = device_index(range(image_states.shape[0]), image_states.device)
        width = self.model.config.vision_config.hidden_size
        vision = image_states[..., :width].index_select(0, rows)
        offset = width
        for p in self._projections:
            p.source, p.states, p.rows, p.offset = vision, image_states, rows, offset
            offset += p.linear.out_features
        try:
            out = self.model.text_encoder(input_ids=input_ids, attention_mask=attention_mask,
                                          encoder_hidden_states=vision,
                                          encoder_attention_mask=self._ones(vision))
        finally:
            for p in self._projections:
                p.source = p.states = p.rows = None
        return self._p_match(self.model.itm_head(out.last_hidden_state[:, 0, :]))

    def _score_grouped(self, image_states: Any, groups: RowGroups, input_ids: Any, attention_mask: Any) -> Any:
        """``score_rows`` with the rows sorted by image and each cross-attention layer reading an image's
        keys and values once for all of its rows (:class:`CrossSide`)."""
        width = self.model.config.vision_config.hidden_size
        first = image_states[0] if isinstance(image_states, ImageStates) else image_states[:1]
        # the text model reads only the shape of the image tokens (a broadcast view); the cross-attention
        # layers read their images' keys and values through the groups
        vision = first[..., :width].expand(len(groups.order), -1, -1)
        for side in self._sides:
            side.groups, side.states = groups, image_states
        try:
            out = self.model.text_encoder(input_ids=input_ids.index_select(0, groups.perm),
                                          attention_mask=attention_mask.index_select(0, groups.perm),
                                          encoder_hidden_states=vision, encoder_attention_mask=self._ones(vision))
        finally:
            for side in self._sides:
                side.groups = side.states = None
        return groups.unpermute(self._p_match(self.model.itm_head(out.last_hidden_state[:, 0, :])))
