"""FLAVA's image-text matching head (``hf-flava-itm``) on the matching engine."""

from __future__ import annotations

from typing import Any

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
        f = self.model.flava
        b, n_img, _ = image_states.shape
        n_img += 1 if f.multimodal_model.use_cls_token else 0
        mask = self.torch.cat([self.torch.ones(b, n_img, device=attention_mask.device,
                                               dtype=attention_mask.dtype), attention_mask], dim=1)
        mm = f.multimodal_model(self.torch.cat([image_states, text_states], dim=1),
                                attention_mask=mask, return_dict=True)
        return self._p_match(self.model.itm_head(mm.last_hidden_state))
