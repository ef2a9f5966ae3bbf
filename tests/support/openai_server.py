"""The one fake OpenAI-compatible server of the tests: a real HTTP server on 127.0.0.1.

Every test that talks to an API backend (the chat client, the ``openai`` backends for probing, stories,
captions and judges, a vLLM-like server) starts a :class:`Server` and says how it answers. A *reply* is a
callable ``reply(h)`` that writes the response to the request handler ``h`` (``h.body`` is the parsed JSON
body, ``h.path`` the path); ``replies[k]`` answers the k-th request, the last one repeats. Most replies are
built by :func:`answer` (a function of the body) or :func:`status` (an error status); odd ones (a trickling
body, no answer at all) write to ``h`` themselves. Each request is recorded in ``Server.requests`` as
``{"path", "body", "headers" (lower-case names), "auth" (the Authorization header or None), "port" (the
client's: one port, one connection)}``.

The ``serve`` fixture starts servers and closes them after the test (registered for every test folder
by ``tests/conftest.py``).
"""

from __future__ import annotations

import base64
import http.server
import io
import json
import math
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator

import pytest
from PIL import Image

Reply = Callable[[http.server.BaseHTTPRequestHandler], None]
#: The model name :class:`FakeVllm` serves by default (as ``vllm serve NAME``).
SERVED = "llava-hf/llava-onevision-qwen2-7b-ov-hf"


class Server:
    """A loopback chat server: ``replies`` is a list of callables, one per request (the last repeats). It listens
    on ``port`` (0: a free one) and answers ``GET /health`` with 200, as vLLM's and SGLang's servers do."""

    def __init__(self, replies: list[Reply], port: int = 0) -> None:
        self.replies, self.requests, self.stop = replies, [], threading.Event()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()  # no Nagle delay on kept-alive connections (as uvicorn, vLLM's server)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.body = json.loads(body)
                outer.requests.append({"path": self.path, "body": self.body,
                                       "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "auth": self.headers.get("Authorization"), "port": self.client_address[1]})
                reply = outer.replies[min(len(outer.requests), len(outer.replies)) - 1]
                try:
                    reply(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:  # noqa: N802
                code = 200 if self.path == "/health" else 404
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def send_json(h: http.server.BaseHTTPRequestHandler, obj: object, code: int = 200,
              headers: dict[str, str] | None = None) -> None:
    """Answer ``code`` with ``obj`` as JSON (NaN is written as the bare word NaN, as sloppy servers do)."""
    data = json.dumps(obj).encode()
    h.send_response(code)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def status(code: int, headers: dict[str, str] | None = None) -> Reply:
    """A reply of status ``code`` with an OpenAI-style error body (and ``headers``, e.g. Retry-After)."""
    def reply(h: http.server.BaseHTTPRequestHandler) -> None:
        send_json(h, {"error": {"message": f"status {code}"}}, code, headers)

    return reply


def answer(fn: Callable[[dict], object]) -> Reply:
    """A reply whose JSON is ``fn(body)``; ``fn`` may return ``(status, obj)`` for another status than 200."""
    def reply(h: http.server.BaseHTTPRequestHandler) -> None:
        out = fn(h.body)
        code, obj = out if isinstance(out, tuple) else (200, out)
        send_json(h, obj, code)

    return reply


def events(pieces: list[str], *, usage: dict | None = None, delay: float = 0.0, done: bool = True,
           error: str | None = None) -> Reply:
    """A streamed answer as OpenAI's and vLLM's servers send it: server-sent events of ``chat.completion.chunk``
    objects (a role delta, one event per piece of text ``delay`` seconds apart, the finish reason, then the
    usage when asked for by ``stream_options.include_usage``) and ``data: [DONE]``; ``done=False`` cuts the
    stream off before it, ``error`` sends an error event in place of the text."""
    def reply(h: http.server.BaseHTTPRequestHandler) -> None:
        head = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": h.body["model"]}
        chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                        "finish_reason": None}]}]
        if error is not None:
            chunks.append({"error": {"message": error, "type": "InternalServerError", "code": 500}})
        chunks += [{**head, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                   for p in pieces]
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if usage is not None and (h.body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**head, "choices": [], "usage": usage})
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        for i, chunk in enumerate(chunks):
            if i > 1:
                time.sleep(delay)
            h.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            h.wfile.flush()
        if done:
            h.wfile.write(b"data: [DONE]\n\n")

    return reply


def p_yes(caption_prompt: str) -> float:
    """The fake's p(Yes) for a prompt: fixed by its text, so the test knows each item's number."""
    return 0.05 + 0.9 * (zlib.crc32(caption_prompt.encode()) % 1000) / 1000


class FakeVllm(Server):
    def __init__(self, *, max_images: int = 6, max_logprobs: int = 20, served: str = SERVED, port: int = 0) -> None:
        self.max_images, self.max_logprobs, self.served = max_images, max_logprobs, served
        super().__init__([self.reply], port)

    def reply(self, h) -> None:  # noqa: ANN001
        code, obj = self.answer(h.path, h.body)
        send_json(h, obj, code)

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    @property
    def auth(self) -> list[str | None]:
        return [r["auth"] for r in self.requests]

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if body.get("model") != self.served:
            return 404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                         "type": "NotFoundError", "param": None, "code": 404}
        (message,) = body["messages"]
        parts = message["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        if len(images) > self.max_images:
            return 400, {"object": "error", "message": f"At most {self.max_images} image(s) may be provided in "
                         "one request.", "type": "BadRequestError", "param": None, "code": 400}
        if body.get("top_logprobs", 0) > self.max_logprobs:
            return 400, {"object": "error", "message": f"top_logprobs must be <= {self.max_logprobs}",
                         "type": "BadRequestError", "param": None, "code": 400}
        sizes = []
        for part in images:
            head, data = part["image_url"]["url"].split(",", 1)
            assert head == "data:image/jpeg;base64"
            sizes.append(Image.open(io.BytesIO(base64.b64decode(data))).size)
        choice: dict = {"index": 0, "finish_reason": "stop", "stop_reason": None}
        if body.get("logprobs"):
            p = p_yes(texts[0])
            top = [{"token": "Yes", "logprob": math.log(p), "bytes": [89, 101, 115]},
                   {"token": "No", "logprob": math.log(1 - p), "bytes": [78, 111]}]
            top = top[: body.get("top_logprobs") or 1]
            choice["message"] = {"role": "assistant", "content": "Yes" if p > 0.5 else "No", "tool_calls": []}
            choice["logprobs"] = {"content": [{**top[0 if p > 0.5 else 1], "top_logprobs": top}]}
        else:
            choice["message"] = {"role": "assistant", "content": f"We saw {len(images)} pictures. It was fun!",
                                 "tool_calls": []}
            choice["logprobs"] = None
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": self.served,
                     "choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                     "prompt_logprobs": None}

@pytest.fixture()
def serve() -> Iterator[Callable[[list], Server]]:
    """``serve(replies)`` -> a started :class:`Server`; every server started is closed after the test."""
    made: list[Server] = []

    def start(replies: list) -> Server:
        made.append(Server(replies))
        return made[-1]

    yield start
    for s in made:
        s.close()
