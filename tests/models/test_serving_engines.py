"""A vLLM / SGLang server is reached with the ``openai`` backend, no other code path (docs/serving.md).

The fake below answers on 127.0.0.1 as ``vllm serve MODEL --limit-mm-per-prompt '{"image": 6}'`` does: only
the served model name (404 otherwise, as vLLM), at most 6 images per prompt (400 over it), ``top_logprobs`` at
most ``--max-logprobs`` (20), no API key, and every image a data URL that decodes. The three commands of
docs/serving.md run against it on the sample data: VIST stories (5 photos in one user turn), VMC captions
(6 frames) and CV-Probes yes/no probing with logprobs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai")

from connote.cli import main  # noqa: E402
from tests.support.openai_server import SERVED, FakeVllm, p_yes  # noqa: E402


@pytest.fixture()
def vllm(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server = FakeVllm()
    yield server
    server.close()


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_vist_stories_with_five_photos_in_one_message(vllm: FakeVllm, tmp_path: Path) -> None:
    out = tmp_path / "story"
    assert main(["story", "generate", "--model", f"openai:{SERVED}?base_url={vllm.url}", "--out", str(out),
                 "--no-progress"]) == 0
    stories = rows(out / "stories.jsonl")
    assert stories and all(s["error"] is None for s in stories)
    n_photos = {len(b["messages"][0]["content"]) - 1 for b in vllm.bodies}
    assert n_photos == {5}  # every sample sequence: 5 photos, then the prompt, in one user turn
    assert {s["story"] for s in stories} == {"we saw 5 pictures . it was fun !"}  # the VIST normalisation
    assert set(vllm.auth) == {None}  # no key: no Authorization header


def test_vmc_captions_with_six_frames(vllm: FakeVllm, tmp_path: Path) -> None:
    pytest.importorskip("av")
    out = tmp_path / "vmc"
    assert main(["metaphor", "caption", "--model", f"openai-video:{SERVED}?base_url={vllm.url}", "--out", str(out),
                 "--quiet"]) == 0
    caps = rows(out / "captions.jsonl")
    assert caps and {c["text"] for c in caps} == {"We saw 6 pictures. It was fun!"}
    assert all(b["max_tokens"] == 48 for b in vllm.bodies)  # the task's caption limit


def test_yes_no_probing_reads_the_servers_logprobs(vllm: FakeVllm, tmp_path: Path) -> None:
    out = tmp_path / "probe"
    assert main(["probe", "--model", f"openai:{SERVED}?base_url={vllm.url}&top_logprobs=20", "--out", str(out),
                 "-q"]) in (0, 1)
    items = rows(out / "items.jsonl")
    assert items and all(it["error"] is None for it in items)
    by_caption = {b["messages"][0]["content"][1]["text"]: b for b in vllm.bodies}
    for it in items:
        prompt = next(t for t in by_caption if it["caption"] in t)
        assert it["p_match"] == pytest.approx(p_yes(prompt), abs=1e-9)
        body = by_caption[prompt]
        assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20


@pytest.mark.slow
def test_server_limits_come_back_as_item_errors(vllm: FakeVllm, tmp_path: Path) -> None:
    vllm.max_images = 4  # served with --limit-mm-per-prompt '{"image": 4}': the 5-photo sequences are refused
    out = tmp_path / "story"
    assert main(["story", "generate", "--model", f"openai:{SERVED}?base_url={vllm.url}", "--out", str(out),
                 "--no-progress"]) in (0, 1)
    errors = [s["error"] for s in rows(out / "stories.jsonl")]
    assert errors and all("HTTP 400" in e and "At most 4 image(s)" in e for e in errors)
    out = tmp_path / "probe"
    main(["probe", "--model", f"openai:{SERVED}?base_url={vllm.url}&top_logprobs=21", "--out", str(out), "-q"])
    assert all("top_logprobs must be <= 20" in it["error"] for it in rows(out / "items.jsonl"))
    main(["probe", "--model", f"openai:other-model?base_url={vllm.url}", "--out", str(tmp_path / "p2"), "-q"])
    assert all("does not exist" in it["error"] for it in rows(tmp_path / "p2" / "items.jsonl"))
