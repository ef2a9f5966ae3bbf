"""The OpenAI-compatible backend against a real HTTP server on loopback."""

import json
import math

import pytest

from connote.cv_probes.task import run_probe
from connote.models import load_model
from tests.support import openai_server
from tests.support.tiny_models import random_image


class Server(openai_server.Server):
    """Chat-completions server: answers Yes with p = 0.8 when the caption mentions 'begs'."""

    def __init__(self, fail_first=0, fail_status=429, always_fail=False, with_logprobs=True):
        self.fail_first, self.fail_status, self.always_fail = fail_first, fail_status, always_fail
        self.with_logprobs = with_logprobs
        super().__init__([self.reply])

    def reply(self, h):
        if self.always_fail or len(self.requests) <= self.fail_first:
            openai_server.send_json(h, {"error": "busy"}, self.fail_status, {"Retry-After": "0"})
            return
        text = h.body["messages"][0]["content"][1]["text"]
        p_yes = 0.8 if "begs" in text else 0.3
        answer = "Yes" if p_yes > 0.5 else "No"
        choice = {"index": 0, "message": {"role": "assistant", "content": answer}}
        if self.with_logprobs:
            choice["logprobs"] = {"content": [{"token": answer, "logprob": math.log(max(p_yes, 1 - p_yes)),
                                               "top_logprobs": [
                                                   {"token": "Yes", "logprob": math.log(p_yes)},
                                                   {"token": "No", "logprob": math.log(1 - p_yes)}]}]}
        openai_server.send_json(h, {"choices": [choice]})


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_probability_from_logprobs_with_retries_on_429():
    with Server(fail_first=2) as srv:
        m = load_model(f"openai:gpt-4o?base_url={srv.url}&backoff=0.01&concurrency=1")
        probs = m.match_probability([random_image(0)], ["a man begs", "a man sits"], [(0, 0), (0, 1)])
    assert probs == pytest.approx([0.8, 0.3])
    assert len(srv.requests) == 4  # two 429s, then one request per pair
    req = srv.requests[-1]
    assert req["auth"] == "Bearer sk-test" and req["body"]["model"] == "gpt-4o"
    assert req["body"]["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_text_answer_when_no_logprobs():
    with Server(with_logprobs=False) as srv:
        m = load_model(f"openai:local-vlm?base_url={srv.url}")
        assert m.match_probability([random_image(0)], ["a man begs", "a man sits"], [(0, 0), (0, 1)]) == [1.0, 0.0]


@pytest.mark.slow
def test_failing_api_records_every_item_as_errored(manifest, tmp_path):
    with Server(always_fail=True, fail_status=503) as srv:
        spec = f"openai:gpt-4o?base_url={srv.url}&backoff=0.001&max_retries=2"
        res = run_probe(manifest, spec, tmp_path / "run", progress=False)
        assert res["n_errors"] == 10 and res["n_scored"] == 0
        assert len(srv.requests) == 30  # 10 pairs x 3 attempts
        item = json.loads((tmp_path / "run" / "items.jsonl").read_text().splitlines()[0])
        assert "gave up after 3 attempts" in item["error"] and "HTTP 503" in item["error"]


def test_rerun_retries_only_errored_items(manifest, tmp_path):
    with Server() as srv:
        spec = f"openai:gpt-4o?base_url={srv.url}&backoff=0.001&max_retries=0"
        srv.fail_first = 3  # the first three requests fail, with no retry
        srv.fail_status = 500
        res = run_probe(manifest, spec, tmp_path / "run", progress=False)
        assert res["n_errors"] == 3
        before = len(srv.requests)
        res = run_probe(manifest, spec, tmp_path / "run", progress=False)
        assert len(srv.requests) - before == 3 and res["n_errors"] == 0 and res["n_scored"] == 10
