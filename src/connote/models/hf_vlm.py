"""Chat VLMs (LLaVA, LLaVA-NeXT, Qwen-VL, Idefics families) as matchers.

The model is asked whether the caption matches the image; p(match) is the softmax over the
logits of the "Yes" and "No" answer tokens at the first answer position. Unlike the paper,
which could only count the generated answers, this gives generative models a probability,
so they get Pearson correlations with human votes too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.registry import require
from connote.models.decoding import Decoding
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.hf_itm import weights_identity
from connote.models.prompts import MATCH_PROMPT, MATCH_PROMPT_VERSION, match_prompt
from connote.models.protocols import greedy_batches


def answer_token_ids(tokenizer: Any, word: str) -> list[int]:
    """Single-token encodings of a word's variants ("Yes", " Yes", "yes", ...)."""
    ids: set[int] = set()
    unk = getattr(tokenizer, "unk_token_id", None)
    for variant in (word, word.capitalize(), word.upper()):
        for text in (variant, " " + variant):
            enc = tokenizer.encode(text, add_special_tokens=False)
            if len(enc) == 1 and enc[0] != unk:
                ids.add(int(enc[0]))
    if not ids:
        raise ValueError(f"the tokenizer has no single token for {word!r}; cannot read a Yes/No answer")
    return sorted(ids)


class YesNoVlmMatcher:
    """p(match) = softmax(logsumexp(logits[yes ids]), logsumexp(logits[no ids]))[0]."""

    backend = "hf-vlm-yesno"
    #: decoding settings of a subclass that generates (ChatVlm sets its spec's before this class's __init__)
    _cache, _compile = "dynamic", "false"

    def __init__(self, weights: str | None = None, *, revision: str | None = None,
                 prompt: str = MATCH_PROMPT, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = 8, logits: str = "fp32") -> None:
        if not weights:
            raise ValueError("hf-vlm-yesno needs weights: e.g. llava-hf/llava-v1.6-mistral-7b-hf or a local dir")
        self.decoding = Decoding(cache=self._cache, compile=self._compile, logits=logits)  # checked before loading
        self.torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.weights, self.revision, self.prompt = weights, revision, prompt
        self.batch_size = int(batch_size)
        self.model = transformers.AutoModelForImageTextToText.from_pretrained(
            weights, revision=revision, dtype=self.dtype).to(self.device).eval()
        self.decoding.bind(self.model, self.device, self.dtype)  # connote.models.decoding: cache, compile, logits
        self._keeps_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        self.processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)
        tok = self.processor.tokenizer
        tok.padding_side = "left"  # the answer position is then the last column for every row
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token

    # The answer tokens are looked up when p(match) is first asked for, so a model whose vocabulary has
    # no single "Yes"/"No" token can still generate text.
    @property
    def yes_ids(self) -> list[int]:
        return answer_token_ids(self.processor.tokenizer, "yes")

    @property
    def no_ids(self) -> list[int]:
        return answer_token_ids(self.processor.tokenizer, "no")

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> YesNoVlmMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, **weights_identity(self.weights, self.revision, self.model),
                "dtype": str(self.dtype).replace("torch.", ""), "prompt_version": MATCH_PROMPT_VERSION,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "probability": "softmax over Yes/No answer-token logits", **self.decoding.describe()}

    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> Any:
        """MM-SHAP masking game for one pair (words and mean-colour patches): this backend can be explained."""
        from connote.models.masking import vlm_game

        return vlm_game(self, image, caption, grid=grid, compat=compat)

    def _texts(self, captions: Sequence[str]) -> list[str]:
        texts = []
        for caption in captions:
            conversation = [{"role": "user", "content": [
                {"type": "image"}, {"type": "text", "text": match_prompt(caption, self.prompt)}]}]
            texts.append(self.processor.apply_chat_template(conversation, add_generation_prompt=True,
                                                            tokenize=False))
        return texts

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        torch = self.torch
        out: list[float] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            inputs = self.processor(images=[images[i] for i, _ in batch],
                                    text=self._texts([captions[c] for _, c in batch]),
                                    padding=True, return_tensors="pt").to(self.device)
            if "pixel_values" in inputs and self.dtype != torch.float32:
                inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
            keep = {"logits_to_keep": 1} if self._keeps_logits else {}  # the answer position's logits only
            with torch.inference_mode():
                logits = self.model(**inputs, **keep).logits[:, -1, :].float()
            yes = torch.logsumexp(logits[:, self.yes_ids], dim=-1)
            no = torch.logsumexp(logits[:, self.no_ids], dim=-1)
            out.extend(torch.sigmoid(yes - no).cpu().tolist())
        return out


class ChatVlm(YesNoVlmMatcher):
    """A Hugging Face chat VLM, written once for every task: asked Yes/No for CV-Probes (``match``), and
    asked for text about one or many images or a video's frames (``generate``: stories, metaphor captions).

    For generation, the images go into one user turn as that many images (``frames_as=images``: any
    multi-image chat VLM — LLaVA, LLaVA-OneVision, Idefics, Qwen-VL) or, with ``frames_as=video``, as one
    video (``videos=[frames]``: Video-LLaVA, LLaVA-NeXT-Video, Qwen2-VL; transformers' video processors
    need torchvision). Decoding is greedy. ``generation_prompt`` overrides the task's prompt. Requests
    are generated ``batch_size`` at a time, left-padded. ``cache=auto`` (the default) decodes with
    transformers' static KV cache and a compiled step (CUDA graphs) on CUDA when the model supports it, with
    the dynamic cache elsewhere; ``cache=static|dynamic`` and ``compile=true|false`` choose
    (:mod:`connote.models.decoding`). ``logits=fp32`` (the default) computes the LM head in float32.
    """

    backend = "hf-vlm"

    def __init__(self, weights: str | None = None, *, frames: int | str = 8, frames_as: str = "images",
                 max_new_tokens: int | str | None = None, generation_prompt: str | None = None,
                 cache: str = "auto", compile: str = "auto", **options: Any) -> None:  # noqa: A002 - spec option
        if frames_as not in ("video", "images"):
            raise ValueError(f"frames_as must be video or images, not {frames_as!r}")
        self._cache, self._compile = cache, compile  # the base class makes (and checks) the decoding settings
        super().__init__(weights, **options)
        self.frames, self.frames_as = int(frames), frames_as
        self.max_new_tokens = int(max_new_tokens) if max_new_tokens else None
        self.generation_prompt = generation_prompt

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> ChatVlm:
        return cls(weights, **options)

    @staticmethod
    def spec_needs(weights: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """The frames it samples per clip: ``frames`` of them, uniformly."""
        frames = int(options["frames"])
        return {"frames": ("uniform", frames, frames)}

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return self.spec_needs(self.weights, {"frames": self.frames})["frames"]

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update({"frames": self.frames, "frames_as": self.frames_as, "max_new_tokens": self.max_new_tokens,
                  "generation_prompt_sha": hashlib.sha256(self.generation_prompt.encode()).hexdigest()[:12]
                  if self.generation_prompt else None, "decoding": "greedy"})
        return d

    def _conversation(self, req: Any) -> tuple[str, list[Image.Image]]:
        frames = [im.convert("RGB") for im in req.images]
        if not frames:
            raise ValueError("a chat VLM needs at least one image")
        prompt = self.generation_prompt or req.prompt or ""
        visual = [{"type": "video"}] if self.frames_as == "video" else [{"type": "image"}] * len(frames)
        messages = [{"role": "user", "content": [*visual, {"type": "text", "text": prompt}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False), frames

    def _generate_batch(self, convs: Sequence[tuple[str, list[Image.Image]]], max_new_tokens: int,
                        sampling: dict[str, Any]) -> list[str]:
        """One ``generate`` call for several conversations, left-padded to the longest prompt."""
        import numpy as np

        from connote.runs.speed import hf_generate

        torch = self.torch
        texts = [text for text, _ in convs]
        if self.frames_as == "video":
            inputs = self.processor(text=texts, videos=[np.stack([np.asarray(im) for im in f]) for _, f in convs],
                                    padding=True, return_tensors="pt")
        else:
            inputs = self.processor(text=texts, images=[f for _, f in convs], padding=True, return_tensors="pt")
        inputs = inputs.to(self.device)
        for k, v in inputs.items():
            if torch.is_floating_point(v) and self.dtype != torch.float32:
                inputs[k] = v.to(self.dtype)
        extra = self.decoding.generate_options()
        with torch.inference_mode():
            ids = hf_generate(self.model, inputs["input_ids"].shape[1], **inputs, max_new_tokens=max_new_tokens,
                              **sampling, **extra)
        new = ids[:, inputs["input_ids"].shape[1]:]
        return [t.strip() for t in self.processor.batch_decode(new, skip_special_tokens=True)]

    def generate(self, requests: Sequence[Any]) -> list[str]:
        """Greedy requests go in batches of ``batch_size``: sorted by prompt length (images, tokens), so a
        batch pads little, and split where ``max_new_tokens`` changes. The images of a request are encoded
        once, in the prefill; the decoding steps reuse the KV cache. Sampled requests go one at a time,
        each seeded, so a sample does not depend on its batch."""
        if self.max_new_tokens:  # the spec's limit overrides the task's
            requests = [dataclasses.replace(r, max_new_tokens=self.max_new_tokens) for r in requests]
        out: list[Any] = [None] * len(requests)
        convs = [self._conversation(req) for req in requests]
        for i, req in enumerate(requests):
            if req.temperature > 0:
                out[i] = self._generate_batch([convs[i]], req.max_new_tokens, req.sampling())[0]
        tok = self.processor.tokenizer

        def length(i: int) -> tuple[Any, ...]:
            text, frames = convs[i]
            return len(frames), tuple(im.size for im in frames), len(tok(text, add_special_tokens=False).input_ids)

        for chunk in greedy_batches(requests, length, self.batch_size):
            texts = self._generate_batch([convs[i] for i in chunk], requests[chunk[0]].max_new_tokens,
                                         {"do_sample": False})
            for i, text in zip(chunk, texts):
                out[i] = text
        return out
