"""ChatClient on the openai package against real HTTP servers on 127.0.0.1: retries, Retry-After cap, deadline."""

from __future__ import annotations

import http.server
import time
from collections.abc import Callable

import pytest

pytest.importorskip("openai")

from connote.models.chat_client import ApiError, ChatClient, image_data_url, retry_after_seconds  # noqa: E402
from tests.support.openai_server import Server, answer, send_json, status  # noqa: E402

ANSWER = {"id": "x", "object": "chat.completion", "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"}, "finish_reason": "stop",
                       "logprobs": {"content": [{"token": "Yes", "logprob": -0.1,
                                                 "top_logprobs": [{"token": "Yes", "logprob": -0.1}]}]}}]}


def ok(h: http.server.BaseHTTPRequestHandler) -> None:
    send_json(h, ANSWER)


def test_request_body_and_answer(serve: Callable[[list], Server]) -> None:
    server = serve([ok])
    client = ChatClient("my-model", base_url=server.url, api_key="sk-test")
    messages = [{"role": "user", "content": [{"type": "text", "text": "Is it?"}]}]
    answer = client.chat(messages, max_tokens=1, temperature=0, logprobs=True, top_logprobs=5, seed=7)
    assert answer == ANSWER
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"] == {"model": "my-model", "messages": messages, "max_tokens": 1, "temperature": 0,
                           "logprobs": True, "top_logprobs": 5, "seed": 7}
    assert req["headers"]["authorization"] == "Bearer sk-test"
    ChatClient("my-model", base_url=server.url, api_key="").chat(messages)
    assert "authorization" not in server.requests[1]["headers"]  # no key, no header (a local server)


def test_429_then_200_succeeds_after_retry_after(serve: Callable[[list], Server]) -> None:
    server = serve([status(429, {"Retry-After": "0.3"}), ok])
    client = ChatClient("m", base_url=server.url, api_key="k", backoff=0.01)
    t0 = time.monotonic()
    assert client.chat([{"role": "user", "content": "hi"}])["choices"][0]["message"]["content"] == "Yes"
    assert len(server.requests) == 2
    assert time.monotonic() - t0 >= 0.3  # the server's Retry-After was honoured


@pytest.mark.parametrize("headers", [{"retry-after-ms": "50"}, {"Retry-After": "0.05"}])
def test_the_servers_retry_after_is_honoured_exactly_not_stretched_to_the_back_off(
        serve: Callable[[list], Server], headers: dict[str, str]) -> None:
    server = serve([status(429, headers), ok])
    client = ChatClient("m", base_url=server.url, backoff=30, deadline=20)  # a back-off past the deadline
    assert client.chat([])["id"] == "x"  # the retry went after the server's 0.05 s, not max(30 s, 0.05 s)
    assert len(server.requests) == 2


@pytest.mark.parametrize("headers", [{}, {"Retry-After": "0"}])
def test_without_a_time_from_the_server_the_retry_backs_off(serve: Callable[[list], Server],
                                                            headers: dict[str, str]) -> None:
    server = serve([status(429, headers), ok])
    client = ChatClient("m", base_url=server.url, backoff=30, deadline=20)
    with pytest.raises(ApiError, match=r"the next attempt \(in 3[0-9.]+ s\) would pass the 20 s deadline; "
                                       r"last: HTTP 429"):
        client.chat([])
    assert len(server.requests) == 1


def test_connections_and_tls_context_are_reused(serve: Callable[[list], Server]) -> None:
    import ssl
    from concurrent.futures import ThreadPoolExecutor

    server = serve([status(503, {"retry-after-ms": "1"}), ok])
    client = ChatClient("m", base_url=server.url, backoff=0.01)
    for _ in range(5):
        assert client.chat([])["id"] == "x"
    assert client.clients_made == 1 and len(server.requests) == 6  # a 503 and its retry, then 4 more
    assert len({r["port"] for r in server.requests}) == 1  # one kept-alive connection for all six
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: client.chat([])["id"], range(40))) == ["x"] * 40
    assert 1 <= client.clients_made <= 4  # at most one per thread sending at once, not one per request
    assert len({r["port"] for r in server.requests}) == client.clients_made
    assert isinstance(client._tls, ssl.SSLContext)  # one TLS context, made once, shared by every client


@pytest.mark.parametrize("code", [408, 409, 500, 502, 503, 504])
def test_retried_statuses(serve: Callable[[list], Server], code: int) -> None:
    server = serve([status(code), ok])
    assert ChatClient("m", base_url=server.url, backoff=0.01).chat([])["id"] == "x"
    assert len(server.requests) == 2


def test_client_errors_are_not_retried(serve: Callable[[list], Server]) -> None:
    server = serve([status(400)])
    with pytest.raises(ApiError, match="HTTP 400"):
        ChatClient("m", base_url=server.url, backoff=0.01).chat([])
    assert len(server.requests) == 1


def test_retry_after_a_day_fails_at_once(serve: Callable[[list], Server]) -> None:
    server = serve([status(429, {"Retry-After": "86400"}), ok])
    client = ChatClient("m", base_url=server.url, backoff=0.01)
    t0 = time.monotonic()
    with pytest.raises(ApiError, match=r"retry after 86400 s, over the 60 s cap \(max_retry_after\)"):
        client.chat([])
    assert time.monotonic() - t0 < 10 and len(server.requests) == 1


def test_gives_up_after_max_retries(serve: Callable[[list], Server]) -> None:
    server = serve([status(503)])
    with pytest.raises(ApiError, match=r"gave up after 3 attempts; last: HTTP 503"):
        ChatClient("m", base_url=server.url, max_retries=2, backoff=0.01).chat([])
    assert len(server.requests) == 3


@pytest.mark.slow
def test_trickling_server_ends_at_the_deadline(serve: Callable[[list], Server]) -> None:
    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        h.wfile.flush()
        for _ in range(100):  # one byte every 0.3 s for 30 s: no single read ever times out
            if server.stop.is_set():
                return
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.3)

    server = serve([trickle])
    client = ChatClient("m", base_url=server.url, timeout=5, deadline=1.5, backoff=0.01)
    t0 = time.monotonic()
    with pytest.raises(ApiError, match=r"within the 1\.5 s deadline"):
        client.chat([])
    assert time.monotonic() - t0 < 8  # 1.5 s plus slack for a loaded machine; the server would take 30 s
    assert len(server.requests) == 1


@pytest.mark.slow
def test_silent_server_times_out_and_is_retried_within_the_deadline(serve: Callable[[list], Server]) -> None:
    def silent(h: http.server.BaseHTTPRequestHandler) -> None:
        server.stop.wait(10)

    server = serve([silent])
    t0 = time.monotonic()
    with pytest.raises(ApiError, match="deadline"):
        ChatClient("m", base_url=server.url, timeout=0.5, deadline=2, backoff=0.05).chat([])
    assert time.monotonic() - t0 < 8 and 1 <= len(server.requests) <= 4


def test_connection_refused_is_an_api_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ApiError, match="gave up after 2 attempts"):
        ChatClient("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff=0.01).chat([])


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert 3000 < retry_after_seconds({"retry-after": time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 3600))}) <= 3600


def test_image_data_url_is_a_bounded_jpeg() -> None:
    import base64
    import io

    from PIL import Image

    url = image_data_url(Image.new("RGB", (3000, 1000), (200, 10, 10)), max_side=300)
    assert url.startswith("data:image/jpeg;base64,")
    img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert img.size == (300, 100)




def test_an_answer_that_is_not_json_is_retried(serve: Callable[[list], Server]) -> None:
    def garbage(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "10")
        h.end_headers()
        h.wfile.write(b"<html>oops")

    server = serve([garbage, ok])
    assert ChatClient("m", base_url=server.url, backoff=0.01).chat([])["id"] == "x"
    assert len(server.requests) == 2
    server2 = serve([garbage])
    with pytest.raises(ApiError, match="gave up after 2 attempts; last: the answer is not JSON"):
        ChatClient("m", base_url=server2.url, max_retries=1, backoff=0.01).chat([])


@pytest.mark.slow
def test_trickled_headers_end_at_the_deadline(serve: Callable[[list], Server]) -> None:
    """The status line and headers a byte every 0.3 s: no read times out, the deadline still ends it."""
    def trickle_headers(h: http.server.BaseHTTPRequestHandler) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 200:
            if server.stop.is_set():
                return
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(0.3)

    server = serve([trickle_headers])
    client = ChatClient("m", base_url=server.url, timeout=5, deadline=1.5, backoff=0.01, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(ApiError, match=r"within the 1\.5 s deadline.*still arriving"):
        client.chat([])
    assert time.monotonic() - t0 < 8  # the headers alone would take a minute
    assert client.clients_made == 1 and client._idle == []  # the cut-off client was closed, not pooled


def _json_reply(obj: object) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    return answer(lambda _body: obj)


def _with_logprob(value: object) -> dict:
    return {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [{
        "token": "Yes", "logprob": value, "top_logprobs": [{"token": "Yes", "logprob": value}]}]}}]}


#: Answers that are not what was asked for -> the item's error says what the server sent.
ANSWER_CASES = [
    pytest.param({"id": "x"}, "no choices[0] object; it sent {\"id\": \"x\"}", id="no-choices"),
    pytest.param({"choices": []}, "no choices[0] object", id="empty-choices"),
    pytest.param({"choices": "Yes"}, "no choices[0] object; it sent {\"choices\": \"Yes\"}", id="choices-a-string"),
    pytest.param({"choices": ["Yes"]}, "no choices[0] object", id="choice-a-string"),
    pytest.param(_with_logprob(float("nan")), "logprob nan of token 'Yes' is not a log-probability",
                 id="nan-logprob"),
    pytest.param(_with_logprob(1e6), "logprob 1000000.0 of token 'Yes' is not a log-probability",
                 id="overflowing-logprob"),
    pytest.param(_with_logprob("high"), "logprob 'high' of token 'Yes'", id="text-logprob"),
    pytest.param({"choices": [{"message": {"content": ["Yes"]}}]}, "message content is not text",
                 id="content-a-list"),
]


@pytest.mark.parametrize("answer, expect", ANSWER_CASES)
def test_an_answer_of_another_shape_says_what_was_sent(answer: dict, expect: str,
                                                       serve: Callable[[list], Server]) -> None:
    from PIL import Image

    from connote.models.openai_api import OpenAIChat
    from connote.models.protocols import GenerationRequest

    server = serve([_json_reply(answer)])
    model = OpenAIChat("m", base_url=server.url, max_retries=0, deadline=10)
    t0 = time.monotonic()
    (p,) = model.match_probability([Image.new("RGB", (8, 8))], ["a cat"], [(0, 0)])
    assert isinstance(p, ApiError) and expect in str(p), p
    if "logprob" not in expect:  # generation reads the same answer's text
        (text,) = model.generate([GenerationRequest(images=[Image.new("RGB", (8, 8))], prompt="say",
                                                    max_new_tokens=4)])
        assert isinstance(text, ApiError) and expect in str(text), text
    assert time.monotonic() - t0 < 8


def test_a_streamed_answer_is_joined_and_its_first_text_timed(serve: Callable[[list], Server]) -> None:
    from tests.support.openai_server import events

    usage = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    server = serve([events(["We ", "saw ", "a ", "cat."], usage=usage, delay=0.15)])
    client = ChatClient("m", base_url=server.url, api_key="k")
    t0 = time.monotonic()
    got = client.chat([{"role": "user", "content": "hi"}], max_tokens=8, stream=True)
    total = time.monotonic() - t0
    assert got["choices"] == [{"index": 0, "message": {"role": "assistant", "content": "We saw a cat."},
                               "finish_reason": "stop"}]
    assert got["usage"] == usage and got["model"] == "m"
    # the first text came before the three later pieces' 0.45 s of pauses; the whole answer after them
    assert got["first_token_s"] is not None and got["first_token_s"] < 0.3 <= 0.45 <= total
    (req,) = server.requests
    assert req["body"]["stream"] is True and req["body"]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("broken, said", [({"done": False}, "cut off"), ({"error": "engine died"}, "engine died")])
def test_a_stream_cut_off_or_failing_is_retried(serve: Callable[[list], Server], broken: dict, said: str) -> None:
    from tests.support.openai_server import events

    server = serve([events(["Yes"], **broken), events(["No"])])
    client = ChatClient("m", base_url=server.url, api_key="k", backoff=0.01)
    assert client.chat([{"role": "user", "content": "hi"}], stream=True)["choices"][0]["message"]["content"] == "No"
    assert len(server.requests) == 2
    with pytest.raises(ApiError, match=said):
        ChatClient("m", base_url=serve([events(["Yes"], **broken)]).url, api_key="k", max_retries=0).chat(
            [{"role": "user", "content": "hi"}], stream=True)
