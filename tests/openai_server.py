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

import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

Reply = Callable[[http.server.BaseHTTPRequestHandler], None]


class Server:
    """A loopback chat server: ``replies`` is a list of callables, one per request (the last repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
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

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
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
