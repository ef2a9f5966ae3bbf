"""A vLLM / SGLang server is reached with the ``openai`` backend, no other code path (docs/serving.md).

The fake below answers on 127.0.0.1 as ``vllm serve MODEL --limit-mm-per-prompt '{"image": 6}'`` does: only
the served model name (404 otherwise, as vLLM), at most 6 images per prompt (400 over it), ``top_logprobs`` at
most ``--max-logprobs`` (20), no API key, and every image a data URL that decodes. The three commands of
docs/serving.md run against it on the sample data: VIST stories (5 photos in one user turn), VMC captions
(6 frames) and CV-Probes yes/no probing with logprobs.
"""

from __future__ import annotations

import base64
import io
import json
import math
import zlib
from pathlib import Path

import pytest
from PIL import Image

pytest.importorskip("openai")

from connote.cli import main  # noqa: E402
from tests import openai_server  # noqa: E402

SERVED = "llava-hf/llava-onevision-qwen2-7b-ov-hf"


def p_yes(caption_prompt: str) -> float:
    """The fake's p(Yes) for a prompt: fixed by its text, so the test knows each item's number."""
    return 0.05 + 0.9 * (zlib.crc32(caption_prompt.encode()) % 1000) / 1000


class FakeVllm(openai_server.Server):
    def __init__(self, *, max_images: int = 6, max_logprobs: int = 20) -> None:
        self.max_images, self.max_logprobs = max_images, max_logprobs
        super().__init__([self.reply])

    def reply(self, h) -> None:  # noqa: ANN001
        code, obj = self.answer(h.path, h.body)
        openai_server.send_json(h, obj, code)

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    @property
    def auth(self) -> list[str | None]:
        return [r["auth"] for r in self.requests]

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if body.get("model") != SERVED:
            return 404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                         "type": "NotFoundError", "param": None, "code": 404}
        (message,) = body["messages"]
        parts = message["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        if len(images) > self.max_images:
            return 400, {"object": "error", "message": f"At most {self.max_images} image(s) may be provided in "
                         "one request.", "type": "BadRequestError", "param": None, "code": 400}
        if body.get("top_logprobs", 0) > self.max_logprobs:
            return 400, {"object": "error", "message": f"top_logprobs must be <= {self.max_logprobs}",
                         "type": "BadRequestError", "param": None, "code": 400}
        sizes = []
        for part in images:
            head, data = part["image_url"]["url"].split(",", 1)
            assert head == "data:image/jpeg;base64"
            sizes.append(Image.open(io.BytesIO(base64.b64decode(data))).size)
        choice: dict = {"index": 0, "finish_reason": "stop", "stop_reason": None}
        if body.get("logprobs"):
            p = p_yes(texts[0])
            top = [{"token": "Yes", "logprob": math.log(p), "bytes": [89, 101, 115]},
                   {"token": "No", "logprob": math.log(1 - p), "bytes": [78, 111]}]
            top = top[: body.get("top_logprobs") or 1]
            choice["message"] = {"role": "assistant", "content": "Yes" if p > 0.5 else "No", "tool_calls": []}
            choice["logprobs"] = {"content": [{**top[0 if p > 0.5 else 1], "top_logprobs": top}]}
        else:
            choice["message"] = {"role": "assistant", "content": f"We saw {len(images)} pictures. It was fun!",
                                 "tool_calls": []}
            choice["logprobs"] = None
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": SERVED,
                     "choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                     "prompt_logprobs": None}

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
