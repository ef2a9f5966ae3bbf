"""A hub id that cannot be reached fails in seconds with the cause and the fixes, before huggingface_hub's
retry loop (issue 22, item 3). The 'hub' here is a closed port on 127.0.0.1 (HF_ENDPOINT), so nothing
leaves this machine."""

from __future__ import annotations

import socket
import time

import pytest

from connote.cli import main


@pytest.fixture
def closed_endpoint(monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: a connection is refused at once
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    from connote.models import hub

    hub.hub_unreachable.cache_clear()
    yield port
    hub.hub_unreachable.cache_clear()


def test_unreachable_hub_fails_fast_with_cause_and_fixes(closed_endpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    t0 = time.monotonic()
    code = main(["probe", "--model", "hf-clip:nobody/no-such-model", "--out", str(tmp_path / "run"), "--quiet"])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2
    assert elapsed < 20  # seconds, not huggingface_hub's minute of retries (no timing is asserted tighter)
    assert f"127.0.0.1:{closed_endpoint}" in err and "cannot be reached" in err
    assert "local folder" in err and "HF_HUB_OFFLINE=1" in err and "hf download nobody/no-such-model" in err
    assert "Traceback" not in err


def test_probe_reports_the_connection_it_tried(closed_endpoint):
    from connote.models.hub import hub_unreachable

    why = hub_unreachable()
    assert why is not None and why.startswith(f"127.0.0.1:{closed_endpoint}")


def test_a_listening_hub_is_reachable(monkeypatch):
    from connote.models import hub

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        monkeypatch.delenv("HTTPS_PROXY", raising=False)
        monkeypatch.delenv("https_proxy", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.getsockname()[1]}")
        hub.hub_unreachable.cache_clear()
        assert hub.hub_unreachable() is None
    finally:
        srv.close()
        hub.hub_unreachable.cache_clear()
