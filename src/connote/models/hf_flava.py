"""FLAVA's image-text matching head (``hf-flava-itm``) on the matching engine."""

from __future__ import annotations

import types
from typing import Any

from connote.core.registry import require
from connote.models.blip_attention import leading_parameters
from connote.models.grouped import RowGroups
from connote.models.hf_matcher import HFMatcher
from connote.models.indices import device_index, index_values
from connote.models.memory import layer_bytes

#: The parameters of ``FlavaSelfAttention.forward`` that :func:`sdpa_flava_attention` takes over; a transformers
#: whose forward differs keeps its eager attention.
FLAVA_ATTENTION_PARAMETERS = ["hidden_states", "attention_mask", "output_attentions"]
#: Caption tokens a pair is planned for (a probe caption has 10-20; a longer one that does not fit is halved).
PLAN_CAPTION_TOKENS = 32


def sdpa_flava_attention(self: Any, hidden_states: Any, attention_mask: Any = None,
                         output_attentions: bool = False) -> tuple[Any, ...]:
    """FLAVA's self-attention (``FlavaSelfAttention.forward``, every layer of its image, text and multimodal
    encoders) through torch's fused attention: the same projections, scale, additive mask and softmax, without
    the (heads x tokens x tokens) scores and probabilities written out, which are most of the multimodal
    encoder's memory per pair (2 x 12 x 275^2 x 4 bytes at FLAVA-base, per layer). Attention maps asked for, or
    training, run the eager code."""
    if output_attentions or self.training:
        return type(self).forward(self, hidden_states, attention_mask, output_attentions)
    torch = require("torch", "hf")
    shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
    query, key, value = (p(hidden_states).view(shape).transpose(1, 2) for p in (self.query, self.key, self.value))
    if attention_mask is not None:
        attention_mask = attention_mask.to(dtype=query.dtype, device=query.device)
    context = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask)
    return (context.transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size),)


class FlavaItmMatcher(HFMatcher):
    """FLAVA: unimodal encoders -> multimodal encoder -> ITM head. Text is encoded once per caption.

    transformers' FLAVA has only eager attention; under ``attention=sdpa`` (the default) every self-attention
    layer runs torch's fused kernel (:func:`sdpa_flava_attention`; p(match) agrees to ~1e-7), ``eager`` keeps
    transformers' own."""

    backend = "hf-flava-itm"
    model_class = "FlavaForPreTraining"
    default_weights = "facebook/flava-full"
    caches_text = True

    def __init__(self, weights: str | None = None, *, attention: str = "sdpa", **kw: Any) -> None:
        if attention not in ("sdpa", "eager"):  # before loading the weights
            raise ValueError(f"attention must be sdpa or eager, got {attention!r}")
        super().__init__(weights, **kw)
        self.attention = attention
        if attention == "sdpa":
            for module in self.model.modules():
                if type(module).__name__ == "FlavaSelfAttention" and \
                        leading_parameters(module, 3) == FLAVA_ATTENTION_PARAMETERS:
                    module.forward = types.MethodType(sdpa_flava_attention, module)

    def score_bytes_per_pair(self) -> int:
        """A pair's multimodal-encoder input row and one layer's activations on it (the image's tokens, the
        multimodal [CLS] and :data:`PLAN_CAPTION_TOKENS`): what a scoring batch holds per pair, far more than the
        image state (measured at FLAVA-base width: 9.1 MiB per pair with sdpa, 10.3 eager, against a 0.6 MiB
        state; ``benchmarks/flava_attention.py``)."""
        cfg = self.model.config
        image = cfg.image_config
        tokens = (int(image.image_size) // int(image.patch_size)) ** 2 + 2 + PLAN_CAPTION_TOKENS
        mm = cfg.multimodal_config
        elem = self.torch.empty(0, dtype=self.dtype).element_size()
        return tokens * int(mm.hidden_size) * elem + layer_bytes(mm, tokens, elem, eager=self.attention == "eager")

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        if self.attention != "sdpa":  # the default is left out, so runs made before it stay resumable
            d["attention"] = self.attention
        return d

    def _default_max_length(self) -> int:
        return int(self.model.config.text_config.max_position_embeddings)

    def encode_images(self, pixel_values: Any) -> Any:
        f = self.model.flava
        states = f.image_model(pixel_values=pixel_values, output_hidden_states=True).hidden_states
        return f.image_to_mm_projection(states[-1])

    def encode_texts(self, input_ids: Any, attention_mask: Any) -> Any:
        f = self.model.flava
        states = f.text_model(input_ids=input_ids, attention_mask=attention_mask,
                              output_hidden_states=True).hidden_states
        return f.text_to_mm_projection(states[-1])

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        rows = device_index(range(len(attention_mask)), attention_mask.device)
        return self.score_text_rows(image_states, rows, text_states, rows, input_ids, attention_mask)

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        texts = device_index(range(len(attention_mask)), attention_mask.device)
        return self.score_text_rows(image_states, rows, text_states, texts, input_ids, attention_mask)

    def score_text_rows(self, image_states: Any, image_rows: Any, text_states: Any, text_rows: Any,
                        input_ids: Any, attention_mask: Any) -> Any:
        """The multimodal encoder's input (image tokens, then caption tokens, per pair) written once: the rows
        sorted by image, each image's tokens copied into its rows, each row's caption tokens read into place
        (``index_select`` into the input), so neither state is first gathered into a copy per row."""
        torch = self.torch
        f = self.model.flava
        groups = RowGroups(index_values(image_rows), attention_mask.device)
        per_image = isinstance(image_states, list)  # ImageStates: one (1, tokens, width) state per image
        first = image_states[0] if per_image else image_states
        n_img, width = first.shape[1], first.shape[2]
        dtype = torch.promote_types(first.dtype, text_states.dtype)
        x = torch.empty(len(groups.order), n_img + text_states.shape[1], width, dtype=dtype, device=first.device)
        for start, end, image in groups.spans:
            x[start:end, :n_img] = image_states[image] if per_image else image_states[image:image + 1]
        texts = text_rows.index_select(0, groups.perm)
        torch.index_select(text_states.to(dtype), 0, texts, out=x[:, n_img:])
        n_img += 1 if f.multimodal_model.use_cls_token else 0
        mask = attention_mask.index_select(0, texts)
        mask = torch.cat([torch.ones(len(texts), n_img, device=mask.device, dtype=mask.dtype), mask], dim=1)
        mm = f.multimodal_model(x, attention_mask=mask, return_dict=True)
        return groups.unpermute(self._p_match(self.model.itm_head(mm.last_hidden_state)))
