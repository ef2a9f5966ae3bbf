"""Running Potato on a study folder, on loopback only.

``serve`` runs ``python -m potato start config.yaml --host 127.0.0.1 -p PORT`` in the study folder.
Studies that need connote's Potato plugin (``connote-collect``: the storyboard and sentence checks) find
it through the ``potato.plugins`` entry point that installing connote registers. When connote runs from a
source tree that was not installed (so no entry point exists), the server is given a small
``.dist-info`` folder under the study's ``.potato-plugin/`` naming the same entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

from connote.collect.project import CONFIG, PLUGIN, check_media_folder, read_manifest
from connote.core.errors import ConnoteError
from connote.core.registry import require

ENTRY_POINT = "connote.collect.plugin:register"


def _plugin_installed() -> bool:
    return any(ep.name == PLUGIN and ep.value == ENTRY_POINT for ep in metadata.entry_points(group="potato.plugins"))


def server_env(folder: Path) -> dict[str, str]:
    """The environment Potato runs in: connote importable, its plugin discoverable, no proxies."""
    import connote

    env = dict(os.environ)
    paths = [str(Path(connote.__file__).resolve().parent.parent)]
    if not _plugin_installed():
        dist = folder / ".potato-plugin" / "connote_collect_plugin-0.dist-info"
        dist.mkdir(parents=True, exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: connote-collect-plugin\nVersion: 0\n")
        (dist / "entry_points.txt").write_text(f"[potato.plugins]\n{PLUGIN} = {ENTRY_POINT}\n")
        paths.insert(0, str(dist.parent.resolve()))
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def potato_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """The command line that starts Potato on this study's config."""
    return [sys.executable, "-m", "potato", "start", CONFIG, "-p", str(port), "--host", host]


def start(folder: str | Path, port: int, *, host: str = "127.0.0.1", log: Path | None = None) -> subprocess.Popen:
    """Start Potato in the background (the caller stops it); output goes to ``log`` or the terminal."""
    require("potato", "collect")
    folder = Path(folder).resolve()
    read_manifest(folder)
    check_media_folder(folder)
    out = open(log, "ab") if log else None  # noqa: SIM115 - handed to the child, closed with it
    return subprocess.Popen(potato_command(port, host), cwd=folder, env=server_env(folder),
                            stdout=out or None, stderr=subprocess.STDOUT if out else None,
                            start_new_session=True)


def wait_ready(port: int, proc: subprocess.Popen | None = None, timeout: float = 90.0,
               host: str = "127.0.0.1") -> float:
    """Seconds until the server answers HTTP; raises if it exits or does not answer in time."""
    t0 = time.monotonic()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise ConnoteError(f"Potato exited with status {proc.returncode} before answering")
        try:
            with opener.open(f"http://{host}:{port}/", timeout=2):
                return time.monotonic() - t0
        except urllib.error.HTTPError:
            return time.monotonic() - t0
        except OSError:
            time.sleep(0.2)
    raise ConnoteError(f"Potato did not answer on {host}:{port} within {timeout:.0f} s")


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop a server started by :func:`start` (SIGTERM, then SIGKILL)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _Terminated(Exception):
    """SIGTERM or SIGHUP arrived while serving."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated(signum)


def serve(folder: str | Path, port: int = 8000, host: str = "127.0.0.1") -> int:
    """Run Potato in the foreground until interrupted; returns its exit status.

    Ctrl-C, SIGTERM and SIGHUP stop the server this started (it runs in its own session, so a signal to
    connote alone would otherwise leave it serving) and return 0.
    """
    import signal
    import threading

    proc = start(folder, port, host=host)
    print(f"Potato serves {folder} on http://{host}:{port}/ (Ctrl-C stops it)", file=sys.stderr)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _raise_terminated)
    try:
        return proc.wait()
    except (KeyboardInterrupt, _Terminated):
        return 0
    finally:
        stop(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def validate(folder: str | Path) -> subprocess.CompletedProcess:
    """``potato validate --strict`` on the study's config (with the plugin discoverable)."""
    require("potato", "collect")
    folder = Path(folder).resolve()
    return subprocess.run([sys.executable, "-m", "potato", "validate", CONFIG, "--strict"], cwd=folder,
                          env=server_env(folder), capture_output=True, text=True, timeout=300)
