"""Speed in every result: items/s of what a run computed (reused rows apart), and for generation the tokens,
tokens/s and time to first token that the backend measured; shown by ``connote report`` in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.runs.speed import new_token_count, speed_block, speed_line


def test_new_tokens_stop_at_the_first_end_token_and_ignore_padding() -> None:
    torch = pytest.importorskip("torch")
    new = torch.tensor([[5, 6, 2, 0, 0], [7, 8, 9, 10, 11]])  # row 1 ends at eos 2; row 2 ran to the limit
    assert new_token_count(new, 2, 0) == 3 + 5
    assert new_token_count(new, [2, 9], 0) == 3 + 3
    assert new_token_count(torch.tensor([[5, 6, 0, 0]]), None, 0) == 2  # no end token: trailing padding dropped


def test_the_speed_block_counts_reused_rows_apart() -> None:
    meter = {"tokens": 0, "calls": 0, "first_token_seconds": []}
    block = speed_block(meter, computed=4, resumed=6, seconds=2.0)
    assert block == {"items": 4, "reused": 6, "seconds": 2.0, "items_per_s": 2.0}
    meter = {"tokens": 100, "calls": 2, "first_token_seconds": [0.1, 0.3]}
    block = speed_block(meter, computed=4, resumed=0, seconds=2.0)
    assert (block["tokens"], block["tokens_per_s"], block["time_to_first_token_s"]) == (100, 50.0, 0.2)
    assert speed_line(block) == "4 item(s) in 2.0 s (2.0 items/s), 100 tokens (50.0 tokens/s, first token 0.2 s)"
    assert speed_block(meter | {"calls": 0}, computed=0, resumed=3, seconds=0.0)["items_per_s"] is None


@pytest.mark.slow
def test_a_tiny_vlm_story_run_records_tokens_and_first_token(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("torch")
    from tests.support import tiny_models

    llava = tiny_models.tiny_llava(tmp_path / "m")
    out = tmp_path / "story"
    assert main(["vist", "generate", "--model", f"hf-vlm:{llava}?max_new_tokens=6", "--out", str(out),
                 "--no-progress"]) == 0
    speed = json.loads((out / "results.json").read_text())["speed"]
    assert speed["items"] == 3 and speed["reused"] == 0 and speed["items_per_s"] > 0
    assert 3 <= speed["tokens"] <= 3 * 6  # each story at most max_new_tokens, at least its one token
    assert speed["tokens_per_s"] > 0 and 0 < speed["time_to_first_token_s"] <= speed["seconds"]
    # a resumed run computes nothing: no rate, the reused rows counted apart
    assert main(["vist", "generate", "--model", f"hf-vlm:{llava}?max_new_tokens=6", "--out", str(out),
                 "--no-progress"]) == 0
    again = json.loads((out / "results.json").read_text())["speed"]
    assert (again["items"], again["reused"], again["items_per_s"]) == (0, 3, None)
    assert "tokens" not in again  # nothing generated in this run
    capsys.readouterr()
    assert main(["report", str(out), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "Speed (what each run computed itself)" in text and "| 3 |" in text


def test_an_api_runs_tokens_are_the_servers_completion_tokens(tmp_path: Path, serve) -> None:  # noqa: ANN001
    """An OpenAI-compatible server on 127.0.0.1 reports ``usage.completion_tokens``, a different count for each
    request, and answers one request without ``usage``: the run's tokens are the sum the server reported. The
    requests go out from a pool of threads, so the meter is added to from several at once."""
    import threading

    from tests.support import openai_server

    reported: list[int | None] = []
    lock = threading.Lock()

    def story(body: dict) -> dict:
        n_images = sum(1 for c in body["messages"][0]["content"] if c["type"] == "image_url")
        reply: dict = {"choices": [{"message": {"content": f"We saw {n_images} photos."}}]}
        with lock:
            tokens = None if not reported else 7 + 3 * n_images + len(reported)  # the first answer has no usage
            reported.append(tokens)
        if tokens is not None:
            reply["usage"] = {"prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": 100 + tokens}
        return reply

    server = serve([openai_server.answer(story)])
    out = tmp_path / "story"
    assert main(["vist", "generate", "--model", f"openai:test-model?base_url={server.url}&max_retries=0",
                 "--out", str(out), "--no-progress"]) == 0
    assert len(reported) == 3 and reported.count(None) == 1
    speed = json.loads((out / "results.json").read_text())["speed"]
    assert speed["items"] == 3 and speed["tokens"] == sum(t for t in reported if t is not None)
    assert speed["tokens_per_s"] > 0 and speed["time_to_first_token_s"] is None  # no streaming: not timed


def test_a_streamed_api_run_records_its_time_to_first_token(tmp_path: Path, serve) -> None:  # noqa: ANN001
    """``stream=true``: the answers come as server-sent events from 127.0.0.1; the stories are the joined text,
    the tokens the usage the last event carried, and the time to first token is measured."""
    from tests.support import openai_server

    usage = {"prompt_tokens": 50, "completion_tokens": 4, "total_tokens": 54}
    server = serve([openai_server.events(["We ", "saw ", "it", "."], usage=usage, delay=0.05)])
    out = tmp_path / "story"
    assert main(["vist", "generate", "--model", f"openai:test-model?base_url={server.url}&stream=true",
                 "--out", str(out), "--no-progress"]) == 0
    assert len(server.requests) == 3 and all(r["body"]["stream"] is True for r in server.requests)
    rows = [json.loads(line) for line in (out / "stories.jsonl").read_text().splitlines()]
    assert [r["story"] for r in rows] == ["we saw it ."] * 3  # the joined text, normalised as VIST stories are
    speed = json.loads((out / "results.json").read_text())["speed"]
    assert speed["tokens"] == 3 * 4
    assert 0 < speed["time_to_first_token_s"] < 0.15 < speed["seconds"]  # before the three 0.05 s pauses


def test_the_first_token_waits_for_a_cuda_prefill_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA the first step's logits exist when the prefill's kernels are done, not when they are queued: the
    time-to-first-token processor waits for the device at its first call only (CPU tensors: never)."""
    torch = pytest.importorskip("torch")
    from connote.runs.speed import _FirstStep

    waits: list[object] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: waits.append(device))

    class CudaScores:  # what a CUDA tensor tells the processor (no GPU here)
        is_cuda, device = True, "cuda:0"

    first = _FirstStep(0.0)
    scores = CudaScores()
    assert first(None, scores) is scores and first(None, scores) is scores
    assert waits == ["cuda:0"] and first.seconds is not None
    cpu = _FirstStep(0.0)
    cpu(None, torch.zeros(1, 4))
    assert waits == ["cuda:0"] and cpu.seconds is not None
