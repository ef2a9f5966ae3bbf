"""The model registry and model specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from connote.registry import Registry

MODELS: Registry[Any] = Registry("model")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed ``backend[:weights][?k=v&...]`` string."""

    backend: str
    weights: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        s = self.backend + (f":{self.weights}" if self.weights else "")
        if self.options:
            s += "?" + "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return s


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec.

    >>> parse_spec("hf-clip:openai/clip-vit-base-patch32?temperature=0.01")
    ModelSpec(backend='hf-clip', weights='openai/clip-vit-base-patch32', options={'temperature': '0.01'})
    """
    base, _, query = spec.partition("?")
    backend, _, weights = base.partition(":")
    return ModelSpec(backend=backend.strip(), weights=weights.strip() or None,
                     options=dict(parse_qsl(query, keep_blank_values=True)))


def load_model(spec: str | ModelSpec, registry: Registry[Any] | None = None, **overrides: Any) -> Any:
    """Build a model from its spec: the registered factory gets ``weights`` and the options.

    ``registry`` defaults to the matchers (``MODELS``); the story and video generators keep
    registries of their own and load through this same function.
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    factory = (registry if registry is not None else MODELS).get(spec.backend)
    kwargs: dict[str, Any] = dict(spec.options)
    kwargs.update(overrides)
    return factory(spec.weights, **kwargs)


# Built-in backends, registered lazily so that listing them imports nothing heavy.
_BUILTIN = {
    "objects": ("connote.models.objects:ObjectsMatcher.from_spec",
                "Offline baseline: EfficientNet-Lite0 ImageNet labels vs caption, compared with MiniLM."),
    "hf-blip-itm": ("connote.models.hf_itm:BlipItmMatcher.from_spec",
                    "BLIP image-text matching head (BlipForImageTextRetrieval)."),
    "hf-blip2-itm": ("connote.models.hf_itm:Blip2ItmMatcher.from_spec",
                     "BLIP-2 Q-Former image-text matching head (Blip2ForImageTextRetrieval)."),
    "hf-flava-itm": ("connote.models.hf_itm:FlavaItmMatcher.from_spec",
                     "FLAVA multimodal encoder ITM head (FlavaForPreTraining)."),
    "hf-clip": ("connote.models.hf_itm:ClipMatcher.from_spec",
                "CLIP cosine similarity, calibrated to p(match) by a logistic map."),
    "hf-vlm-yesno": ("connote.models.hf_vlm:YesNoVlmMatcher.from_spec",
                     "Chat VLM (LLaVA family) asked whether the caption matches: softmax over Yes/No."),
    "openai": ("connote.models.openai_api:OpenAIMatcher.from_spec",
               "OpenAI-compatible chat API (GPT-4o or a local server); key/base URL from the env."),
}
for _name, (_target, _help) in _BUILTIN.items():
    MODELS.register(_name, _target, help=_help)
