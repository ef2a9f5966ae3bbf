"""A trained GIT-LLaVA / GIT-LLaVA-X folder (written by ``connote vmc train``) as a generator.

The architecture and its training live in :mod:`connote.vmc.train.git_llava`; this backend only loads a
saved folder and generates captions for requests of ``clips x frames_per_clip`` frames.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.models.decoding import Decoding
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.protocols import GenerationRequest, greedy_batches

#: Greedy requests per LLM ``generate`` call (and ``connote vmc caption``'s videos per call). A decoding
#: step's Python overhead is paid once for all rows: on a CPU at small size 16 rows cost 1.6-2.5x one row's
#: step (benchmarks/generation.py). A batch the accelerator's memory cannot hold (the KV cache grows with
#: rows x (6 x 257 visual + prompt + new tokens) positions at GIT-large) is halved and retried.
DEFAULT_BATCH = 16


def _needs(c: Any) -> dict[str, Any]:
    """The frames, their sampling and the prompt a trained model's configuration ``c`` asks of a task."""
    from connote.vmc.data import METAPHOR_PROMPT

    if c.clips > 1:
        frames = ("clips", c.clips, c.frames_per_clip)
    else:
        frames = ("segments", 6, 6) if c.frames_per_clip == 6 else ("uniform", c.frames_per_clip, c.frames_per_clip)
    sampling = (getattr(c, "frame_sampling", "fixed"), int(getattr(c, "frame_seed", 0)))
    return {"frames": frames, "frame_sampling": sampling, "prompt": c.prompt or METAPHOR_PROMPT}


class GitLlavaGenerator:
    """A trained GIT-LLaVA / GIT-LLaVA-X folder (``connote vmc train`` output)."""

    backend = "git-llava"

    def __init__(self, weights: str, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = DEFAULT_BATCH, cache: str = "auto", compile: str = "auto",  # noqa: A002
                 logits: str = "fp32") -> None:
        from connote.vmc.train.git_llava import GitLlava

        if not weights:
            raise InputError("git-llava needs weights: the folder a training run wrote (…/final)")
        self.decoding = Decoding(cache=cache, compile=compile, logits=logits)  # checked before anything loads
        self.weights = str(Path(weights).resolve())
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.model = GitLlava.from_pretrained(weights, dtype=self.dtype).to(self.device)
        self.model.eval()
        self.batch_size = int(batch_size)
        # the LLM decodes from embeddings: its cache, compiled step and fp32 LM head (connote.models.decoding)
        self.decoding.bind(self.model._base_llm(), self.device, self.dtype)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> GitLlavaGenerator:
        return cls(weights or "", **options)

    @staticmethod
    def spec_needs(weights: str | None, options: dict[str, Any]) -> dict[str, Any]:
        """What the saved folder's configuration decides for a task, read from its ``git_llava.json``."""
        from connote.vmc.train.config import read_saved

        return _needs(read_saved(weights or "")[1])

    @property
    def default_prompt(self) -> str:
        """The instruction the model was trained with."""
        return str(_needs(self.model.cfg)["prompt"])

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return _needs(self.model.cfg)["frames"]

    @property
    def frame_sampling(self) -> tuple[str, int]:
        """How the model's frames are drawn at evaluation (``random`` for models trained so) and the seed."""
        return _needs(self.model.cfg)["frame_sampling"]

    @staticmethod
    def identity_sources(weights: str | None, options: dict[str, Any]) -> dict[str, str]:
        """What a build reads beyond the folder, found without loading it: the GIT captioner its
        ``git_llava.json`` names (never saved in the folder), and the LLM when the folder holds none of its own
        (an adapter's base model)."""
        from connote.core.jsonio import read_json

        meta = read_json(Path(weights or "") / "git_llava.json", what="GIT-LLaVA model file")
        model = meta.get("model") if isinstance(meta, dict) else None
        if not isinstance(model, dict) or not isinstance(model.get("captioner"), str):
            raise ValueError("git_llava.json names no captioner")
        found = {"captioner": model["captioner"]}
        if not meta.get("llm_saved") and isinstance(model.get("llm"), str):
            found["llm"] = model["llm"]
        return found

    def describe(self) -> dict[str, Any]:

        from connote.core.files import file_sha256
        from connote.models.hub_identity import weights_identity

        folder = Path(self.weights)
        digest = file_sha256(folder / "projector.safetensors")[:16]
        cfg = self.model.cfg
        llm = {sub: weights_identity(str(folder / sub), None, None)
               for sub in ("llm", "llm_adapter") if (folder / sub).is_dir()}
        if not (folder / "llm").is_dir():  # an adapter (or nothing) saved: the base LLM is read from its source
            llm["source"] = weights_identity(cfg.llm, None, getattr(self.model, "_base_llm", lambda: None)())
        return {"backend": "git-llava", **weights_identity(self.weights, None, None), "projector_sha256": digest,
                "llm": llm, "captioner": weights_identity(cfg.captioner, None, self.model.captioner),
                "model": dict(vars(cfg)), "dtype": str(self.model.projector[0].weight.dtype),
                **self.decoding.describe()}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """Greedy requests in batches of ``batch_size``, grouped by ``max_new_tokens`` and sorted by prompt
        (so a batch's rows have the same length and need no padding when the prompts agree); the frames of
        all requests go through GIT's processor in one call, and a batch's videos through GIT in one pass.
        Sampled requests go one at a time, each seeded."""
        c = self.model.cfg
        out: list[Any] = [None] * len(requests)
        videos = []
        for req in requests:
            frames = list(req.images)
            if len(frames) != c.clips * c.frames_per_clip:
                raise ValueError(f"GIT-LLaVA wants {c.clips} x {c.frames_per_clip} frames, got {len(frames)}")
            videos.append([frames[j * c.frames_per_clip:(j + 1) * c.frames_per_clip] for j in range(c.clips)])
        pvs = self.model.videos_pixel_values(videos) if videos else None
        prompts = [req.prompt or c.prompt for req in requests]
        for i, req in enumerate(requests):
            if req.temperature > 0:  # sampled: one request at a time, each with its seed
                out[i] = self.model.generate(pvs[i:i + 1], [prompts[i]], max_new_tokens=req.max_new_tokens,
                                             **req.sampling())[0]
        for chunk in greedy_batches(requests, lambda i: (len(prompts[i]), prompts[i]), self.batch_size):
            texts = self._greedy(pvs, prompts, chunk, requests[chunk[0]].max_new_tokens)
            for i, text in zip(chunk, texts):
                out[i] = text
        return out

    def _greedy(self, pvs: Any, prompts: list[str], rows: list[int], max_new_tokens: int) -> list[str]:
        """One ``generate`` call for ``rows``; if the accelerator runs out of memory, the rows in two halves
        (and ``batch_size`` halved for the calls that follow: :func:`~connote.models.memory.halve_on_oom`).
        Greedy rows do not depend on their batch."""
        from connote.models.memory import halve_on_oom

        def run(chunk: Sequence[int]) -> list[str]:
            return self.model.generate(pvs[list(chunk)], [prompts[i] for i in chunk], max_new_tokens=max_new_tokens,
                                       **self.decoding.generate_options())

        return halve_on_oom(run, rows, self._lower_batch)

    def _lower_batch(self, half: int, rows: int) -> None:
        if half < self.batch_size:
            print(f"git-llava: {rows} videos in one generate call ran out of memory; batch_size is now {half}",
                  file=sys.stderr, flush=True)
            self.batch_size = half
