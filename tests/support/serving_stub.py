"""A stand-in for ``vllm serve`` and SGLang's ``launch_server``: the tests' fake vLLM API on the port it is told.

Run as ``python -m tests.support.serving_stub ARGS`` (the tests write a small executable that does so, and pass it
as the ``vllm:``/``sglang:`` backends' ``executable``). It takes the engines' own command lines::

    serve MODEL --host 127.0.0.1 --port P [--served-model-name NAME] [more vLLM flags, ignored]
    --model-path MODEL --host 127.0.0.1 --port P [more SGLang flags, ignored]
    --version

and answers as :class:`tests.support.openai_server.FakeVllm` (``GET /health`` 200 once listening). Environment variables
make it misbehave the ways a real engine does, each once (a marker file says it happened):

* ``STUB_BUSY=FILE``: the first launch fails at once as a server whose port was taken does
  (``[Errno 98] Address already in use``, exit 1);
* ``STUB_CRASH_AFTER=N`` with ``STUB_CRASH=FILE``: the first launch dies (exit 3) when its N-th chat request
  arrives, without answering it;
* ``STUB_SLOW=SECONDS``: waits that long before it listens (an engine loading its weights);
* ``STUB_HANG=1``: never answers a chat request (an engine busy with a long generation).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from tests.support.openai_server import FakeVllm


def write_engine(folder: Path) -> Path:
    """An executable in ``folder`` that runs this stub (what the ``executable`` option of ``vllm:`` and ``sglang:``
    names in the tests)."""
    root = Path(__file__).resolve().parents[2]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "engine"
    path.write_text(f"#!/bin/sh\nPYTHONPATH={root} exec {sys.executable} -m tests.support.serving_stub \"$@\"\n")
    path.chmod(0o755)
    return path


def once(env: str) -> bool:
    """True the first time the marker file named by ``env`` is claimed (it is created then)."""
    path = os.environ.get(env)
    if not path:
        return False
    try:
        with open(path, "x"):
            return True
    except FileExistsError:
        return False


class CrashingVllm(FakeVllm):
    def __init__(self, crash_after: int | None, **kwargs: object) -> None:
        self.crash_after, self.seen, self.lock = crash_after, 0, threading.Lock()
        super().__init__(**kwargs)

    def reply(self, h) -> None:  # noqa: ANN001
        with self.lock:
            self.seen += 1
            if self.crash_after is not None and self.seen >= self.crash_after:
                print(f"stub: crashing at request {self.seen}", flush=True)
                os._exit(3)
        if os.environ.get("STUB_HANG"):
            time.sleep(3600)  # an engine busy with a long generation
        super().reply(h)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print("0.0.0+stub")
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("command", nargs="?")
    ap.add_argument("model", nargs="?")
    ap.add_argument("--model-path")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--served-model-name")
    args, rest = ap.parse_known_args(argv)
    served = args.served_model_name or args.model or args.model_path
    print(f"stub: pid {os.getpid()} asked to serve {served} on {args.host}:{args.port}; ignored {rest}", flush=True)
    if once("STUB_BUSY"):
        print(f"ERROR: [Errno 98] error while attempting to bind on address ('{args.host}', {args.port}): "
              "address already in use", flush=True)
        return 1
    time.sleep(float(os.environ.get("STUB_SLOW", "0")))
    crash = int(os.environ["STUB_CRASH_AFTER"]) if once("STUB_CRASH") else None
    server = CrashingVllm(crash, served=served, port=args.port)
    Path(os.environ.get("STUB_PIDS", os.devnull)).open("a").write(f"{os.getpid()}\n")
    print(f"stub: listening on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
