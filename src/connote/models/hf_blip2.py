"""BLIP-2's Q-Former image-text matching head (``hf-blip2-itm``) on the matching engine."""

from __future__ import annotations

import types
from typing import Any

from connote.models.blip_attention import (
    TEXT_ATTENTION_PARAMETERS,
    CrossSide,
    grouped_cross_attention,
    leading_parameters,
)
from connote.models.grouped import RowGroups
from connote.models.hf_matcher import HFMatcher
from connote.models.indices import index_values
from connote.models.memory import layer_bytes

#: Caption tokens a pair is planned for, beside the query tokens (a probe caption has 10-20).
PLAN_CAPTION_TOKENS = 32


class Blip2ItmMatcher(HFMatcher):
    """BLIP-2 Q-Former ITM head: queries + text attend to the image; logits averaged over queries.

    The image state is the vision tower's tokens (257 x 1,408 at ViT-g/14). Under ``attention=sdpa`` (the
    default) a scoring batch's rows are grouped by image and each of the Q-Former's cross-attention layers
    projects an image's keys and values once for all of its rows and attends to them in batched fused-attention
    calls (:class:`~connote.models.blip_attention.CrossSide`), instead of a copy of the state per row and the
    keys and values projected again per row. ``attention=eager`` keeps transformers' own Q-Former on a state
    gathered per row (the parity option, as BLIP's).
    """

    backend = "hf-blip2-itm"
    model_class = "Blip2ForImageTextRetrieval"
    default_weights = "Salesforce/blip2-itm-vit-g-coco"

    def __init__(self, weights: str | None = None, *, attention: str = "sdpa", **kw: Any) -> None:
        if attention not in ("sdpa", "eager"):  # before loading the weights
            raise ValueError(f"attention must be sdpa or eager, got {attention!r}")
        super().__init__(weights, **kw)
        self.attention = attention
        self._sides: list[CrossSide] = []
        width = self.model.config.vision_config.hidden_size
        for layer in self.model.qformer.encoder.layer:
            cross = getattr(layer, "crossattention", None)
            if cross is not None:
                self._sides.append(CrossSide(cross.attention, width, None))
        if attention != "sdpa" or any(leading_parameters(side.attention, 4) != TEXT_ATTENTION_PARAMETERS
                                      for side in self._sides):
            self._sides = []  # eager, or a transformers whose forward differs: transformers' code on gathered rows
        for side in self._sides:
            side.attention.__dict__["_connote_side"] = side
            side.attention.forward = types.MethodType(grouped_cross_attention, side.attention)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        if self.attention != "sdpa":  # the default is left out, so runs made before it stay resumable
            d["attention"] = self.attention
        return d

    def encode_images(self, pixel_values: Any) -> Any:
        return self.model.vision_model(pixel_values=pixel_values)[0]

    def score_bytes_per_pair(self) -> int:
        """Grouped rows: a pair's Q-Former layer on its query and caption tokens, plus, for a row whose image has
        no other row in the batch, one layer's keys and values of that image and its tokens in the Q-Former's
        dtype; eager: the gathered state row and those keys and values, per row."""
        q = self.model.qformer
        cfg, elem = q.config, q.layernorm.weight.element_size()
        tokens = self.model.config.num_query_tokens + PLAN_CAPTION_TOKENS
        vision = self.model.config.vision_config
        image_tokens = (int(vision.image_size) // int(vision.patch_size)) ** 2 + 1
        image = image_tokens * (int(vision.hidden_size) + 2 * int(cfg.hidden_size)) * elem
        extra = 0 if self._sides else self.image_state_bytes()
        return layer_bytes(cfg, tokens, elem, eager=False) + image + extra

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        """p(match) of aligned rows (one state per row): transformers' Q-Former as it runs."""
        return self._itm(image_states, input_ids, attention_mask, self._ones(image_states))

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any,
                   text_states: Any) -> Any:
        """Rows sorted by image; each cross-attention layer reads an image's keys and values once for all of its
        rows (no state gathered per row). Eager: the engine's gather and :meth:`score`."""
        if not self._sides or not len(rows):
            return super().score_rows(image_states, rows, input_ids, attention_mask, text_states)
        groups = RowGroups(index_values(rows), input_ids.device)
        first = image_states[0] if isinstance(image_states, list) else image_states[:1]
        # the Q-Former reads only that image tokens are given and their dtype (its own, so it casts nothing):
        # a zero-stride stand-in; the cross-attention layers read the images through the groups
        stand_in = first.new_zeros((), dtype=self.model.qformer.layernorm.weight.dtype)
        for side in self._sides:
            side.groups, side.states = groups, image_states
        try:
            p = self._itm(stand_in.expand(len(groups.order), *first.shape[1:]),
                          input_ids.index_select(0, groups.perm), attention_mask.index_select(0, groups.perm), None)
        finally:
            for side in self._sides:
                side.groups = side.states = None
        return groups.unpermute(p)

    def _itm(self, image_tokens: Any, input_ids: Any, attention_mask: Any, image_mask: Any) -> Any:
        m = self.model
        queries = m.query_tokens.expand(image_tokens.shape[0], -1, -1)
        n_q = queries.shape[1]
        embeds = m.embeddings(input_ids=input_ids, query_embeds=queries)
        mask = self.torch.cat([self._ones(queries), attention_mask], dim=1)
        out = m.qformer(query_embeds=embeds, query_length=n_q, attention_mask=mask,
                        encoder_hidden_states=image_tokens, encoder_attention_mask=image_mask, return_dict=True)
        hidden = out.last_hidden_state[:, :n_q, :].to(m.itm_head.weight.dtype)
        return self._p_match(m.itm_head(hidden).mean(dim=1))
