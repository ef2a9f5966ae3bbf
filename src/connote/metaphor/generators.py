"""Video metaphor caption generators (``connote.models.protocols.Generator``).

A request's ``images`` are the sampled frames of one video, in temporal order (clip after clip for
GIT-LLaVA-X). Each generator says which frames it wants with ``frame_spec`` (strategy, k,
per_clip); :func:`load_generator` builds one from a spec ``backend[:weights][?k=v]``:

=================  ==========================================================================
``git-video``      GIT video captioning (``GitForCausalLM``, e.g. microsoft/git-large-vatex):
                   a literal caption, the paper's GIT baseline before fine-tuning.
``git-llava``      A GIT-LLaVA / GIT-LLaVA-X folder written by ``connote metaphor train``.
``hf-video-chat``  Hugging Face video chat VLMs through their processors' chat templates
                   (Video-LLaVA, LLaVA-NeXT-Video, Qwen2-VL / Qwen2.5-VL; ``AutoModelForImageTextToText``).
``openai-video``   An OpenAI-compatible chat API; the sampled frames are sent as images.
``nearest``        Embedded offline default: the caption of the nearest training video by mean
                   frame embedding (EfficientNet-Lite0 + MiniLM, shipped weights). Weights: the
                   caption table; options ``videos`` (folder), ``split`` (ids file).
=================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from connote.errors import InputError
from connote.metaphor.data import METAPHOR_PROMPT
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.protocols import GenerationRequest
from connote.registry import Registry

GENERATORS: Registry[Any] = Registry("video generator")

VIDEO_PROMPT = ("Describe the metaphor in this video in one sentence of the form "
                "'<primary concept> is as <property> as <secondary concept>'.")


class GitVideoCaptioner:
    """GIT video captioning (``GitForCausalLM`` + its processor) from a hub id or local folder."""

    def __init__(self, weights: str, *, device: str | None = None, dtype: str | None = None,
                 num_beams: int | str = 1) -> None:
        from transformers import AutoProcessor, GitForCausalLM

        if not weights:
            raise InputError("git-video needs weights: a hub id (microsoft/git-large-vatex) or a folder")
        self.weights = weights
        self.device = resolve_device(device)
        self.model = GitForCausalLM.from_pretrained(weights, dtype=resolve_dtype(dtype, self.device)).to(self.device)
        self.model.eval()
        self.processor = AutoProcessor.from_pretrained(weights)
        self.frames = int(getattr(self.model.config, "num_image_with_embedding", None) or 1)
        self.num_beams = int(num_beams)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> GitVideoCaptioner:
        return cls(weights or "", **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return ("segments", 6, 6) if self.frames == 6 else ("uniform", self.frames, self.frames)

    def describe(self) -> dict[str, Any]:
        return {"backend": "git-video", "weights": self.weights, "frames": self.frames,
                "dtype": str(self.model.dtype), "num_beams": self.num_beams}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        import torch

        out = []
        for req in requests:
            frames = list(req.images)[: self.frames]
            pv = self.processor(images=frames, return_tensors="pt").pixel_values.to(self.device, self.model.dtype)
            pv = pv.unsqueeze(0) if self.frames > 1 else pv[:1]
            with torch.inference_mode():
                ids = self.model.generate(pixel_values=pv, max_new_tokens=req.max_new_tokens,
                                          num_beams=self.num_beams, do_sample=False)
            out.append(self.processor.batch_decode(ids, skip_special_tokens=True)[0].strip())
        return out


class GitLlavaGenerator:
    """A trained GIT-LLaVA / GIT-LLaVA-X folder (``connote metaphor train`` output)."""

    def __init__(self, weights: str, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = 4) -> None:
        from connote.train.git_llava import GitLlava

        if not weights:
            raise InputError("git-llava needs weights: the folder a training run wrote (…/final)")
        self.weights = str(Path(weights).resolve())
        self.device = resolve_device(device)
        self.model = GitLlava.from_pretrained(weights, dtype=resolve_dtype(dtype, self.device)).to(self.device)
        self.model.eval()
        self.batch_size = int(batch_size)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> GitLlavaGenerator:
        return cls(weights or "", **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        c = self.model.cfg
        if c.clips > 1:
            return ("clips", c.clips, c.frames_per_clip)
        return ("segments", 6, 6) if c.frames_per_clip == 6 else ("uniform", c.frames_per_clip, c.frames_per_clip)

    def describe(self) -> dict[str, Any]:
        import hashlib

        digest = hashlib.sha256((Path(self.weights) / "projector.safetensors").read_bytes()).hexdigest()[:16]
        return {"backend": "git-llava", "weights": self.weights, "projector_sha256": digest,
                "model": dict(vars(self.model.cfg)), "dtype": str(self.model.projector[0].weight.dtype)}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        import torch

        c = self.model.cfg
        out: list[str] = []
        for i in range(0, len(requests), self.batch_size):
            chunk = requests[i:i + self.batch_size]
            pvs = []
            for req in chunk:
                frames = list(req.images)
                if len(frames) != c.clips * c.frames_per_clip:
                    raise ValueError(f"GIT-LLaVA wants {c.clips} x {c.frames_per_clip} frames, got {len(frames)}")
                clips = [frames[j * c.frames_per_clip:(j + 1) * c.frames_per_clip] for j in range(c.clips)]
                pvs.append(self.model.pixel_values(clips))
            prompts = [req.prompt or c.prompt for req in chunk]
            out.extend(self.model.generate(torch.stack(pvs), prompts,
                                           max_new_tokens=max(r.max_new_tokens for r in chunk)))
        return out


class HFVideoChatGenerator:
    """Video chat VLMs through ``AutoProcessor`` chat templates and ``AutoModelForImageTextToText``.

    With ``frames_as=video`` (default) the frames go to the processor as one video
    (``videos=[frames]``; Video-LLaVA, LLaVA-NeXT-Video, Qwen2-VL family; transformers' video
    processors need torchvision). With ``frames_as=images`` they go as that many images in the
    user turn (any multi-image chat VLM: LLaVA, LLaVA-OneVision, Idefics, Qwen-VL ...).
    """

    def __init__(self, weights: str, *, device: str | None = None, dtype: str | None = None,
                 frames: int | str = 8, frames_as: str = "video") -> None:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if not weights:
            raise InputError("hf-video-chat needs weights: a hub id or a local folder")
        self.weights = weights
        self.device = resolve_device(device)
        self.model = AutoModelForImageTextToText.from_pretrained(weights, dtype=resolve_dtype(dtype, self.device))
        self.model.to(self.device).eval()
        self.processor = AutoProcessor.from_pretrained(weights)
        self.frames = int(frames)
        if frames_as not in ("video", "images"):
            raise InputError(f"frames_as must be video or images, not {frames_as!r}")
        self.frames_as = frames_as

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> HFVideoChatGenerator:
        return cls(weights or "", **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return ("uniform", self.frames, self.frames)

    def describe(self) -> dict[str, Any]:
        return {"backend": "hf-video-chat", "weights": self.weights, "frames": self.frames,
                "frames_as": self.frames_as, "dtype": str(self.model.dtype)}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        import numpy as np
        import torch

        out = []
        for req in requests:
            frames = [im.convert("RGB") for im in req.images]
            visual = [{"type": "video"}] if self.frames_as == "video" else [{"type": "image"}] * len(frames)
            messages = [{"role": "user", "content": [*visual, {"type": "text", "text": req.prompt or VIDEO_PROMPT}]}]
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            if self.frames_as == "video":
                video = np.stack([np.asarray(im) for im in frames])
                inputs = self.processor(text=[text], videos=[video], return_tensors="pt")
            else:
                inputs = self.processor(text=[text], images=frames, return_tensors="pt")
            inputs = inputs.to(self.device)
            for k, v in inputs.items():
                if torch.is_floating_point(v):
                    inputs[k] = v.to(self.model.dtype)
            with torch.inference_mode():
                ids = self.model.generate(**inputs, max_new_tokens=req.max_new_tokens, do_sample=False)
            new = ids[:, inputs["input_ids"].shape[1]:]
            out.append(self.processor.batch_decode(new, skip_special_tokens=True)[0].strip())
        return out


class OpenAIVideoGenerator:
    """An OpenAI-compatible chat API; frames are sent as JPEG images in one user turn."""

    def __init__(self, model: str | None = None, *, max_side: int | str = 512, temperature: float | str = 0.0,
                 base_url: str | None = None) -> None:
        from connote.models.openai_api import ChatClient

        self.model_name = model or "gpt-4o"
        self.client = ChatClient(self.model_name, base_url=base_url)
        self.max_side = int(max_side)
        self.temperature = float(temperature)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> OpenAIVideoGenerator:
        return cls(weights, **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return ("segments", 6, 6)

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai-video", "model": self.model_name, "base_url": self.client.base_url,
                "max_side": self.max_side, "temperature": self.temperature}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        from connote.models.openai_api import image_data_url

        out = []
        for req in requests:
            content: list[dict[str, Any]] = [{"type": "text", "text": req.prompt or VIDEO_PROMPT}]
            content += [{"type": "image_url", "image_url": {"url": image_data_url(im, self.max_side)}}
                        for im in req.images]
            resp = self.client.chat([{"role": "user", "content": content}], temperature=self.temperature,
                                    max_tokens=req.max_new_tokens)
            out.append(((resp["choices"][0].get("message") or {}).get("content") or "").strip())
        return out


class NearestCaptionGenerator:
    """Offline default: the first caption of the nearest training video by mean frame embedding."""

    def __init__(self, captions: str, *, videos: str | None = None, split: str | None = None,
                 embedder: Any = None, strategy: str = "segments") -> None:
        from connote.metaphor.data import load_vmc, read_split
        from connote.video.frames import read_frames

        if not captions or not videos:
            raise InputError("nearest needs the caption table as weights and ?videos=FOLDER "
                             "(e.g. nearest:vmc.csv?videos=videos&split=train.txt)")
        if embedder is None:
            from connote.models.embedded import EmbeddedEncoder

            embedder = EmbeddedEncoder()
        self.embedder = embedder
        self.strategy = strategy
        data = load_vmc(captions, videos)
        items = data.subset(read_split(split)) if split else data.items  # type: ignore[arg-type]
        self.captions: list[str] = []
        vectors = []
        for it in items:
            if not it.captions or it.path is None:
                continue
            try:
                frames = read_frames(it.path, strategy).frames
            except Exception:  # an unreadable training video is left out
                continue
            vectors.append(self._embed(frames))
            self.captions.append(it.captions[0])
        if not vectors:
            raise InputError("no readable captioned training videos for the nearest-caption generator",
                             path=captions)
        import numpy as np

        self.matrix = np.stack(vectors)
        self.source = {"captions": str(captions), "videos": str(videos), "split": split, "n": len(vectors)}

    def _embed(self, frames: Sequence[Image.Image]) -> Any:
        import numpy as np

        v = np.asarray(self.embedder.embed_images(list(frames)), dtype=np.float32).mean(0)
        return v / max(float(np.linalg.norm(v)), 1e-12)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> NearestCaptionGenerator:
        return cls(weights or "", **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return (self.strategy, 6, 6)

    def describe(self) -> dict[str, Any]:
        desc = getattr(self.embedder, "describe", lambda: {"embedder": type(self.embedder).__name__})()
        return {"backend": "nearest", **self.source, "embedder": desc, "strategy": self.strategy}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return [self.captions[int((self.matrix @ self._embed(r.images)).argmax())] for r in requests]


GENERATORS.register("git-video", GitVideoCaptioner.from_spec, help="GIT video captioning (GitForCausalLM).")
GENERATORS.register("git-llava", GitLlavaGenerator.from_spec, help="A trained GIT-LLaVA / GIT-LLaVA-X folder.")
GENERATORS.register("hf-video-chat", HFVideoChatGenerator.from_spec,
                    help="Video chat VLMs via AutoProcessor chat templates (Video-LLaVA, LLaVA-NeXT-Video, Qwen-VL).")
GENERATORS.register("openai-video", OpenAIVideoGenerator.from_spec,
                    help="OpenAI-compatible chat API with sampled frames as images.")
GENERATORS.register("nearest", NearestCaptionGenerator.from_spec,
                    help="Offline default: caption of the nearest training video (embedded encoders).")


def load_generator(spec: str, **overrides: Any) -> Any:
    """Build a video caption generator from ``backend[:weights][?k=v&...]``."""
    from connote.models.registry import load_model

    return load_model(spec, GENERATORS, **overrides)


def default_prompt(generator: Any) -> str:
    """The prompt a generator is asked with: GIT-LLaVA's own instruction, else :data:`VIDEO_PROMPT`."""
    if isinstance(generator, GitLlavaGenerator):
        return generator.model.cfg.prompt or METAPHOR_PROMPT
    return VIDEO_PROMPT
