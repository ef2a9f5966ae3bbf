"""Speed of a run, recorded in every results file (``speed``) and shown by ``connote report``.

The runner times the batches it computes (items/s over what this run computed; rows reused from the store are
counted apart). Generation backends tell the meter what they generated while a run is measuring:
:func:`hf_generate` (every Hugging Face ``generate`` call: new tokens counted up to the end-of-sequence token,
time to first token from the first decoding step, timed by a logits processor) and :func:`add_tokens` (an
OpenAI-compatible server's ``usage.completion_tokens``; no time to first token without streaming).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_LOCK = threading.Lock()
_METER: dict[str, Any] | None = None  # the meter of the run being measured (a pool's threads add to it too)


@contextmanager
def measuring() -> Iterator[dict[str, Any]]:
    """Collect what generation backends report while the block runs; yields the meter
    (``tokens``, ``first_token_seconds``: one per generate call that could time it)."""
    global _METER
    meter: dict[str, Any] = {"tokens": 0, "calls": 0, "first_token_seconds": []}
    with _LOCK:
        before, _METER = _METER, meter
    try:
        yield meter
    finally:
        with _LOCK:
            _METER = before


def add_tokens(n: int, first_token_seconds: float | None = None) -> None:
    """Count ``n`` generated tokens of one call (and its time to first token when known)."""
    with _LOCK:
        if _METER is None:
            return
        _METER["tokens"] += int(n)
        _METER["calls"] += 1
        if first_token_seconds is not None:
            _METER["first_token_seconds"].append(float(first_token_seconds))


def new_token_count(new_ids: Any, eos: Any, pad: Any) -> int:
    """Tokens generated in a batch of new ids: each row up to and including its first end-of-sequence token
    (the padding after it is not generated)."""
    stops = {int(t) for t in ([] if eos is None else eos if isinstance(eos, (list, tuple)) else [eos])}
    total = 0
    for row in new_ids.tolist():
        n = 0
        for t in row:
            n += 1
            if t in stops:
                break
        while n and not stops and pad is not None and row[n - 1] == pad:
            n -= 1  # no end token known: trailing padding is not generated
        total += n
    return total


class _FirstStep:
    """A logits processor that notes when the first decoding step's logits exist (the first token's time).

    On CUDA the processor runs as soon as the prefill's kernels are queued, not when they are done: the first
    call waits for the device, so the time is the prefill's, not its launch's. That is one wait per ``generate``
    call (transformers 5 defers its stopping check so that the decoding steps need none): the CPU starts queueing
    the first decoding step after the prefill instead of during it."""

    def __init__(self, start: float) -> None:
        self.start, self.seconds = start, None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.seconds is None:
            if getattr(scores, "is_cuda", False):
                import torch

                torch.cuda.synchronize(scores.device)
            self.seconds = time.perf_counter() - self.start
        return scores


def hf_generate(model: Any, prompt_length: int, **kwargs: Any) -> Any:
    """``model.generate(**kwargs)``, reporting its new tokens and time to first token to the meter (when one is
    measuring). ``prompt_length``: the input length the returned ids start with (0 for encoder-decoder models
    whose output holds only new ids)."""
    if _METER is None:
        return model.generate(**kwargs)
    from transformers import LogitsProcessorList

    first = _FirstStep(time.perf_counter())
    processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
    processors.append(first)
    ids = model.generate(**kwargs, logits_processor=processors)
    config = getattr(model, "generation_config", None)
    eos = kwargs.get("eos_token_id", getattr(config, "eos_token_id", None))
    pad = kwargs.get("pad_token_id", getattr(config, "pad_token_id", None))
    add_tokens(new_token_count(ids[:, prompt_length:], eos, pad), first.seconds)
    return ids


def speed_block(meter: dict[str, Any], *, computed: int, resumed: int, seconds: float) -> dict[str, Any]:
    """The ``speed`` block of a results file: this run's items, seconds computing and items/s (rows reused
    counted apart); for generation also tokens, tokens/s and mean time to first token when measured."""
    block: dict[str, Any] = {"items": computed, "reused": resumed, "seconds": round(seconds, 3),
                             "items_per_s": round(computed / seconds, 3) if computed and seconds > 0 else None}
    if meter["calls"]:
        block["tokens"] = meter["tokens"]
        block["tokens_per_s"] = round(meter["tokens"] / seconds, 2) if seconds > 0 else None
        firsts = meter["first_token_seconds"]
        block["time_to_first_token_s"] = round(sum(firsts) / len(firsts), 4) if firsts else None
    return block


def speed_line(speed: dict[str, Any] | None) -> str:
    """One line for a terminal or a report: ``12 items in 3.4 s (3.5 items/s), 480 tokens (141 tokens/s, first
    token 0.05 s); 4 reused``; empty when the results hold no speed."""
    if not isinstance(speed, dict):
        return ""
    items, seconds, rate = speed.get("items"), speed.get("seconds"), speed.get("items_per_s")
    text = f"{items} item(s) in {seconds} s" + (f" ({rate} items/s)" if rate is not None else "")
    if speed.get("tokens") is not None:
        extra = [f"{speed['tokens_per_s']} tokens/s"] if speed.get("tokens_per_s") is not None else []
        if speed.get("time_to_first_token_s") is not None:
            extra.append(f"first token {speed['time_to_first_token_s']} s")
        text += f", {speed['tokens']} tokens" + (f" ({', '.join(extra)})" if extra else "")
    if speed.get("reused"):
        text += f"; {speed['reused']} reused"
    return text
