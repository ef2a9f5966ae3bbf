"""How many requests an API backend keeps in flight, raised and lowered from the server's answers.

``ConcurrencyLimit`` gates each HTTP attempt of a :class:`connote.models.chat_client.ChatClient`
(every thread of a backend's pool takes a slot before it sends and gives it back with what the server
said). With ``adaptive`` on it works as TCP's congestion window does:

* **slow start**: until the server first throttles (or queues), each answered request adds half a slot
  (the limit grows by half every round trip: a gentler overshoot past the server's limit than TCP's
  doubling, so fewer refusals when it is found);
* **additive increase**: after that, each answered request adds ``1 / limit`` (one more slot per round
  of answers), up to ``ceiling``; within 10 % of the limit at which the server last throttled, a twentieth
  of that (the known edge is probed slowly, so throttled answers stay rare; past it, growth resumes);
* **decrease**: a throttled answer (HTTP 429, or 503: overloaded) lowers the limit to what the server was
  serving when it refused one more: the larger of this client's requests still in flight and the
  concurrency its answers of the last second (at least 4 round trips) had (sum of their latencies / the
  window: Little's law; under a rate limit, in-flight requests at the moment of a refusal undercount what the
  server sustains). Every throttled answer of one burst (one round trip) lowers it further that way, but
  the burst never cuts below 70 % of the limit it began at (a 429 at a call's tail, with few in flight,
  says little about the server's capacity), down to 1;
* **Retry-After**: the throttled request itself comes back when the answer says (``Retry-After`` /
  ``retry-after-ms``: :class:`connote.models.chat_client.ChatClient`); from the second throttled answer of a
  burst on, every new request of the client is held until then too (one refusal is the limit being probed
  and the decrease answers it; more say the server is over its limit for everyone, so sending more before
  then only collects more refusals);
* **latency**: while the answers' smoothed latency is over ``latency_factor`` x the fastest seen (the
  server is queueing rather than refusing), the limit stops growing.

With ``adaptive`` off it is a plain pool of ``start`` slots (the backends' behaviour before).
The limit lives as long as the client, so it carries over from one batch of items to the next.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

#: Requests in flight at the start of an adaptive limit, and a fixed pool's size (the backends' defaults).
ADAPTIVE_START, FIXED_POOL = 8, 4
#: Answers that say "too much": the limit is lowered (at most by ``DECREASE`` per burst).
THROTTLE_STATUS = frozenset({429, 503})
#: The deepest cut of one burst of throttled answers (CUBIC's 0.7 rather than Reno's 0.5: a server's limit is a
#: fixed rate, and the Retry-After hold already spaces the next sends, so a smaller cut keeps more of the limit).
DECREASE = 0.7
#: The throttled answer of a burst from which on a Retry-After holds every new request, not only the told one.
HOLD_FROM = 2
#: Slots an answer adds in slow start; and the divisor of the additive step near the last throttled level.
SLOW_START_STEP, EDGE_SLOWDOWN = 0.5, 20


@dataclass
class ConcurrencyLimit:
    start: int = ADAPTIVE_START
    ceiling: int = 32
    adaptive: bool = True
    latency_factor: float = 3.0
    #: the limit (a float: it grows by fractions), requests in flight, and what was seen
    limit: float = field(init=False)
    in_flight: int = field(init=False, default=0)
    answered: int = field(init=False, default=0)
    throttled: int = field(init=False, default=0)
    peak: int = field(init=False, default=0)
    _paused_until: float = field(init=False, default=0.0)
    _last_cut: float = field(init=False, default=float("-inf"))
    _fastest: float | None = field(init=False, default=None)
    _smoothed: float | None = field(init=False, default=None)
    _slow_start: bool = field(init=False, default=True)
    _edge: float = field(init=False, default=float("inf"))
    _burst_base: float = field(init=False, default=0.0)
    _burst: int = field(init=False, default=0)
    _answers: deque = field(init=False, default_factory=deque)

    def __post_init__(self) -> None:
        if self.start < 1 or self.ceiling < 1:
            raise ValueError(f"concurrency and max_concurrency must be at least 1, not {self.start} and {self.ceiling}")
        if self.latency_factor < 0:
            raise ValueError(f"latency_factor must be >= 0 (0: latency is not watched), not {self.latency_factor}")
        self.ceiling = max(self.ceiling, self.start) if not self.adaptive else self.ceiling
        self.limit = float(min(self.start, self.ceiling))
        self._cond = threading.Condition()

    @property
    def pool_size(self) -> int:
        """Threads a backend needs to reach the limit's highest value."""
        return self.ceiling if self.adaptive else self.start

    def acquire(self, end: float | None = None) -> float:
        """Wait for a slot (and for any Retry-After hold to pass); returns the start time for :meth:`release`.

        Waits at most until ``end`` (a ``time.monotonic`` deadline) and then goes ahead, so that the
        request's own deadline ends it with its usual message."""
        with self._cond:
            while True:
                now = time.monotonic()
                if end is not None and now >= end:
                    break
                wait = self._paused_until - now if self.adaptive else 0.0
                if wait <= 0 and self.in_flight < int(self.limit):
                    break
                timeout = wait if wait > 0 else None
                if end is not None:
                    timeout = min(timeout if timeout is not None else end - now, end - now)
                self._cond.wait(timeout)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return time.monotonic()

    def release(self, started: float, *, status: int | None = None, retry_after: float | None = None,
                failed: bool = False) -> None:
        """Give the slot back with the attempt's HTTP status (None: answered) or ``failed`` (no HTTP answer:
        a timeout or a refused connection, which neither raises nor lowers the limit)."""
        with self._cond:
            self.in_flight -= 1
            now = time.monotonic()
            latency = now - started
            if status in THROTTLE_STATUS:
                self.throttled += 1
                if self.adaptive:
                    round_trip = self._fastest if self._fastest is not None else latency
                    self._slow_start = False
                    if now - self._last_cut >= round_trip:  # a new burst of throttled answers
                        self._edge = self._burst_base = self.limit
                        self._last_cut = now
                        self._burst = 0
                    self._burst += 1
                    if retry_after and self._burst >= HOLD_FROM:
                        self._paused_until = max(self._paused_until, now + retry_after)
                    # refused while serving the others in flight / what it answered of late (see the docstring)
                    served = self._served_concurrency(now)
                    self.limit = min(self.limit, max(1.0, self._burst_base * DECREASE, float(self.in_flight), served))
            elif status is None and not failed:
                self.answered += 1
                if self.adaptive:
                    self._fastest = latency if self._fastest is None else min(self._fastest, latency)
                    self._smoothed = latency if self._smoothed is None else 0.8 * self._smoothed + 0.2 * latency
                    self._answers.append((now, latency))
                    self._served_concurrency(now)  # drops the answers older than its window
                    queueing = self.latency_factor > 0 and self._smoothed > self.latency_factor * self._fastest
                    if queueing:
                        self._slow_start = False
                    else:
                        step = SLOW_START_STEP if self._slow_start else 1 / self.limit
                        if 0.9 * self._edge <= self.limit <= 1.1 * self._edge:
                            step /= EDGE_SLOWDOWN
                        self.limit = min(float(self.ceiling), self.limit + step)
            self._cond.notify_all()

    def _served_concurrency(self, now: float) -> float:
        """Requests the server answered at once on average over the last second (at least 4 round trips)."""
        window = max(1.0, 4 * (self._fastest or 0.0))
        while self._answers and self._answers[0][0] < now - window:
            self._answers.popleft()
        return sum(latency for _, latency in self._answers) / window

    def hold_left(self) -> float:
        """Seconds until a Retry-After hold on new requests ends (0: none)."""
        with self._cond:
            return max(0.0, self._paused_until - time.monotonic())

    def stats(self) -> dict[str, float | int]:
        with self._cond:
            return {"limit": round(self.limit, 2), "peak_in_flight": self.peak, "answered": self.answered,
                    "throttled": self.throttled}
