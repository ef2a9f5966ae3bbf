"""Two stages: a captioner captions each image, then a causal LM writes the text from the numbered
captions (``caption-llm:CAPTIONER?llm=LLM``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.errors import ItemError
from connote.core.registry import require
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.hub_identity import weights_identity
from connote.models.protocols import GenerationRequest

#: The default template; ``{captions}`` is replaced by the numbered captions.
CAPTION_STORY_PROMPT = ("Photo captions, in order:\n{captions}\nWrite a short story about these photos, "
                        "one sentence per photo, as if sharing the experience with friends.\nStory:")


class CaptionLlmGenerator:
    """Caption each image, then let a causal LM write the text from the numbered captions.

    The prompt is a template with ``{captions}`` (option ``prompt``); a request's own prompt is used only
    when it contains ``{captions}``.
    """

    backend = "caption-llm"
    needs_images = True

    def __init__(self, weights: str | None = None, *, llm: str | None = None, revision: str | None = None,
                 prompt: str = CAPTION_STORY_PROMPT, caption_tokens: int | str = 20,
                 max_new_tokens: int | str = 120, llm_revision: str | None = None, device: str | None = None,
                 dtype: str | None = None) -> None:
        if not weights or not llm:
            raise ValueError("caption-llm needs a captioner (weights) and an llm option: "
                             "caption-llm:CAPTIONER?llm=LLM")
        self.torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.weights, self.llm_weights, self.revision, self.prompt = weights, llm, revision, prompt
        self.caption_tokens, self.max_new_tokens = int(caption_tokens), int(max_new_tokens)
        try:
            cap = transformers.AutoModelForImageTextToText.from_pretrained(weights, revision=revision, dtype=self.dtype)
        except ValueError:  # captioners registered only as causal LMs (GIT)
            cap = transformers.AutoModelForCausalLM.from_pretrained(weights, revision=revision, dtype=self.dtype)
        self.captioner = cap.to(self.device).eval()
        self.cap_processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)
        self.llm_revision = llm_revision
        self.llm = transformers.AutoModelForCausalLM.from_pretrained(llm, revision=llm_revision,
                                                                     dtype=self.dtype).to(self.device).eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(llm, revision=llm_revision)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> CaptionLlmGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "captioner": weights_identity(self.weights, self.revision, self.captioner),
                "llm": weights_identity(self.llm_weights, self.llm_revision, self.llm),
                "dtype": str(self.dtype).replace("torch.", ""),
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "caption_tokens": self.caption_tokens, "max_new_tokens": self.max_new_tokens,
                "decoding": "greedy"}

    def captions(self, images: Sequence[Image.Image]) -> list[str]:
        inputs = self.cap_processor(images=list(images), return_tensors="pt").to(self.device)
        pv = inputs["pixel_values"].to(self.dtype)
        with self.torch.inference_mode():
            ids = self.captioner.generate(pixel_values=pv, max_new_tokens=self.caption_tokens, do_sample=False)
        return [t.strip() for t in self.cap_processor.batch_decode(ids, skip_special_tokens=True)]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        from connote.runs.speed import hf_generate

        out = []
        for r in requests:
            if not r.images:
                raise ItemError("caption-llm needs the images")
            caps = self.captions(r.images)
            template = r.prompt if r.prompt and "{captions}" in r.prompt else self.prompt
            prompt = template.format(captions="\n".join(f"{i + 1}. {c}" for i, c in enumerate(caps)))
            enc = self.tokenizer(prompt, return_tensors="pt").to(self.device)
            with self.torch.inference_mode():
                ids = hf_generate(self.llm, enc["input_ids"].shape[1], **enc, max_new_tokens=self.max_new_tokens,
                                  do_sample=False,
                                  pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
            new = ids[0, enc["input_ids"].shape[1]:]
            out.append(self.tokenizer.decode(new, skip_special_tokens=True).strip())
        return out


