"""Small contracts a model answers. A model never sees tasks; tasks never see architectures.

* ``Matcher``: p(match) for image-caption pairs (probe task, MM-SHAP).
* ``Generator``: text for one or more images / frames and a prompt (stories, metaphors).
* ``Embedder``: vectors for texts or images (retrieval baselines, metrics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image


@runtime_checkable
class Matcher(Protocol):
    """Answers: how likely is it that each caption describes its image?"""

    def describe(self) -> dict[str, Any]:
        """Everything that changes a number: backend, weights, revision, dtype, prompt, calibration."""
        ...

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        """p(match) for each ``(image_index, caption_index)`` pair, in order.

        A backend that can fail per pair (a remote API) puts the exception in that pair's place;
        the task records it as the item's error and retries it on the next run.
        """
        ...


@dataclass
class GenerationRequest:
    """One generation: images (photos of a sequence or video frames) and a text prompt."""

    images: list[Image.Image]
    prompt: str
    max_new_tokens: int = 128
    options: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Generator(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """One text per request, in order."""
        ...


@runtime_checkable
class Embedder(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def embed_texts(self, texts: Sequence[str]) -> Any:  # (n, d) float array, L2-normalised
        ...

    def embed_images(self, images: Sequence[Image.Image]) -> Any:  # (n, d) float array
        ...
