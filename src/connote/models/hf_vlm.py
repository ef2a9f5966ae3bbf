"""Chat VLMs (LLaVA, LLaVA-NeXT, Qwen-VL, Idefics families) as matchers.

The model is asked whether the caption matches the image; p(match) is the softmax over the
logits of the "Yes" and "No" answer tokens at the first answer position. Unlike the paper,
which could only count the generated answers, this gives generative models a probability,
so they get Pearson correlations with human votes too.

Images for Yes/No scoring become pixels as the matching engine's do (``preprocess``): ``device`` makes them in
batches on the model's device with the model's own image-processor config (:mod:`connote.models.pixels`), each
distinct image of a batch once, while the next batch is prepared on a thread; ``hf`` calls the model's processor.
``auto`` takes ``device`` where the processor is one the device path reproduces — checked at load on a probe
photo, pixels and token ids (LLaVA-1.5's CLIP processor is; LLaVA-NeXT's tiles, Qwen-VL's patches are not) —
else ``hf``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
from collections.abc import Sequence
from typing import Any

from PIL import Image

from connote.core.registry import require
from connote.models.decoding import Decoding
from connote.models.engine import PREPROCESS, prefetch, resolve_device, resolve_dtype
from connote.models.hub_identity import weights_identity
from connote.models.indices import device_index, upload
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
                 batch_size: int | str = 8, logits: str = "fp32", preprocess: str = "auto",
                 preprocess_workers: int | str = 4) -> None:
        if not weights:
            raise ValueError("hf-vlm-yesno needs weights: e.g. llava-hf/llava-v1.6-mistral-7b-hf or a local dir")
        if preprocess not in PREPROCESS:
            raise ValueError(f"preprocess must be one of {', '.join(PREPROCESS)}, got {preprocess!r}")
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
        self.preprocess_workers = max(1, int(preprocess_workers))
        self._pixel_spec, why = self._device_spec()
        self._auto_preprocess = "hf" if self._pixel_spec is None else "device"
        if preprocess == "device" and self._pixel_spec is None:
            raise ValueError(f"preprocess=device: the processor of {weights} is not one the device path reproduces "
                             f"({why}); use preprocess=hf (or auto)")
        self.preprocess = self._auto_preprocess if preprocess == "auto" else preprocess

    @property
    def takes_encoded_images(self) -> bool:
        """Whether :meth:`match_probability` takes an image as a JPEG's encoded bytes: on the device path, as
        :attr:`connote.models.engine.TensorMatcher.takes_encoded_images`."""
        return self.preprocess == "device" and str(self.device).startswith("cuda")

    def _device_spec(self) -> tuple[Any, str]:
        """The pixel spec of the model's image processor where ``preprocess=device`` gives the processor's inputs
        (:func:`~connote.models.pixels.checked_spec` on the pixels; the same token ids from the image token
        expanded here as the processor expands it), else ``(None, why)``."""
        from connote.models.pixels import checked_spec, probe_photo

        image_processor = getattr(self.processor, "image_processor", None)
        token = getattr(self.processor, "image_token", None)
        if image_processor is None or not isinstance(token, str):
            return None, "it has no image processor and image token"
        if importlib.util.find_spec("torchvision") is None:
            return None, "torchvision is not installed (pip install 'connote[hf]')"
        try:  # a processor that fails on the probe (one that wants videos, or has no chat template) keeps hf
            spec, why = checked_spec(image_processor)
            if spec is None:
                return None, why
            text = self._texts(["a probe"])
            ref = self.processor(images=[probe_photo()], text=text, padding=True, return_tensors="pt")
            image_token_id = self.processor.tokenizer.convert_tokens_to_ids(token)
            self._image_tokens = int((ref["input_ids"] == image_token_id).sum())
            mine = self._tokens(text)
        except Exception as exc:  # noqa: BLE001 - only decides between the two paths; hf is the processor's own
            return None, f"the processor failed on a probe photo ({type(exc).__name__}: {str(exc)[:200]})"
        if set(ref) != {"input_ids", "attention_mask", "pixel_values"} or not all(
                self.torch.equal(mine[k], ref[k]) for k in ("input_ids", "attention_mask")):
            return None, f"its inputs ({', '.join(sorted(ref))}) are not pixels and the image token repeated"
        return spec, ""

    def _tokens(self, texts: Sequence[str]) -> Any:
        """The processor's token ids for ``texts`` with one image each, without its image processor: the image
        token repeated as many times as the model reads image features (the number the processor gave at load)."""
        token = self.processor.image_token
        return self.processor.tokenizer([t.replace(token, token * self._image_tokens) for t in texts],
                                        padding=True, return_tensors="pt")

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
        d = {"backend": self.backend, **weights_identity(self.weights, self.revision, self.model),
             "dtype": str(self.dtype).replace("torch.", ""), "prompt_version": MATCH_PROMPT_VERSION,
             "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
             "probability": "softmax over Yes/No answer-token logits", **self.decoding.describe()}
        if self.preprocess != self._auto_preprocess:  # what auto chose is left out: earlier runs resume
            d["preprocess"] = self.preprocess
        return d

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

    def inputs(self, images: Sequence[Any], captions: Sequence[str]) -> dict[str, Any]:
        """The model's inputs for aligned ``images`` and ``captions`` on its device: through the model's
        processor (``preprocess=hf``), or the pixels made on the device (each distinct image object once) and the
        token ids by :meth:`_tokens` (``device``)."""
        torch = self.torch
        texts = self._texts(captions)
        if self.preprocess == "hf":
            inputs = self.processor(images=list(images), text=texts, padding=True, return_tensors="pt").to(self.device)
            if "pixel_values" in inputs and self.dtype != torch.float32:
                inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
            return dict(inputs)
        from connote.models.pixels import pixel_batch

        slot: dict[int, int] = {}  # a batch's pairs name an image by the same object
        distinct: list[Any] = []
        for im in images:
            if id(im) not in slot:
                slot[id(im)] = len(distinct)
                distinct.append(im)
        pixels = pixel_batch(distinct, self._pixel_spec, self.device, self.dtype, workers=self.preprocess_workers)
        if len(distinct) < len(images):
            pixels = pixels.index_select(0, device_index([slot[id(im)] for im in images], pixels.device))
        tokens = self._tokens(texts)
        return {"input_ids": upload(tokens["input_ids"], self.device),
                "attention_mask": upload(tokens["attention_mask"], self.device), "pixel_values": pixels}

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        """p(match) per pair, ``batch_size`` pairs per forward; the next batch's inputs are prepared on a thread
        while one runs, and the scores come back from the device once per call."""
        if not pairs:
            return []
        torch = self.torch
        yes_ids, no_ids = self.yes_ids, self.no_ids  # before the thread starts: one tokenizer user at a time
        batches = [pairs[s:s + self.batch_size] for s in range(0, len(pairs), self.batch_size)]
        keep = {"logits_to_keep": 1} if self._keeps_logits else {}  # the answer position's logits only

        def prepare(batch: Sequence[tuple[int, int]]) -> dict[str, Any]:
            with torch.inference_mode():
                return self.inputs([images[i] for i, _ in batch], [captions[c] for _, c in batch])

        scores = []
        for _, inputs in prefetch(batches, prepare):
            with torch.inference_mode():
                logits = self.model(**inputs, **keep).logits[:, -1, :].float()
            yes = torch.logsumexp(logits[:, yes_ids], dim=-1)
            no = torch.logsumexp(logits[:, no_ids], dim=-1)
            scores.append(torch.sigmoid(yes - no))
        return [float(p) for p in torch.cat(scores).cpu().tolist()]


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
