"""The API backends' adaptive concurrency: AIMD from the server's answers, Retry-After held for every thread,
and every item completed against a loopback server that enforces a rate and a concurrency limit."""

from __future__ import annotations

import threading
import time

import pytest

from connote.models.concurrency import DECREASE, EDGE_SLOWDOWN, ConcurrencyLimit
from tests.support import benchmark_scripts


def test_slow_start_then_additive_increase_and_one_cut_per_round_trip() -> None:
    c = ConcurrencyLimit(start=4, ceiling=8)
    for _ in range(4):  # slow start: half a slot per answer (each answer took 0.5 s: the round trip)
        c.release(c.acquire() - 0.5)
    assert c.limit == 6.0
    c.release(c.acquire() - 0.5, status=429)  # "too many": none in flight, 1 served of late -> the 30 % floor
    assert c.limit == pytest.approx(6 * DECREASE) and c.throttled == 1
    c.release(c.acquire(), status=429)  # the same burst, within a round trip of the cut: no second cut
    assert c.limit == pytest.approx(6 * DECREASE)
    before = c.limit
    c.release(c.acquire() - 0.5)  # after a cut: additive
    assert c.limit == pytest.approx(before + 1 / before)
    while c.limit < 0.9 * 6:
        c.release(c.acquire() - 0.5)
    before = c.limit
    c.release(c.acquire() - 0.5)  # within 10 % of the edge (6) where the server throttled: a twentieth of a step
    assert c.limit == pytest.approx(before + 1 / before / EDGE_SLOWDOWN) and EDGE_SLOWDOWN == 20
    for _ in range(300):
        c.release(c.acquire() - 0.5)
    assert c.limit == 8.0  # the ceiling
    assert c.stats()["limit"] == 8.0 and c.stats()["throttled"] == 2 and c.stats()["peak_in_flight"] == 1


def test_under_a_rate_limit_the_cut_keeps_what_the_server_answered_of_late() -> None:
    c = ConcurrencyLimit(start=12, ceiling=12)
    for _ in range(40):  # 40 answers of 1 s each within the window of 4 round trips: 10 served at once
        c.release(c.acquire() - 1.0)
    held = [c.acquire() for _ in range(3)]  # a lull: 3 in flight when a refusal comes
    c.release(held.pop(), status=429, retry_after=0.01)
    assert c.limit == pytest.approx(10.0, abs=0.01)  # not the 2 still in flight, nor only the 30 % cut (8.4)
    for t in held:
        c.release(t)


def test_a_throttled_answer_lowers_the_limit_to_what_the_server_was_serving() -> None:
    c = ConcurrencyLimit(start=16, ceiling=32)
    c.release(c.acquire() - 10)  # one answer in 10 s: the round trip (every 429 below is one burst)
    c.release(c.acquire() - 10)
    assert c.limit == 17.0  # slow start
    held = [c.acquire() for _ in range(15)]
    c.release(held.pop(), status=429)  # refused while serving the 14 others (of late: 2 x 10 s / 40 s = 0.5)
    assert c.limit == 14.0 and c.in_flight == 14
    c.release(held.pop(), status=429)  # the same burst: lowered again to the 13 still in flight
    assert c.limit == 13.0
    for _ in range(5):  # ... but the burst never cuts below 70 % of the 17 it began at
        c.release(held.pop(), status=429)
    assert c.limit == pytest.approx(17 * DECREASE) and c.in_flight == 8 and c.throttled == 7
    for t in held:
        c.release(t - 10)
    expect = 17 * DECREASE
    for _ in range(8):  # after a cut: additive (11.9 is below the edge zone of 17 +- 10 %: full steps)
        expect += 1 / expect
    assert c.limit == pytest.approx(expect) and round(c.limit, 3) == 12.556
    tail = ConcurrencyLimit(start=10, ceiling=32)  # a 429 at a call's tail, one other in flight: a 30 % cut
    other = tail.acquire()
    tail.release(tail.acquire(), status=429)
    assert tail.limit == pytest.approx(10 * DECREASE)
    tail.release(other)


def test_retry_after_holds_every_new_request_from_the_second_throttled_answer_of_a_burst() -> None:
    c = ConcurrencyLimit(start=4, ceiling=4)
    c.release(c.acquire() - 10)
    c.release(c.acquire(), status=429, retry_after=30)
    assert c.hold_left() == 0.0  # one refusal: the limit was probed, the told request alone waits
    c.release(c.acquire(), status=429, retry_after=30)
    assert 29 < c.hold_left() <= 30  # a second within the round trip: every new request waits
    t = time.monotonic()
    c.acquire(end=time.monotonic() + 0.2)  # held (its deadline ends the wait)
    assert time.monotonic() - t >= 0.19
    fixed = ConcurrencyLimit(start=4, adaptive=False)
    for _ in range(3):
        fixed.release(fixed.acquire(), status=429, retry_after=5)
    assert fixed.hold_left() == 0.0 and fixed.limit == 4.0  # a fixed pool: no hold, no cut


def test_the_backend_starts_adaptive_at_8_and_a_fixed_pool_at_4() -> None:
    pytest.importorskip("openai")
    from connote.models.concurrency import ADAPTIVE_START, FIXED_POOL
    from connote.models.registry import load_model

    adaptive = load_model("openai:m?base_url=http://127.0.0.1:9/v1").client.concurrency
    assert (adaptive.start, adaptive.limit, adaptive.adaptive, adaptive.ceiling) == (8, 8.0, True, 32)
    fixed = load_model("openai:m?base_url=http://127.0.0.1:9/v1&adaptive=false").client.concurrency
    assert (fixed.start, fixed.limit, fixed.adaptive, fixed.pool_size) == (4, 4.0, False, 4)
    assert (ADAPTIVE_START, FIXED_POOL) == (8, 4)
    ceiling = load_model("openai:m?base_url=http://127.0.0.1:9/v1&concurrency=2&max_concurrency=6").client
    assert (ceiling.concurrency.limit, ceiling.concurrency.pool_size) == (2.0, 6)


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
