"""p(match) as a user's own loop computes it: a freshly loaded, unpatched transformers model and its processor,
one image-caption pair at a time (the reference the engine's batched, grouped and fused paths are held to)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Per backend: the transformers class and the ITM logits of one processed pair.
HEADS = {
    "hf-blip-itm": ("BlipForImageTextRetrieval", lambda model, inputs: model(**inputs).itm_score),
    "hf-blip2-itm": ("Blip2ForImageTextRetrieval",
                     lambda model, inputs: model(**inputs, use_image_text_matching_head=True).logits_per_image),
    "hf-flava-itm": ("FlavaForPreTraining",
                     lambda model, inputs: model.itm_head(model.flava(**inputs).multimodal_embeddings)),
}


def transformers_p_match(backend: str, folder: Path, images: list[Any], captions: list[str],
                         pairs: list[tuple[int, int]]) -> list[float]:
    """p(match) per ``(image, caption)`` pair from ``folder``'s model loaded anew, one pair at a time."""
    import torch
    import transformers

    cls, logits = HEADS[backend]
    model = getattr(transformers, cls).from_pretrained(folder).eval()
    processor = transformers.AutoProcessor.from_pretrained(folder)
    out = []
    with torch.no_grad():
        for i, c in pairs:
            inputs = processor(images=images[i], text=captions[c], return_tensors="pt")
            out.append(logits(model, inputs).softmax(-1)[0, 1].item())
    return out
