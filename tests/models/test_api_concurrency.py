"""The API backends' adaptive concurrency: AIMD from the server's answers, Retry-After held for every thread,
and every item completed against a loopback server that enforces a rate and a concurrency limit."""

from __future__ import annotations

import threading
import time

import pytest

from connote.models.concurrency import DECREASE, ConcurrencyLimit
from tests import benchmark_scripts


def test_slow_start_then_additive_increase_and_one_cut_per_round_trip() -> None:
    c = ConcurrencyLimit(start=2, ceiling=8)
    for _ in range(3):  # slow start: one slot per answer (each answer took 0.5 s: the round trip)
        c.release(c.acquire() - 0.5)
    assert c.limit == 5.0
    c.release(c.acquire() - 0.5, status=429)  # "too many"
    assert c.limit == pytest.approx(5 * DECREASE) and c.throttled == 1
    c.release(c.acquire(), status=429)  # the same burst, within a round trip of the cut: no second cut
    assert c.limit == pytest.approx(5 * DECREASE)
    before = c.limit
    c.release(c.acquire() - 0.5)  # after a cut: additive
    assert c.limit == pytest.approx(before + 1 / before)
    while c.limit < 4.5:
        c.release(c.acquire() - 0.5)
    before = c.limit
    c.release(c.acquire() - 0.5)  # within 10 % of the edge (5) where the server throttled: a tenth of a step
    assert c.limit == pytest.approx(before + 0.1 / before)
    for _ in range(200):
        c.release(c.acquire() - 0.5)
    assert c.limit == 8.0  # the ceiling
    assert c.stats()["limit"] == 8.0 and c.stats()["throttled"] == 2 and c.stats()["peak_in_flight"] == 1


def test_retry_after_holds_every_new_request_until_it_passes() -> None:
    c = ConcurrencyLimit(start=4, ceiling=4)
    c.release(c.acquire(), status=429, retry_after=0.3)
    t = time.monotonic()
    c.release(c.acquire())
    assert time.monotonic() - t >= 0.29
    fixed = ConcurrencyLimit(start=4, adaptive=False)
    fixed.release(fixed.acquire(), status=429, retry_after=5)
    t = time.monotonic()
    fixed.acquire()
    assert time.monotonic() - t < 0.1 and fixed.limit == 4.0  # a fixed pool: no hold, no cut


def test_a_full_limit_waits_for_a_slot_and_a_deadline_ends_the_wait() -> None:
    c = ConcurrencyLimit(start=1, ceiling=1)
    first = c.acquire()
    threading.Timer(0.2, lambda: c.release(first)).start()
    t = time.monotonic()
    c.release(c.acquire())
    assert 0.15 <= time.monotonic() - t < 2
    held = c.acquire()
    t = time.monotonic()
    c.acquire(end=time.monotonic() + 0.1)  # the request's deadline: go ahead, the attempt then times out
    assert time.monotonic() - t < 1 and c.in_flight == 2
    c.release(held)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConcurrencyLimit(start=0)
    with pytest.raises(ValueError, match="latency_factor"):
        ConcurrencyLimit(latency_factor=-1)


@pytest.fixture()
def limited():
    pytest.importorskip("openai")
    LimitedServer = benchmark_scripts.load("api_throughput").LimitedServer  # noqa: N806

    servers = []

    def make(**kw):  # noqa: ANN003
        servers.append(LimitedServer(max_requests=2000, max_seconds=60, **kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


@pytest.mark.slow
def test_adaptive_backend_backs_off_on_429_and_completes_every_item(limited) -> None:  # noqa: ANN001
    from PIL import Image

    from connote.models.protocols import GenerationRequest
    from connote.models.registry import load_model

    server = limited(rate=1000, max_concurrent=3, latency=0.05)
    model = load_model(f"openai:m?base_url={server.url}&backoff=0.05&max_concurrency=16")
    image = Image.new("RGB", (16, 16), (10, 200, 10))
    out = model.generate([GenerationRequest(images=[image], prompt=f"story {i}") for i in range(60)])
    assert out == ["Yes"] * 60  # every item completed
    counts = server.counts()
    assert counts["ok"] == 60 and counts["peak_in_flight"] <= 3
    assert counts["over_concurrency"] >= 1  # the controller probed past 3 in flight and was told so
    stats = model.client.concurrency.stats()
    assert stats["throttled"] == counts["over_concurrency"] and stats["answered"] == 60
    assert stats["limit"] < 8  # cut back towards the server's 3, not left at the ceiling of 16
    assert counts["over_concurrency"] < 30  # backed off: no storm of 429s


def test_fixed_pool_keeps_four_in_flight(limited) -> None:  # noqa: ANN001
    from PIL import Image

    from connote.models.registry import load_model

    server = limited(rate=1000, max_concurrent=8, latency=0.1)
    model = load_model(f"openai:m?base_url={server.url}&adaptive=false")
    image = Image.new("RGB", (16, 16))
    p = model.match_probability([image], [f"c{i}" for i in range(16)], [(0, i) for i in range(16)])
    assert p == [pytest.approx(0.8320, abs=1e-4)] * 16  # exp(-0.2) / (exp(-0.2) + exp(-1.8))
    assert server.counts()["peak_in_flight"] == 4 and server.counts()["over_concurrency"] == 0
