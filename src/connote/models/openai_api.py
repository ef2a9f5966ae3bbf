"""An OpenAI-compatible chat API as a matcher (GPT-4o, or any local server speaking the protocol).

Configuration comes from the environment: ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``); the spec's weights are the model name (``openai:gpt-4o``).
p(match) comes from the answer token's log-probabilities when the server returns them
(``logprobs``/``top_logprobs``), else from the answer text (Yes -> 1, No -> 0). Requests time out,
and 408/409/429/5xx/connection failures are retried with exponential back-off (``Retry-After`` honoured
up to ``max_retry_after`` seconds; every request has an overall ``deadline``), through the ``openai``
package (:mod:`connote.models.chat_client`); a pair that still fails is returned as an error, recorded
with its item, and retried on rerun. Requests in flight follow the server's answers (``adaptive``, the
default: raised from the answers, lowered on 429/503 to what the server was serving, Retry-After honoured,
starting at ``concurrency`` (8) and capped by ``max_concurrency``; ``adaptive=false`` keeps a fixed pool of
``concurrency`` (4)): :mod:`connote.models.concurrency`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from connote.models.chat_client import FIRST_TOKEN_KEY, ApiError, ChatClient, ImageUrls, image_data_url
from connote.models.concurrency import ADAPTIVE_START, FIXED_POOL, ConcurrencyLimit
from connote.models.prompts import MATCH_PROMPT, MATCH_PROMPT_VERSION, NO_WORDS, YES_WORDS, match_prompt

__all__ = ["ApiError", "ChatClient", "OpenAIChat", "OpenAIMatcher", "image_data_url", "yes_probability"]


def _sent(obj: Any) -> str:
    """What the server sent, for a message: compact JSON, cut to 200 characters."""
    import json

    text = json.dumps(obj, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def first_choice(response: Any) -> dict[str, Any]:
    """``choices[0]`` of a chat answer; an answer of another shape is an ``ApiError`` showing what was sent."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ApiError(f"the server's answer has no choices[0] object; it sent {_sent(response)}")
    return choices[0]


def answer_text(choice: dict[str, Any]) -> str:
    """The text of a choice (``message.content``; '' when absent); anything but text is an ``ApiError``."""
    message = choice.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else message
    if content is None:
        return ""
    if not isinstance(content, str):
        raise ApiError(f"the server's message content is not text; it sent {_sent(choice.get('message'))}")
    return content


def _logprob(cand: Any) -> tuple[str, float]:
    if not isinstance(cand, dict) or not isinstance(cand.get("token"), str):
        raise ApiError(f"a log-probability entry without a token; the server sent {_sent(cand)}")
    value = cand.get("logprob")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise ApiError(f"logprob {value!r} of token {cand['token']!r} is not a log-probability (a number <= 0)")
    return cand["token"], float(value)


def yes_probability(response: dict[str, Any]) -> float:
    """p(Yes) from top log-probabilities of the first answer token, else from the answer text."""
    choice = first_choice(response)
    logprobs = choice.get("logprobs") or {}
    content = (logprobs.get("content") if isinstance(logprobs, dict) else None) or []
    if not isinstance(content, list):
        raise ApiError(f"logprobs.content is not a list; the server sent {_sent(logprobs)}")
    if content:
        yes = no = 0.0
        top = content[0].get("top_logprobs") if isinstance(content[0], dict) else None
        for cand in top or [content[0]]:
            token, value = _logprob(cand)
            word = token.strip().lower().strip(".!,")
            if word in YES_WORDS:
                yes += math.exp(min(value, 0.0))
            elif word in NO_WORDS:
                no += math.exp(min(value, 0.0))
        if yes + no > 0:
            return yes / (yes + no)
    text = answer_text(choice)
    word = text.strip().lower().split()[0].strip(".!,") if text.strip() else ""
    if word in YES_WORDS:
        return 1.0
    if word in NO_WORDS:
        return 0.0
    raise ApiError(f"answer is neither Yes nor No: {text[:80]!r}")


class OpenAIMatcher:
    backend = "openai"

    def __init__(self, model: str | None = None, *, prompt: str = MATCH_PROMPT, concurrency: int | str | None = None,
                 timeout: float | str = 60.0, max_retries: int | str = 5, backoff: float | str = 1.0,
                 base_url: str | None = None, top_logprobs: int | str = 10, max_retry_after: float | str = 60.0,
                 deadline: float | str = 120.0, adaptive: bool | str = True, max_concurrency: int | str = 32,
                 latency_factor: float | str = 3.0) -> None:
        is_adaptive = str(adaptive).lower() in ("1", "true", "yes")
        start = int(concurrency) if concurrency is not None else (ADAPTIVE_START if is_adaptive else FIXED_POOL)
        limit = ConcurrencyLimit(start, int(max_concurrency), is_adaptive, float(latency_factor))
        self.client = ChatClient(model or "gpt-4o", base_url=base_url, timeout=float(timeout),
                                 max_retries=int(max_retries), backoff=float(backoff),
                                 max_retry_after=float(max_retry_after), deadline=float(deadline), concurrency=limit)
        self.prompt, self.top_logprobs = prompt, int(top_logprobs)
        self.image_urls = ImageUrls()  # each image encoded once, however many requests send it

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> OpenAIMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.client.model, "base_url": self.client.base_url,
                "prompt_version": MATCH_PROMPT_VERSION,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "probability": "top_logprobs of the first answer token (text answer as fallback)"}

    def _one(self, image: Image.Image, caption: str) -> float | Exception:
        messages = [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": self.image_urls.url(image)}},
            {"type": "text", "text": match_prompt(caption, self.prompt)}]}]
        try:
            response = self.client.chat(messages, max_tokens=1, temperature=0, logprobs=True,
                                        top_logprobs=self.top_logprobs)
            return yes_probability(response)
        except ApiError as exc:
            return exc

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float | Exception]:
        return self._in_pool(lambda p: self._one(images[p[0]], captions[p[1]]), pairs)

    def _threads(self, n: int) -> int:
        """Threads for ``n`` requests: enough for the concurrency limit's highest value (it gates the sends)."""
        return max(1, min(n, self.client.concurrency.pool_size))

    def _in_pool(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        """``fn`` over ``items`` in the request threads, in order. Interrupted (Ctrl-C), the requests not sent are
        cancelled and :meth:`interrupted` runs before the threads in flight are waited for."""
        with ThreadPoolExecutor(self._threads(len(items))) as pool:
            futures = [pool.submit(fn, item) for item in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                self.interrupted()
                raise

    def interrupted(self) -> None:
        """What to do when a call is interrupted: nothing here (a request in flight ends by its deadline)."""


class OpenAIChat(OpenAIMatcher):
    """An OpenAI-compatible chat API, written once for every task: the Yes/No question for CV-Probes
    (``match``) and text about one or many images or a video's frames (``generate``), the images sent as
    JPEG data URLs in one user turn. A request that still fails after the retries raises ``ApiError``;
    the runner records it with its item, and a rerun retries it."""

    backend = "openai"

    def __init__(self, model: str | None = None, *, max_side: int | str = 1024, temperature: float | str = 0.0,
                 max_tokens: int | str | None = None, generation_prompt: str | None = None,
                 text_first: bool | str = False, stream: bool | str = False, **options: Any) -> None:
        super().__init__(model, **options)
        self.text_first = str(text_first).lower() in ("1", "true", "yes")
        #: generated text asked for as a stream (to time its first token); the text is the same, so this is
        #: not in describe()
        self.stream = str(stream).lower() in ("1", "true", "yes")
        self.max_side, self.temperature = int(max_side), float(temperature)
        self.max_tokens = int(max_tokens) if max_tokens else None
        self.generation_prompt = generation_prompt

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> OpenAIChat:
        return cls(weights, **options)

    @property
    def frame_spec(self) -> tuple[str, int, int]:
        return ("segments", 6, 6)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update({"max_side": self.max_side, "temperature": self.temperature, "max_tokens": self.max_tokens,
                  "text_first": self.text_first,
                  "generation_prompt_sha": hashlib.sha256(self.generation_prompt.encode()).hexdigest()[:12]
                  if self.generation_prompt else None})
        return d

    def generate(self, requests: Sequence[Any]) -> list[str]:
        from connote.runs.speed import add_tokens

        def one(req: Any) -> str | Exception:
            content: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": self.image_urls.url(im, self.max_side)}}
                for im in req.images]
            text = {"type": "text", "text": self.generation_prompt or req.prompt or ""}
            content = [text, *content] if self.text_first else [*content, text]
            try:
                extra = {"seed": req.seed} if req.temperature > 0 and req.seed is not None else {}
                if self.stream:
                    extra["stream"] = True
                resp = self.client.chat([{"role": "user", "content": content}],
                                        temperature=req.temperature if req.temperature > 0 else self.temperature,
                                        max_tokens=self.max_tokens or req.max_new_tokens, **extra)
                usage = resp.get("usage") if isinstance(resp, dict) else None
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    # the first token's time only from a stream (stream=true)
                    add_tokens(usage["completion_tokens"], resp.get(FIRST_TOKEN_KEY))
                return answer_text(first_choice(resp)).strip()
            except ApiError as exc:
                return ApiError(f"API error: {exc}")

        # a request that failed is returned in its place, so only it is recorded as an error
        return self._in_pool(one, requests)
