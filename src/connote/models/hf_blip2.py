"""BLIP-2's Q-Former image-text matching head (``hf-blip2-itm``) on the matching engine."""

from __future__ import annotations

from typing import Any

from connote.models.hf_matcher import HFMatcher


class Blip2ItmMatcher(HFMatcher):
    """BLIP-2 Q-Former ITM head: queries + text attend to the image; logits averaged over queries."""

    backend = "hf-blip2-itm"
    model_class = "Blip2ForImageTextRetrieval"
    default_weights = "Salesforce/blip2-itm-vit-g-coco"

    def encode_images(self, pixel_values: Any) -> Any:
        return self.model.vision_model(pixel_values=pixel_values)[0]

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        m = self.model
        queries = m.query_tokens.expand(image_states.shape[0], -1, -1)
        n_q = queries.shape[1]
        embeds = m.embeddings(input_ids=input_ids, query_embeds=queries)
        mask = self.torch.cat([self._ones(queries), attention_mask], dim=1)
        out = m.qformer(query_embeds=embeds, query_length=n_q, attention_mask=mask,
                        encoder_hidden_states=image_states,
                        encoder_attention_mask=self._ones(image_states), return_dict=True)
        hidden = out.last_hidden_state[:, :n_q, :].to(m.itm_head.weight.dtype)
        return self._p_match(m.itm_head(hidden).mean(dim=1))
