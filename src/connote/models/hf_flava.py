"""FLAVA's image-text matching head (``hf-flava-itm``) on the matching engine."""

from __future__ import annotations

from typing import Any

from connote.models.grouped import RowGroups
from connote.models.hf_matcher import HFMatcher


class FlavaItmMatcher(HFMatcher):
    """FLAVA: unimodal encoders -> multimodal encoder -> ITM head. Text is encoded once per caption."""

    backend = "hf-flava-itm"
    model_class = "FlavaForPreTraining"
    default_weights = "facebook/flava-full"
    caches_text = True

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
        rows = self.torch.arange(len(attention_mask), device=attention_mask.device)
        return self.score_text_rows(image_states, rows, text_states, rows, input_ids, attention_mask)

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        texts = self.torch.arange(len(attention_mask), device=attention_mask.device)
        return self.score_text_rows(image_states, rows, text_states, texts, input_ids, attention_mask)

    def score_text_rows(self, image_states: Any, image_rows: Any, text_states: Any, text_rows: Any,
                        input_ids: Any, attention_mask: Any) -> Any:
        """The multimodal encoder's input (image tokens, then caption tokens, per pair) written once: the rows
        sorted by image, each image's tokens copied into its rows, each row's caption tokens read into place
        (``index_select`` into the input), so neither state is first gathered into a copy per row."""
        torch = self.torch
        f = self.model.flava
        groups = RowGroups(image_rows.tolist(), attention_mask.device)
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
