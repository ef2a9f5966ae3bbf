"""Is the Hugging Face hub reachable? Asked once per process, in seconds, before huggingface_hub's own
retry loop (which takes a minute or more on a node without internet and ends in a cause with no fix).

The check opens one TCP connection to the hub's host (``HF_ENDPOINT``, else huggingface.co; through the
``HTTPS_PROXY`` when one is set), with the name lookup and the connection bounded together by
``CONNOTE_HUB_TIMEOUT`` seconds (default 3). ``HF_HUB_OFFLINE=1`` skips it.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from urllib.parse import urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _target() -> tuple[str, int, str]:
    """(host, port, what) that a request to the hub would connect to first."""
    endpoint = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    url = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if proxy and url.scheme == "https":
        p = urlparse(proxy if "://" in proxy else f"http://{proxy}")
        if p.hostname:
            return p.hostname, p.port or 80, f"the proxy {p.hostname}:{p.port or 80} for {url.hostname}"
    default_port = 443 if url.scheme == "https" else 80
    return url.hostname or "huggingface.co", url.port or default_port, f"{url.hostname}:{url.port or default_port}"


@functools.cache
def hub_unreachable() -> str | None:
    """``None`` when the hub's host accepts a connection, else why not (one short phrase)."""
    host, port, what = _target()
    try:
        timeout = float(os.environ.get("CONNOTE_HUB_TIMEOUT", "3"))
    except ValueError:
        timeout = 3.0
    result: list[str | None] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(None)
        except OSError as exc:  # name lookup failed, refused, unreachable network, timed out
            reason = exc.strerror or type(exc).__name__ if not isinstance(exc, socket.timeout) else "timed out"
            result.append(f"{what}: {reason}")

    t = threading.Thread(target=probe, daemon=True)  # bounds the name lookup too, which takes no timeout
    t.start()
    t.join(timeout + 0.5)
    if not result:
        return f"{what}: no answer within {timeout:g} s"
    return result[0]


def go_offline() -> None:
    """Use only the local cache for the rest of this process (``HF_HUB_OFFLINE=1``, also for the hub
    library already imported, which reads the variable once)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        import huggingface_hub
        import huggingface_hub.constants as constants
    except ImportError:  # pragma: no cover - transformers brings huggingface_hub
        return
    constants.HF_HUB_OFFLINE = True
    module_globals = getattr(huggingface_hub.is_offline_mode, "__globals__", None)
    if isinstance(module_globals, dict) and "HF_HUB_OFFLINE" in module_globals:
        module_globals["HF_HUB_OFFLINE"] = True


def unreachable_message(weights: str, backend: str, why: str) -> str:
    """The one-line error for hub weights that cannot be fetched: the cause and the fixes."""
    return (f"model weights {weights!r} for {backend}: the Hugging Face hub cannot be reached ({why}) and "
            f"{weights!r} is not in the local cache. Fixes: pass a local folder (saved with save_pretrained), "
            f"download it where there is network (`hf download {weights}`) and copy the cache "
            "(~/.cache/huggingface/hub), or set HF_HUB_OFFLINE=1 to use only what is cached")


def config_json(weights: str, revision: str | None = None) -> dict:
    """A model's ``config.json`` without loading the model: a local folder's, or a hub id's through the local cache
    (fetched when missing and the hub is reachable)."""
    import json
    from pathlib import Path

    folder = Path(weights).expanduser()
    if folder.is_dir():
        path = folder / "config.json"
    else:
        from huggingface_hub import hf_hub_download

        path = Path(hf_hub_download(weights, "config.json", revision=revision))
    found = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(found, dict):
        raise ValueError(f"{path}: a JSON {type(found).__name__}, not an object")
    return found
