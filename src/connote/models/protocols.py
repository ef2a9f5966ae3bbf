"""Small contracts a model answers. A model never sees tasks; tasks never see architectures.

* ``Matcher`` (capability ``match``): p(match) for image-caption pairs (probe task, MM-SHAP).
* ``Generator`` (capability ``generate``): text for one or more images / video frames and a prompt
  (stories over photo sequences, metaphor captions of videos).
* ``Embedder``: vectors for texts or images (retrieval baselines, metrics).

Which backend offers which capability is declared where it is registered
(:mod:`connote.models.registry`).
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
    """One generation: images (photos of a sequence, or a video's frames in temporal order) and a prompt.

    ``prompt`` None means the backend's own default. ``image_ids`` names the images where they have ids
    (VIST photo ids), for backends that work from precomputed features; ``images`` may then be empty
    for a backend whose ``needs_images`` is False.
    """

    images: list[Image.Image]
    prompt: str | None = None
    max_new_tokens: int = 128
    image_ids: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    #: 0 = greedy; above 0, sample at this temperature with ``seed`` (for repeatable samples)
    temperature: float = 0.0
    seed: int | None = None
    #: A stable name of the request within its task (the item id), for backends that answer from a file of
    #: answers prepared beforehand (``openai-batch``: the Batch API ``custom_id``); None where a task gives none
    key: str | None = None

    def sampling(self) -> dict[str, Any]:
        """``generate()`` keyword arguments of Hugging Face models for this request (seeding torch first)."""
        if self.temperature <= 0:
            return {"do_sample": False}
        import torch

        torch.manual_seed(0 if self.seed is None else int(self.seed))
        return {"do_sample": True, "temperature": float(self.temperature)}


def greedy_batches(requests: Sequence[GenerationRequest], sort_key: Any, batch_size: int) -> list[list[int]]:
    """Indices of the greedy requests in batches of at most ``batch_size`` for one ``generate`` call each:
    sorted by ``(max_new_tokens, sort_key(i))`` (a prompt length, so a batch pads little) and split where
    ``max_new_tokens`` changes, so no request gets more new tokens than it asked for."""
    order = sorted((i for i, r in enumerate(requests) if r.temperature <= 0),
                   key=lambda i: (requests[i].max_new_tokens, sort_key(i)))
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last and len(last) < batch_size and requests[last[0]].max_new_tokens == requests[i].max_new_tokens:
            last.append(i)
        else:
            batches.append([i])
    return batches


@runtime_checkable
class Generator(Protocol):
    """Answers: what text do these images (or frames) call for, given the prompt?

    Optional attributes a generator may set: ``inputs`` — ``images`` (any number of photos or frames;
    the default), ``video`` (the frames of one clip, as many as ``frame_spec`` says) or ``photo-ids``
    (precomputed features looked up by ``image_ids``); ``needs_images`` (False when ``image_ids``
    suffice); and ``frame_spec`` = (strategy, k, per_clip), the video frames it wants (default
    ``("segments", 6, 6)``: two frames from each third, as the VMC paper samples them).
    """

    def describe(self) -> dict[str, Any]: ...

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """One text per request, in order. A backend that can fail per request (a remote API) puts the
        exception in that request's place; any other failure raises, and the runner retries the batch
        request by request so that only the failing one is recorded as an error."""
        ...


@runtime_checkable
class Embedder(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def embed_texts(self, texts: Sequence[str]) -> Any:  # (n, d) float array, L2-normalised
        ...

    def embed_images(self, images: Sequence[Image.Image]) -> Any:  # (n, d) float array
        ...
