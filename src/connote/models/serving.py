"""Serving engines as a one-flag backend: ``vllm:MODEL`` and ``sglang:MODEL`` start the engine's own
OpenAI-compatible server and run through the ``openai`` backend (its adaptive concurrency, retries, deadlines).

The engine (vLLM or SGLang, installed beside connote: the ``vllm`` / ``sglang`` extras) does the batching:
continuous batching, a paged KV cache, CUDA graphs; evaluation frameworks report 6-7x Hugging Face
``generate`` from it on 4B VLMs. connote's part is the process around it:

* **Start**: on the first request (inside the run, so that its log goes into the run folder), the server is
  started as a child process on 127.0.0.1 and a free port (``vllm serve MODEL --host 127.0.0.1 --port P``;
  ``python -m sglang.launch_server --model-path MODEL --host 127.0.0.1 --port P``), its output written to
  ``RUN/engine/<engine>-<port>.log`` (outside a run, under connote's cache). A port taken between the choice
  and the server's bind (the server exits saying "address already in use") is chosen again.
* **Health**: ``GET /health`` until it answers 200, within ``startup_timeout`` seconds (loading a model takes
  minutes); a server that exits first is an error quoting the end of its log.
* **Crash**: a server that dies mid-run fails the requests in flight (each recorded as its item's error, naming
  the exit status and the log); the next model call starts it again (``max_restarts`` times), and a rerun
  retries the failed items.
* **Stop**: when the run ends (:func:`connote.tasks.api.run_task` closes what it built), at interpreter exit,
  and when connote is killed: the server is its own process group, stopped with SIGTERM and then SIGKILL
  and reaped; on Linux it is also started with a parent-death signal, so a ``kill -9`` of connote stops it.
* **Fingerprint**: the engine, its version (``EXECUTABLE --version`` for a given ``executable``, else the
  installed package's), the served model, the server arguments that change answers, and the decoding
  settings (greedy: temperature 0) go into ``describe()``; the port does not (it changes every run).

Each image is encoded once per run, however many requests send it (:class:`~connote.models.chat_client.ImageUrls`).
``executable`` replaces the engine's command (a wrapper script, a virtual environment's ``vllm``; the tests
pass a stub that serves their fake API).
"""

from __future__ import annotations

import atexit
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.models.chat_client import ApiError
from connote.models.openai_api import OpenAIChat

#: engine -> (its Python package, the default command before the model arguments, how the model is named)
ENGINES = {
    "vllm": ("vllm", ["vllm", "serve"], None),
    "sglang": ("sglang", [sys.executable, "-m", "sglang.launch_server"], "--model-path"),
}
#: What a server says when the port it was given is taken (uvicorn, the asyncio loop, SGLang's launcher).
PORT_TAKEN = ("address already in use", "errno 98")
#: Lines of the log quoted when the server fails.
LOG_TAIL = 15


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (the server may still lose it: see ``start``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent_prefix() -> list[str]:
    """A command prefix (Linux) that arms the parent-death signal, then becomes the engine: when connote dies,
    even by SIGKILL, the kernel sends the server SIGTERM. Armed in a Python shim rather than ``preexec_fn``,
    which may deadlock a parent with threads."""
    if not sys.platform.startswith("linux"):
        return []
    shim = ("import ctypes, os, signal, sys; "
            "ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGTERM); "
            "os.execvp(sys.argv[1], sys.argv[1:])")
    return [sys.executable, "-c", shim]


def log_tail(path: Path, lines: int = LOG_TAIL) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


class EngineServer:
    """One engine's server process: started, health-checked, watched and stopped (the module docstring)."""

    def __init__(self, engine: str, command: list[str], *, startup_timeout: float = 600.0,
                 port: int | None = None) -> None:
        self.engine, self.command = engine, list(command)
        self.startup_timeout, self.fixed_port = float(startup_timeout), port
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.log: Path | None = None
        self.starts = 0
        self._lock = threading.Lock()
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def exit_code(self) -> int | None:
        """The server's exit status once it has exited (None while it runs or before it started)."""
        return None if self.process is None else self.process.poll()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _log_path(self, port: int) -> Path:
        from connote.core.cachedir import cache_root
        from connote.runs.current import current_run_folder

        run = current_run_folder()
        folder = (run / "engine") if run is not None else cache_root() / "engine-logs"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{self.engine}-{port}.log"

    def start(self) -> str:
        """Start the server (again, if it died) and wait until it is healthy; returns its ``/v1`` URL."""
        with self._lock:
            if self.running():
                return self.url
            for attempt in range(3):  # a port lost to another process between the choice and the bind
                port = self.fixed_port or free_port()
                self._launch(port)
                failure = self._wait_healthy()
                if failure is None:
                    return self.url
                if self.fixed_port is None and any(s in failure.lower() for s in PORT_TAKEN) and attempt < 2:
                    continue
                raise ApiError(failure)
            raise ApiError(f"the {self.engine} server could not get a free port")  # pragma: no cover

    def _launch(self, port: int) -> None:
        self.port, self.log = port, self._log_path(port)
        self.starts += 1
        cmd = [*_die_with_parent_prefix(), *self.command, "--host", "127.0.0.1", "--port", str(port)]
        with open(self.log, "ab") as log:
            log.write(f"$ {shlex.join(cmd)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)  # its own group: stopped with its children

    def _wait_healthy(self) -> str | None:
        """None once ``GET /health`` answers 200; else why not (the server exited, or it took too long)."""
        import urllib.error
        import urllib.request

        assert self.process is not None and self.log is not None
        end = time.monotonic() + self.startup_timeout
        wait = 0.05
        while time.monotonic() < end:
            code = self.process.poll()
            if code is not None:
                return (f"the {self.engine} server exited with status {code} before it was ready (log {self.log}):\n"
                        f"{log_tail(self.log)}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as response:
                    if response.status == 200:
                        return None
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(wait)
            wait = min(1.0, wait * 1.5)
        self.stop()
        return (f"the {self.engine} server did not answer GET /health within {self.startup_timeout:g} s "
                f"(startup_timeout; log {self.log}):\n{log_tail(self.log)}")

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace`` seconds; the process is reaped."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            if proc is not None:
                proc.wait()
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        proc.poll()


def engine_version(engine: str, executable: str | None) -> str | None:
    """``EXECUTABLE --version`` (first line) for a given executable, else the installed package's version."""
    if executable:
        try:
            out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=120,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"cannot run {executable} --version ({type(exc).__name__}: {exc})") from None
        lines = [ln.strip() for ln in (out.stdout or out.stderr).splitlines() if ln.strip()]
        return lines[-1] if lines else None
    from importlib import metadata

    try:
        return metadata.version(ENGINES[engine][0])
    except metadata.PackageNotFoundError:
        return None


class ServedChat(OpenAIChat):
    """A chat VLM served by a serving engine this backend starts itself (the module docstring)."""

    engine = "vllm"

    def __init__(self, model: str | None = None, *, executable: str | None = None, port: int | str | None = None,
                 startup_timeout: float | str = 600.0, max_restarts: int | str = 2,
                 images_per_prompt: int | str = 8, max_logprobs: int | str = 20, args: str = "",
                 **options: Any) -> None:
        if not model:
            raise InputError(f"{self.engine} needs the model to serve: {self.engine}:MODEL (a hub id or a folder)")
        if "base_url" in options:
            raise InputError(f"{self.engine}: the server's address is chosen when it starts; to reach a server you "
                             "started yourself use openai:MODEL?base_url=...")
        package, default, model_flag = ENGINES[self.engine]
        if executable is None and not self._installed(default):
            raise InputError(f"{self.engine} is not installed: pip install 'connote[{self.engine}]' (or name the "
                             f"engine's command with ?executable=PATH)")
        self.version = engine_version(self.engine, executable)
        self.server_args = self._server_args(int(images_per_prompt), int(max_logprobs), shlex.split(args))
        command = ([executable, *default[1:]] if executable else list(default)) if self.engine == "vllm" else \
            ([executable] if executable else list(default))
        command += [model] if model_flag is None else [model_flag, model]
        super().__init__(model, base_url="http://127.0.0.1:0/v1", **options)
        self.server = EngineServer(self.engine, command + self.server_args, startup_timeout=float(startup_timeout),
                                   port=int(port) if port else None)
        self.max_restarts, self.restarts = int(max_restarts), 0
        self.client.alive = self.server.running  # a request to a dead server stops retrying at once

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> ServedChat:
        return cls(weights, **options)

    @staticmethod
    def _installed(command: list[str]) -> bool:
        import importlib.util
        import shutil

        if command[0] == sys.executable:  # python -m package.module
            return importlib.util.find_spec(command[2].split(".")[0]) is not None
        return shutil.which(command[0]) is not None

    def _server_args(self, images: int, logprobs: int, extra: list[str]) -> list[str]:
        """The arguments the tasks need from the server (images per prompt, log-probabilities), then ``args``."""
        if self.engine == "vllm":
            return ["--limit-mm-per-prompt", f'{{"image": {images}}}', "--max-logprobs", str(logprobs), *extra]
        return extra  # SGLang takes any number of images and returns top log-probabilities as asked

    def describe(self) -> dict[str, Any]:
        from connote.models.hub_identity import weights_identity

        d = super().describe()
        d.pop("base_url", None)  # a new port every run: not what made the answers
        if Path(self.client.model).is_dir():  # a local folder by content; a hub id as named (the engine downloads
            d.update(weights_identity(self.client.model, None, None))  # it: its commit appears only after a run)
        d.update({"backend": self.engine, "engine": self.engine, "engine_version": self.version,
                  "server_args": self.server_args, "decoding": "greedy (temperature 0)" if self.temperature == 0
                  else f"temperature {self.temperature:g}"})
        return d

    def close(self) -> None:
        """Stop the server (it starts again on the next request)."""
        self.server.stop()

    def interrupted(self) -> None:
        """Interrupted (Ctrl-C): stop the server at once, so that the requests in flight end now."""
        self.server.stop(grace=5.0)

    def _ready(self) -> None:
        """Start the server if it is not running; a server that died is started again ``max_restarts`` times."""
        if self.server.running():
            return
        if self.server.exit_code() is not None:  # it ran, and died
            if self.restarts >= self.max_restarts:
                raise ApiError(f"the {self.engine} server exited with status {self.server.exit_code()} and was "
                               f"restarted {self.restarts} time(s) already (max_restarts; log {self.server.log}):\n"
                               f"{log_tail(self.server.log) if self.server.log else ''}")
            self.restarts += 1
        self.client.move_to(self.server.start())

    def _served(self, call: Any, n: int) -> list[Any]:
        """``call()`` against a running server; when it died meanwhile, the failed answers say so."""
        try:
            self._ready()
        except ApiError as exc:
            return [exc] * n
        answers = list(call())
        code = self.server.exit_code()
        if code is not None:
            died = ApiError(f"the {self.engine} server exited with status {code} during the call "
                            f"(log {self.server.log}); a rerun retries this item")
            answers = [died if isinstance(a, BaseException) else a for a in answers]
        return answers

    def generate(self, requests: Sequence[Any]) -> list[str]:
        return self._served(lambda: super(ServedChat, self).generate(requests), len(requests))

    def match_probability(self, images: Sequence[Any], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float | Exception]:
        return self._served(lambda: super(ServedChat, self).match_probability(images, captions, pairs), len(pairs))


class VllmChat(ServedChat):
    """``vllm:MODEL``: a chat VLM served by vLLM's OpenAI-compatible server, started by connote."""

    backend = engine = "vllm"


class SglangChat(ServedChat):
    """``sglang:MODEL``: a chat VLM served by SGLang's OpenAI-compatible server, started by connote."""

    backend = engine = "sglang"
