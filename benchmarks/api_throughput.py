"""API throughput: the ``openai`` backend's fixed pool of 4 vs its adaptive concurrency, against a server's limit.

A loopback chat-completions server written for this benchmark (``LimitedServer``: 127.0.0.1 only, at most
``max_requests`` requests and ``max_seconds`` seconds, then it answers 503) enforces what hosted APIs and
serving engines enforce:

* a **rate limit**: a token bucket of ``rate`` requests/s (burst ``rate / 5``); over it, HTTP 429 with
  ``retry-after-ms`` (when the next token is due) and ``Retry-After``;
* a **concurrency limit**: over ``max_concurrent`` requests in flight, HTTP 429 with ``retry-after-ms``;
* a fixed service time (``latency`` seconds per answer, as a model's generation time).

The server's limit is therefore ``min(rate, max_concurrent / latency)`` requests/s. Each side probes
``--items`` image-caption pairs with the ``openai`` backend (Yes/No with logprobs, as ``connote probe``
asks) in calls of ``--batch`` pairs: the fixed pool (``adaptive=false``, 4 in flight: the backend's
behaviour before) and the adaptive limit at the backend's defaults (raised and lowered from the server's
answers: ``connote.models.concurrency``; starts at 8, ceiling ``--max-concurrency``).

A third side (``--engine``, on by default) is the ``vllm:`` backend starting its own server: this script run as
the engine's command (``--as-engine``: the same server in another process, on the port the backend chose,
answering ``GET /health``) that *queues* requests over ``max_concurrent`` as vLLM and SGLang do instead of
refusing them, no rate limit: its limit is ``max_concurrent / latency``. The server's start is outside the
timing (a warm-up call starts it). Printed: requests/s, its share of the server's limit, 429s, the peak in
flight (the in-process servers), items completed, and the load average.

    python benchmarks/api_throughput.py                       # ~1 minute: 400 pairs, limit 40 requests/s
    python benchmarks/api_throughput.py --items 1000 --rate 80 --max-concurrent 24
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

ANSWER = {"id": "x", "object": "chat.completion", "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"}, "finish_reason": "stop",
                       "logprobs": {"content": [{"token": "Yes", "logprob": -0.2,
                                                 "top_logprobs": [{"token": "Yes", "logprob": -0.2},
                                                                  {"token": "No", "logprob": -1.8}]}]}}]}


class LimitedServer:
    """A chat-completions server on 127.0.0.1 with a rate limit, a concurrency limit and a service time.

    ``answer(body)`` makes the reply's JSON (default: "Yes" with logprobs). Bounded: after ``max_requests``
    requests or ``max_seconds`` seconds every request gets 503 and ``closed`` is set."""

    def __init__(self, *, rate: float, max_concurrent: int, latency: float, max_requests: int = 20_000,
                 max_seconds: float = 600.0, answer: Any = None, port: int = 0, queue: bool = False) -> None:
        self.rate, self.max_concurrent, self.latency = float(rate), int(max_concurrent), float(latency)
        #: queue requests over ``max_concurrent`` (a serving engine) instead of answering 429 (a hosted API)
        self.queue = threading.Semaphore(self.max_concurrent) if queue else None
        self.max_requests, self.max_seconds = int(max_requests), float(max_seconds)
        self.answer = answer or (lambda body: ANSWER)
        self.lock = threading.Lock()
        self.burst = max(1.0, self.rate / 5)
        self.tokens, self.refilled = self.burst, time.monotonic()
        self.started = time.monotonic()
        self.in_flight = self.peak = self.requests = self.ok = self.over_rate = self.over_concurrency = 0
        self.bodies: list[dict[str, Any]] = []
        self.closed = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # as serving engines' servers (uvicorn) do: the body is not held back until the client ACKs
                # the headers (Nagle's algorithm against delayed ACKs: 40 ms per answer on a kept-alive connection)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200 if self.path == "/health" else 404, {})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if outer.queue is not None:
                    with outer.queue:  # waits for a slot, as an engine's scheduler does
                        time.sleep(outer.latency)
                        self._send(200, outer.answer(body))
                    return
                status, wait = outer._admit(body)
                if status == 200:
                    try:
                        time.sleep(outer.latency)
                        self._send(200, outer.answer(body))
                    finally:
                        with outer.lock:
                            outer.in_flight -= 1
                            outer.ok += 1
                    return
                headers = {"retry-after-ms": str(max(1, round(wait * 1000))), "Retry-After": str(max(1, round(wait)))}
                self._send(status, {"error": {"message": "rate limited" if status == 429 else "closed"}},
                           headers if status == 429 else {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 128
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _admit(self, body: dict[str, Any]) -> tuple[int, float]:
        with self.lock:
            now = time.monotonic()
            self.requests += 1
            if self.requests > self.max_requests or now - self.started > self.max_seconds:
                self.closed = True
                return 503, 0.0
            self.bodies.append(body)
            self.tokens = min(self.burst, self.tokens + (now - self.refilled) * self.rate)
            self.refilled = now
            if self.in_flight >= self.max_concurrent:
                self.over_concurrency += 1
                return 429, self.latency / 2
            if self.tokens < 1:
                self.over_rate += 1
                return 429, (1 - self.tokens) / self.rate
            self.tokens -= 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return 200, 0.0

    @property
    def limit(self) -> float:
        """Requests/s the server can answer at most."""
        return min(self.rate, self.max_concurrent / self.latency)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"requests": self.requests, "ok": self.ok, "over_rate": self.over_rate,
                    "over_concurrency": self.over_concurrency, "peak_in_flight": self.peak}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def run_side(name: str, options: str, args: argparse.Namespace) -> dict[str, Any]:
    from PIL import Image

    from connote.models.registry import load_model

    server = LimitedServer(rate=args.rate, max_concurrent=args.max_concurrent, latency=args.latency,
                           max_requests=args.items * 20, max_seconds=args.max_seconds)
    try:
        model = load_model(f"openai:test-model?base_url={server.url}&backoff={args.backoff}&{options}")
        image = Image.new("RGB", (64, 48), (200, 40, 40))
        captions = [f"caption {i}" for i in range(args.items)]
        pairs = [(0, i) for i in range(args.items)]
        load_before = os.getloadavg()[0]
        t = time.perf_counter()
        out: list[Any] = []
        for i in range(0, len(pairs), args.batch):  # the task's match_probability calls
            out.extend(model.match_probability([image], captions, pairs[i:i + args.batch]))
        seconds = time.perf_counter() - t
        done = sum(not isinstance(p, BaseException) for p in out)
        errors = [str(p) for p in out if isinstance(p, BaseException)][:3]
        counts = server.counts()
        return {"side": name, "items": len(out), "completed": done, "seconds": seconds,
                "requests_per_s": done / seconds, "share_of_limit": done / seconds / server.limit,
                "http_429": counts["over_rate"] + counts["over_concurrency"], **counts,
                "client": model.client.concurrency.stats(), "errors": errors,
                "load_average": (load_before, os.getloadavg()[0])}
    finally:
        server.close()


def run_engine_side(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The ``vllm:`` backend with this script as its engine: it starts the server, health-checks it, then probes."""
    from PIL import Image

    from connote.models.registry import load_model

    wrapper = folder / "engine"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} --as-engine "
                       f"--max-concurrent {args.max_concurrent} --latency {args.latency} \"$@\"\n")
    wrapper.chmod(0o755)
    model = load_model(f"vllm:test-model?executable={wrapper}&backoff={args.backoff}"
                       f"&max_concurrency={args.max_concurrency}")
    try:
        image = Image.new("RGB", (64, 48), (200, 40, 40))
        model.match_probability([image], ["warm-up"], [(0, 0)])  # starts the server: not timed
        captions = [f"caption {i}" for i in range(args.items)]
        pairs = [(0, i) for i in range(args.items)]
        load_before = os.getloadavg()[0]
        t = time.perf_counter()
        out: list[Any] = []
        for i in range(0, len(pairs), args.batch):
            out.extend(model.match_probability([image], captions, pairs[i:i + args.batch]))
        seconds = time.perf_counter() - t
    finally:
        model.close()
    done = sum(not isinstance(p, BaseException) for p in out)
    limit = args.max_concurrent / args.latency
    stats = model.client.concurrency.stats()
    return {"side": "vllm: (queueing)", "items": len(out), "completed": done, "seconds": seconds,
            "requests_per_s": done / seconds, "share_of_limit": done / seconds / limit, "limit": limit,
            "http_429": 0, "peak_in_flight": int(stats.get("peak_in_flight", stats.get("limit", 0))),
            "client": stats, "errors": [str(p) for p in out if isinstance(p, BaseException)][:3],
            "load_average": (load_before, os.getloadavg()[0])}


def as_engine(argv: list[str]) -> int:
    """This script as a serving engine's command (``vllm serve MODEL ... --host H --port P``): a queueing server."""
    if "--version" in argv:
        print("api_throughput-engine 1")
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--as-engine", action="store_true")
    ap.add_argument("--max-concurrent", type=int, required=True)
    ap.add_argument("--latency", type=float, required=True)
    ap.add_argument("--port", type=int, required=True)
    args, _ = ap.parse_known_args(argv)
    LimitedServer(rate=float("inf"), max_concurrent=args.max_concurrent, latency=args.latency, port=args.port,
                  queue=True, max_seconds=3600)
    while True:
        time.sleep(3600)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--as-engine" in argv:
        return as_engine(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=400)
    ap.add_argument("--rate", type=float, default=40.0, help="the server's rate limit, requests/s")
    ap.add_argument("--max-concurrent", type=int, default=16, help="the server's concurrency limit")
    ap.add_argument("--latency", type=float, default=0.25, help="the server's seconds per answer")
    ap.add_argument("--batch", type=int, default=256,
                    help="pairs per match_probability call (connote probe's pairs_per_chunk: 256)")
    ap.add_argument("--max-concurrency", type=int, default=32, help="the adaptive side's ceiling")
    ap.add_argument("--backoff", type=float, default=1.0, help="the backend's retry back-off (its default: 1)")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="each server's lifetime bound")
    ap.add_argument("--engine", action=argparse.BooleanOptionalAction, default=True,
                    help="also the vllm: backend with this script as its engine (a queueing server it starts)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    limit = min(args.rate, args.max_concurrent / args.latency)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"server: {args.rate:g} requests/s rate limit, {args.max_concurrent} in flight, {args.latency:g} s per "
          f"answer -> limit {limit:g} requests/s; {args.items} pairs in calls of {args.batch}")
    sides = [run_side("fixed pool of 4", "concurrency=4&adaptive=false", args),
             run_side("adaptive", f"max_concurrency={args.max_concurrency}", args)]
    if args.engine:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            sides.append(run_engine_side(args, Path(tmp)))
    print(f"{'':18}{'req/s':>8}{'of limit':>10}{'seconds':>9}{'HTTP 429':>10}{'peak in flight':>16}"
          f"{'completed':>11}  load avg (1 min)")
    for r in sides:
        print(f"{r['side']:18}{r['requests_per_s']:8.1f}{r['share_of_limit']:10.0%}{r['seconds']:9.2f}"
              f"{r['http_429']:10d}{r['peak_in_flight']:16d}{r['completed']:>6}/{r['items']:<4}"
              f"  {r['load_average'][0]:.2f} -> {r['load_average'][1]:.2f}")
    fixed, adaptive = sides[:2]
    if args.engine:
        print(f"vllm: side: {sides[2]['requests_per_s']:.1f} requests/s of the queueing engine's "
              f"{sides[2]['limit']:g} ({sides[2]['share_of_limit']:.0%}; the server started, health-checked and "
              f"stopped by the backend, its start not timed)")
    per_item = adaptive["http_429"] / max(1, adaptive["completed"])
    print(f"adaptive / fixed: {adaptive['requests_per_s'] / fixed['requests_per_s']:.2f}x; adaptive's final limit "
          f"{adaptive['client']['limit']}, 429s per completed item {per_item:.3f}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"limit": limit, "args": vars(args) | {"json": None}, "sides": sides},
                                        indent=2) + "\n")
    incomplete = [r["side"] for r in sides if r["completed"] != r["items"]]
    if incomplete:
        print(f"not every item completed: {incomplete}; first errors: {[r['errors'] for r in sides]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
