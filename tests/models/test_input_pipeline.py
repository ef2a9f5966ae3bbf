"""The engine's input pipeline: pixels prepared on a thread ahead of the group running, scores read back once."""

from __future__ import annotations

import threading
import time
import types

import pytest

from connote.cv_probes.task import CHUNK_PAIRS, chunk_pairs
from connote.models import load_model
from connote.models.engine import prefetch
from tests.support.tiny_models import random_image


def test_prefetch_keeps_order_runs_ahead_on_a_thread_and_is_bounded() -> None:
    seen: list[tuple[int, str]] = []
    started = []

    def prepare(k: int) -> int:
        started.append(k)
        seen.append((k, threading.current_thread().name))
        time.sleep(0.01)
        return k * k

    out = []
    for k, v in prefetch(list(range(8)), prepare, depth=2):
        time.sleep(0.03)  # the consumer is slower: the thread runs ahead, but at most depth (+1 in hand) items
        assert len(started) <= k + 4
        out.append((k, v))
    assert out == [(k, k * k) for k in range(8)]
    assert all(name == "connote-prefetch" for _, name in seen)


def test_prefetch_raises_at_the_failing_item_and_stops_when_the_consumer_stops() -> None:
    def prepare(k: int) -> int:
        if k == 3:
            raise ValueError("bad image 3")
        return k

    got = []
    with pytest.raises(ValueError, match="bad image 3"):
        for k, _ in prefetch(list(range(6)), prepare):
            got.append(k)
    assert got == [0, 1, 2]
    before = threading.active_count()
    for k, _ in prefetch(list(range(100)), lambda k: k):
        if k == 1:
            break
    assert threading.active_count() <= before  # the thread ended with the generator


def test_match_probability_is_the_same_with_many_prefetched_groups(tiny_dirs) -> None:
    folder = tiny_dirs["hf-blip-itm"]
    images = [random_image(s) for s in range(7)]
    captions = ["a man begs on the street", "a cat", "a dog holds a red cup"]
    pairs = [(i, c) for i in range(7) for c in range(3)]
    one = load_model(f"hf-blip-itm:{folder}?batch_size=64")  # one group
    many = load_model(f"hf-blip-itm:{folder}?batch_size=2&image_batch_size=1")  # a group per image
    assert len(many.image_groups(pairs)) == 7 and len(one.image_groups(pairs)) == 1
    a, b = one.match_probability(images, captions, pairs), many.match_probability(images, captions, pairs)
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5
    assert many.score_ids(many.image_states(images[:1]), [0], [many.token_ids(["a cat"])[0]]) == \
        pytest.approx([b[1]], abs=1e-5)


def test_probe_chunks_fill_a_gpu_and_stay_small_on_a_cpu() -> None:
    assert chunk_pairs(types.SimpleNamespace(device="cuda:0")) == CHUNK_PAIRS["cuda"] == 4096
    assert chunk_pairs(types.SimpleNamespace(device="cpu")) == CHUNK_PAIRS["cpu"] == 256
    assert chunk_pairs(object()) == 256  # a backend without a device (an API client)
