"""One client for OpenAI-compatible chat-completions servers (OpenAI, vLLM, llama.cpp, ...), on the ``openai`` package.

``openai`` (the ``api`` extra) provides the transport: base URL, API key, per-read timeouts and the
typed errors. Retrying is done here so its bounds are connote's, identical for every backend:

* **Retried**: HTTP 408, 409, 429 and 5xx, connection failures and read timeouts, up to
  ``max_retries`` times. When the answer says when to come back (``retry-after-ms`` or ``Retry-After``,
  over 0 s) the retry goes then, exactly (as the ``openai`` package's own retries do: the server knows when
  its next slot or token is due; a longer wait only idles the client); otherwise after the exponential
  back-off ``backoff * 2**attempt`` (+ up to 10 % jitter).
* **Retry-After cap**: a server asking to wait more than ``max_retry_after`` seconds (default 60)
  ends the request at once with an ``ApiError`` saying so, rather than sleeping (a day, for
  ``Retry-After: 86400``).
* **Deadline**: one request (all attempts, waits and reads together) ends after ``deadline``
  seconds (default 120) with an ``ApiError``. It bounds the connection, not only each read: an attempt
  runs in a worker thread that the caller waits for at most the time left, and when the deadline passes
  the attempt's HTTP client is closed (its sockets with it), so a server trickling the status line or
  the headers a byte at a time, or never answering at all, is cut off like one trickling the body.
* **Connections**: HTTP clients are kept in a pool and reused (keep-alive: no new TCP/TLS handshake per
  request) and share one TLS context (loading the CA store anew costs ~40 ms of CPU per client); a client
  whose attempt passed the deadline is closed, not reused.
* An answer that is not a JSON object is retried like a failed request; any other HTTP 4xx is an
  ``ApiError`` at once. Callers record
  an ``ApiError`` as that item's error, and a rerun retries the item.
* **Streaming** (``chat(..., stream=True)``): the server sends the answer as server-sent events
  (``stream_options.include_usage`` asks for the token counts in the last one); the events are joined into the
  object a non-streamed request gets, with ``first_token_s``, the seconds from sending the attempt to the first
  event that carries text. A stream cut off before ``data: [DONE]``, or one that reports an error, is retried
  as a failed request.
"""

from __future__ import annotations

import base64
import email.utils
import io
import json
import os
import random
import threading
import time
from typing import Any

from PIL import Image

from connote.core.registry import require
from connote.models.concurrency import FIXED_POOL, ConcurrencyLimit

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
"""Statuses worth retrying; any other 5xx is retried as well."""
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_DEADLINE = 120.0
DEFAULT_MAX_RETRY_AFTER = 60.0
FIRST_TOKEN_KEY = "first_token_s"
"""The key :meth:`ChatClient.chat` adds to a streamed answer: seconds from sending to the first text."""


class ApiError(RuntimeError):
    """A chat request that failed for good (after the retries it was allowed)."""


def image_data_url(image: Image.Image, max_side: int = 1024, quality: int = 90) -> str:
    """An image as a ``data:image/jpeg;base64,...`` URL, its longer side at most ``max_side``."""
    img = image.convert("RGB")
    if max(img.size) > max_side:
        img.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


class ImageUrls:
    """Data URLs of images, each encoded once: a request that sends an image sent before (a photo in several
    stories, an image asked about with each of its captions) reuses its JPEG.

    An image object is looked up by identity first, then by a digest of its pixels (the same photo read again
    by a later batch is another object); the encoded URLs are kept up to ``max_bytes`` in all, oldest dropped.
    Thread-safe (a backend's requests run in a pool).
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        import collections
        import weakref

        self.max_bytes = int(max_bytes)
        self._ref = weakref.ref
        # id(image) -> (a weak reference to it, its digest); PIL images are not hashable, so not weak keys
        self._digests: dict[int, tuple[Any, str]] = {}
        self._urls: collections.OrderedDict[tuple[str, int, int], str] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int, int], threading.Event] = {}
        #: JPEG encodings done (the rest were reused)
        self.encoded = 0

    def _digest(self, image: Image.Image) -> str:
        with self._lock:
            entry = self._digests.get(id(image))
        if entry is not None and entry[0]() is image:
            return entry[1]
        import hashlib

        h = hashlib.blake2b(image.tobytes(), digest_size=16)
        h.update(f"{image.mode}{image.size}".encode())
        digest = h.hexdigest()
        with self._lock:
            if len(self._digests) > 4096:  # forget the images that are gone
                self._digests = {k: v for k, v in self._digests.items() if v[0]() is not None}
            self._digests[id(image)] = (self._ref(image), digest)
        return digest

    def url(self, image: Image.Image, max_side: int = 1024, quality: int = 90) -> str:
        """``image_data_url(image, max_side, quality)``, encoded at most once per image while it is kept."""
        key = (self._digest(image), int(max_side), int(quality))
        while True:
            with self._lock:
                hit = self._urls.get(key)
                if hit is not None:
                    self._urls.move_to_end(key)
                    return hit
                busy = self._pending.get(key)
                if busy is None:  # this thread encodes it; the others asking meanwhile wait for it
                    busy = self._pending[key] = threading.Event()
                    break
            busy.wait()
        try:
            url = image_data_url(image, max_side, quality)
            with self._lock:
                self.encoded += 1
                self._urls[key] = url
                self._bytes += len(url)
                while self._bytes > self.max_bytes and len(self._urls) > 1:
                    _, old = self._urls.popitem(last=False)
                    self._bytes -= len(old)
        finally:
            with self._lock:
                self._pending.pop(key).set()
        return url


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a response asks for (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP date)."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ChatClient:
    """Chat completions with retries, a capped Retry-After and an overall deadline per request."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = 5, backoff: float = 1.0,
                 max_retry_after: float = DEFAULT_MAX_RETRY_AFTER, deadline: float = DEFAULT_DEADLINE,
                 concurrency: ConcurrencyLimit | None = None) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout, self.max_retries, self.backoff = float(timeout), int(max_retries), float(backoff)
        self.max_retry_after, self.deadline = float(max_retry_after), float(deadline)
        if self.timeout <= 0 or self.deadline <= 0 or self.max_retries < 0 or self.backoff < 0:
            raise ValueError("timeout and deadline must be positive, max_retries and backoff non-negative")
        openai = require("openai", "api")
        self._openai = openai
        #: requests in flight across the threads that share this client (connote.models.concurrency)
        self.concurrency = concurrency or ConcurrencyLimit(FIXED_POOL, adaptive=False)
        self._idle: list[Any] = []  # HTTP clients free for the next attempt (each keeps its connections)
        self._lock = threading.Lock()
        self._tls: Any = None
        #: HTTP clients made so far (one per thread at most, plus one per attempt cut off at the deadline)
        self.clients_made = 0
        #: Whether the server can still answer (a served engine's process is running); None: not known. A request
        #: whose server is gone stops retrying at once.
        self.alive: Any = None

    def move_to(self, base_url: str) -> None:
        """Send the next requests to ``base_url`` (a restarted server's new port); pooled connections are closed."""
        with self._lock:
            self.base_url = base_url.rstrip("/")
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    def _new_client(self) -> Any:
        with self._lock:
            if self._tls is None:
                self._tls = _tls_context(self._openai)
            self.clients_made += 1
        http_client = self._openai.DefaultHttpxClient(verify=self._tls)
        # retries are ours (see the module docstring), so the library's own are off
        return self._openai.OpenAI(api_key=self.api_key or "none", base_url=self.base_url, max_retries=0,
                                   timeout=self.timeout, http_client=http_client)

    def _take_client(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._new_client()

    def _attempt(self, body: dict[str, Any], end: float) -> tuple[bytes, float | None]:
        """One HTTP request on a client no other attempt uses meanwhile, ended at the deadline ``end`` whatever
        the server does (the client is then closed, its sockets with it); otherwise the client goes back to
        the pool."""
        client = self._take_client()
        result: dict[str, Any] = {}

        def work() -> None:
            try:
                result["raw"] = self._request(client, body, end)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                result["error"] = exc

        worker = threading.Thread(target=work, name="connote-chat-attempt", daemon=True)
        worker.start()
        worker.join(max(0.0, end - time.monotonic()))
        if worker.is_alive():
            client.close()  # closes the connection: the worker's read fails and it ends
            worker.join(5.0)
            raise _DeadlinePassed
        with self._lock:
            current = str(client.base_url).rstrip("/") == self.base_url
            if current:  # a client of an address given up meanwhile (move_to) is not reused
                self._idle.append(client)
        if not current:
            client.close()
        if "error" in result:
            raise result["error"]
        return result["raw"]

    def _request(self, client: Any, body: dict[str, Any], end: float) -> tuple[bytes, float | None]:
        """One HTTP request; the body read chunk by chunk against the deadline ``end``. Returns the body and,
        for a streamed request, the seconds from sending to the first event with text (None otherwise)."""
        read_timeout = max(0.001, min(self.timeout, end - time.monotonic()))
        create = client.chat.completions.with_streaming_response.create
        extra = {k: v for k, v in body.items() if k not in ("model", "messages")}
        # no key: send no Authorization header at all (as before), not "Bearer none"
        headers = {} if self.api_key else {"Authorization": self._openai.Omit()}
        sent = time.monotonic()
        first = _FirstText() if body.get("stream") else None
        with create(model=body["model"], messages=body["messages"], extra_body=extra or None,
                    extra_headers=headers or None, timeout=read_timeout) as response:
            chunks = []
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if first is not None:
                    first.feed(chunk, time.monotonic() - sent)
                if time.monotonic() > end:
                    raise _DeadlinePassed
        return b"".join(chunks), (first.seconds if first is not None else None)

    def _send(self, body: dict[str, Any], end: float) -> tuple[bytes, float | None]:
        """:meth:`_attempt` in a slot of :attr:`concurrency`, which hears what the server answered."""
        started = self.concurrency.acquire(end)
        status, asked, failed = None, None, False
        try:
            return self._attempt(body, end)
        except self._openai.APIStatusError as exc:
            status, asked = exc.status_code, retry_after_seconds(getattr(exc.response, "headers", None))
            raise
        except BaseException:
            failed = True
            raise
        finally:
            self.concurrency.release(started, status=status, retry_after=asked, failed=failed)

    def chat(self, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """POST ``/chat/completions`` with ``model``, ``messages`` and ``params``; the response as a dict.

        Raises ``ApiError`` when the request fails for good (see the module docstring). With ``stream=True``
        the answer comes as server-sent events, joined into the same object, plus :data:`FIRST_TOKEN_KEY`.
        """
        openai = self._openai
        body = {"model": self.model, "messages": messages, **params}
        if body.get("stream"):
            body["stream_options"] = {"include_usage": True, **(body.get("stream_options") or {})}
        start = time.monotonic()
        end = start + self.deadline
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            wait = self.backoff * (2 ** attempt) * (1 + 0.1 * random.random())
            try:
                raw, first = self._send(body, end)
                answer = joined_events(raw) if body.get("stream") else json.loads(raw.decode("utf-8"))
                if isinstance(answer, dict):
                    if body.get("stream"):
                        answer[FIRST_TOKEN_KEY] = first
                    return answer
                last = f"the answer is JSON but not an object: {raw[:100]!r}"
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # retried, as a cut-off answer would be
                last = f"the answer is not JSON ({exc})"
            except _BadStream as exc:  # retried: a stream cut off or failing midway
                last = str(exc)
            except _DeadlinePassed:
                last = "the answer (status line, headers or body) was still arriving"
            except openai.APIStatusError as exc:
                detail = _detail(exc)
                last = f"HTTP {exc.status_code}: {detail}"
                if exc.status_code not in RETRY_STATUS and exc.status_code < 500:
                    raise ApiError(last) from None
                asked = retry_after_seconds(getattr(exc.response, "headers", None))
                if asked is not None:
                    if asked > self.max_retry_after:
                        raise ApiError(f"{last}; the server asks to retry after {asked:g} s, over the "
                                       f"{self.max_retry_after:g} s cap (max_retry_after): not waiting") from None
                    if asked > 0:  # the server's time, exactly (0: it did not say; back off)
                        wait = asked
            except openai.APITimeoutError:
                last = f"no answer within {min(self.timeout, max(0.0, end - start)):g} s"
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc.__context__
                last = f"{type(exc).__name__}: {cause or exc}"
            except (OSError, ValueError) as exc:  # a transport error the library did not wrap
                last = f"{type(exc).__name__}: {exc}"
            left = end - time.monotonic()
            if left <= 0:
                break
            if self.alive is not None and not self.alive():
                raise ApiError(f"the server is gone (its process exited); last: {last}")
            if attempt < self.max_retries:
                if wait >= left:
                    raise ApiError(f"the next attempt (in {wait:.3g} s) would pass the {self.deadline:g} s "
                                   f"deadline; last: {last}")
                time.sleep(wait)
        if time.monotonic() >= end:
            raise ApiError(f"no complete answer within the {self.deadline:g} s deadline "
                           f"({attempt + 1} attempt(s)); last: {last}")
        raise ApiError(f"gave up after {self.max_retries + 1} attempts; last: {last}")


class _BadStream(Exception):
    """A streamed answer that ended before ``data: [DONE]`` or reported an error."""


def _events(raw: bytes) -> list[Any]:
    """The JSON of each ``data:`` line of server-sent events, ``[DONE]`` as None."""
    out = []
    for line in raw.decode("utf-8").splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            out.append(None if data == "[DONE]" else json.loads(data))
    return out


def _event_text(event: Any) -> str:
    choices = event.get("choices") if isinstance(event, dict) else None
    delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
    text = delta.get("content") if isinstance(delta, dict) else None
    return text if isinstance(text, str) else ""


def joined_events(raw: bytes) -> dict[str, Any]:
    """A streamed chat answer (server-sent events of ``chat.completion.chunk`` objects) as the one object a
    non-streamed request gets: the deltas' text joined into ``choices[0].message.content``, the last finish
    reason, and ``usage`` from the event that carries it. Raises :class:`_BadStream` when the stream has no
    ``[DONE]`` (cut off) or an event reports an error."""
    events = _events(raw)
    if None not in events:
        raise _BadStream("the stream ended before data: [DONE] (cut off)")
    text, finish, usage, head = [], None, None, {}
    for event in events:
        if event is None:
            continue
        if not isinstance(event, dict):
            raise _BadStream(f"a stream event is JSON but not an object: {str(event)[:100]}")
        if "error" in event:
            raise _BadStream(f"the stream reported an error: {str(event['error'])[:200]}")
        head = head or {k: event[k] for k in ("id", "model", "created") if k in event}
        text.append(_event_text(event))
        for choice in event.get("choices") or []:
            finish = choice.get("finish_reason") or finish
        usage = event.get("usage") or usage
    message = {"role": "assistant", "content": "".join(text)}
    return {**head, "object": "chat.completion", "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


class _FirstText:
    """Notes when the first server-sent event carrying text arrives, fed the body chunk by chunk."""

    def __init__(self) -> None:
        self.seconds: float | None = None
        self._tail = b""

    def feed(self, chunk: bytes, elapsed: float) -> None:
        if self.seconds is not None:
            return
        *lines, self._tail = (self._tail + chunk).split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                try:
                    if _event_text(json.loads(line[5:])):
                        self.seconds = elapsed
                        return
                except ValueError:
                    continue


def _tls_context(openai: Any) -> Any:
    """One TLS context as the ``openai`` package's HTTP library makes it (its CA store, ``SSL_CERT_FILE``);
    ``True`` (each client makes its own) where that library has no ``create_ssl_context``."""
    import importlib

    try:
        library = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
        return library.create_ssl_context()
    except (AttributeError, ImportError, IndexError, TypeError):
        return True


class _DeadlinePassed(Exception):
    """Raised between body chunks when the request's deadline has passed."""


def _detail(exc: Any) -> str:
    response = getattr(exc, "response", None)
    try:
        text = response.text if response is not None else str(exc)
    except Exception:  # noqa: BLE001 - the body of an error response is a courtesy
        text = str(exc)
    return text[:300]


__all__ = ["ApiError", "ChatClient", "DEFAULT_DEADLINE", "DEFAULT_MAX_RETRY_AFTER", "ImageUrls", "RETRY_STATUS",
           "image_data_url", "retry_after_seconds"]
