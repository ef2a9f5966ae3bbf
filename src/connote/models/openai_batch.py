"""OpenAI's Batch API as files: request files to upload, and a ``generate`` backend that answers from the output.

The Batch API runs chat-completion requests offline at half the price of the synchronous API (within 24 hours).
A task that can name each request (``GenerationRequest.key``, e.g. ``connote vmc synth`` and its row ids) writes
one request per line with :func:`request_line`; the user uploads the file (``purpose=batch``), creates a batch
for ``/v1/chat/completions`` and downloads its output file; ``openai-batch:OUTPUT.jsonl`` then answers each
request by its ``custom_id`` through the runner like any backend.

A ``custom_id`` is the request's key and a digest of what it asks (:func:`batch_custom_id`: ``KEY#DIGEST``, the
digest over the prompt, length limit, temperature and seed), so an answer is taken only for the request it
answers: a row id whose caption changed (an id-less table reordered) is not given the old caption's answer, and
an answer for the same request under another row id is found by its digest. An output written for requests
without a digest (``custom_id`` the key alone) is answered only with ``?requests=`` (the request files, checked
against this run's requests); without them each such row is an error saying so. :func:`unmatched_answers` counts
the output's answers that no request of a run takes (the command reports them).

Request file (one JSON object a line, at most :data:`MAX_REQUESTS_PER_FILE` lines and 200 MB a file)::

    {"custom_id": "coco-48#3f9c0d2ab1e4", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "gpt-3.5-turbo", "messages": [{"role": "user", "content": "..."}], "max_tokens": 64,
              "temperature": 0.0}}

Output file (one line per finished request, in any order; the batch's error file has the same layout)::

    {"id": "batch_req_...", "custom_id": "coco-48#3f9c0d2ab1e4", "response": {"status_code": 200, "request_id": "...",
     "body": {"choices": [{"message": {"role": "assistant", "content": "..."}}], ...}}, "error": null}

A line with ``error`` set, or a ``status_code`` other than 200, is that request's failure (recorded with its
item; the run goes on); a request with no line is an error too ("not in the Batch API output"). A line that is
not JSON, not an object, without a ``custom_id``, with neither ``response`` nor ``error``, whose 200 body has no
``choices[0].message``, or a second answer for one ``custom_id`` stops with exit status 2 naming the file and
line. The weights may be one output file or a folder of them (every ``*.jsonl``, e.g. the output and error files
of a batch and of a resubmission of its failures): an answer wins over a failure of the same ``custom_id``.
``describe()`` carries each file's sha256, so another output file makes another run fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

ENDPOINT = "/v1/chat/completions"
#: OpenAI's limits on one batch input file.
MAX_REQUESTS_PER_FILE = 50_000
MAX_CUSTOM_ID = 64
#: A custom_id is ``KEY#DIGEST`` (:func:`batch_custom_id`).
DIGEST_MARK, DIGEST_LENGTH = "#", 12
#: The marker of an item whose request has no line in the output (tasks count it by this text).
NOT_IN_OUTPUT = "not in the Batch API output"
#: The marker of an item whose request failed in the batch.
BATCH_FAILED = "Batch API request failed"
#: The marker of an item whose request in the request file (``?requests=``) is not the one this run makes.
NOT_THIS_REQUEST = "differs from the request file"


class BatchFailure(RuntimeError):
    """One request's failure in the batch (or its missing line): returned in its place by ``generate``."""


def chat_body(model: str, prompt: str, *, max_tokens: int, temperature: float = 0.0,
              seed: int | None = None) -> dict[str, Any]:
    """The chat-completions body of one text-only request (the prompt as one user turn)."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": int(max_tokens), "temperature": float(temperature)}
    if temperature > 0 and seed is not None:
        body["seed"] = int(seed)
    return body


def request_digest(prompt: str, max_tokens: int, temperature: float, seed: int | None) -> str:
    """12 hex digits of sha256 over what a request asks (the seed only when it samples): a ``custom_id``'s tail."""
    import hashlib

    from connote.runs.store import canonical_json

    asked = {"prompt": prompt, "max_tokens": int(max_tokens), "temperature": float(temperature),
             "seed": int(seed) if temperature > 0 and seed is not None else None}
    return hashlib.sha256(canonical_json(asked).encode()).hexdigest()[:DIGEST_LENGTH]


def body_digest(body: dict[str, Any]) -> str:
    """:func:`request_digest` of a request body as :func:`chat_body` writes it."""
    temperature = float(body.get("temperature", 1.0))
    return request_digest(_sent_text(body) or "", body.get("max_tokens", body.get("max_completion_tokens")) or 0,
                          temperature, body.get("seed"))


def batch_custom_id(key: str, digest: str) -> str:
    """``KEY#DIGEST``: the custom_id of the request ``key`` whose content has ``digest``. A key too long for the
    64 characters a custom_id may have beside its digest is its head, ``~`` and 8 hex digits of sha256 over the
    whole key (``coco/val2014/COCO_val2014_0000000~1f2e3d4c#DIGEST``): still one id per key."""
    tail = f"{DIGEST_MARK}{digest}"
    if len(key) + len(tail) > MAX_CUSTOM_ID:
        import hashlib

        short = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        key = f"{key[:MAX_CUSTOM_ID - len(tail) - len(short) - 1]}~{short}"
    return f"{key}{tail}"


def split_custom_id(custom_id: str) -> tuple[str, str | None]:
    """(key, digest) of a custom_id; the digest is None for an id written without one."""
    key, mark, digest = custom_id.rpartition(DIGEST_MARK)
    if mark and len(digest) == DIGEST_LENGTH and all(c in "0123456789abcdef" for c in digest):
        return key, digest
    return custom_id, None


def request_line(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """One line of a Batch API request file; ``custom_id`` must be 1-64 characters."""
    if not isinstance(custom_id, str) or not 0 < len(custom_id) <= MAX_CUSTOM_ID:
        raise InputError(f"id {custom_id!r} cannot be a Batch API custom_id (1 to {MAX_CUSTOM_ID} characters)")
    return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}


def write_request_files(path: str | Path, lines: Sequence[dict[str, Any]],
                        per_file: int = MAX_REQUESTS_PER_FILE) -> list[Path]:
    """Write ``lines`` to ``path`` or, when there are more than ``per_file``, to ``STEM.part001.jsonl``, ...
    beside it (one batch each). Each file is written whole (a temporary file renamed), so a kill leaves none
    half-written. Returns the files written."""
    from connote.runs.store import write_jsonl

    if per_file < 1:
        raise InputError(f"requests per file must be at least 1, got {per_file}")
    if per_file > MAX_REQUESTS_PER_FILE:
        raise InputError(f"the Batch API takes at most {MAX_REQUESTS_PER_FILE} requests per file, not {per_file}")
    path = Path(path)
    chunks = [lines[i:i + per_file] for i in range(0, len(lines), per_file)] or [[]]
    if len(chunks) == 1:
        targets = [path]
    else:
        suffix = path.suffix or ".jsonl"
        targets = [path.with_name(f"{path.stem}.part{k:03d}{suffix}") for k in range(1, len(chunks) + 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, chunk in zip(targets, chunks):
        write_jsonl(target, chunk)
    return targets


@dataclass(frozen=True)
class BatchAnswer:
    """One ``custom_id``'s outcome: its text, or why it failed; where it was read."""

    text: str | None
    failure: str | None
    where: str
    model: str | None = None


def _failure(line: dict[str, Any]) -> str | None:
    error = line.get("error")
    if error:
        if isinstance(error, dict):
            return f"{error.get('code') or 'error'}: {error.get('message') or json.dumps(error)[:200]}"
        return str(error)[:200]
    response = line["response"]
    status = response.get("status_code")
    if status != 200:
        body = response.get("body")
        err = body.get("error") if isinstance(body, dict) else None
        message = (err.get("message") if isinstance(err, dict) else None) or json.dumps(body)[:200]
        return f"status {status}: {message}"
    return None


def _answer(line: dict[str, Any], where: str, path: Path, lineno: int) -> BatchAnswer:
    failure = _failure(line)
    body = line["response"].get("body") if isinstance(line.get("response"), dict) else None
    model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
    if failure is not None:
        return BatchAnswer(None, failure, where, model)
    choices = body.get("choices") if isinstance(body, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
        else None
    if not isinstance(message, dict):
        raise InputError("a 200 response without choices[0].message (not a chat-completions output file?)",
                         path=path, line=lineno)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise InputError(f"choices[0].message.content is not text: {json.dumps(content)[:120]}", path=path,
                         line=lineno)
    return BatchAnswer(content or "", None, where, model)


def output_files(path: str | Path, what: str = "output") -> list[Path]:
    """The output (or request) files ``path`` names: itself, or every ``*.jsonl`` in a folder (sorted)."""
    path = Path(path).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"no Batch API {what} files (*.jsonl) in this folder", path=path)
        return files
    if not path.is_file():
        raise InputError(f"Batch API {what} file not found", path=path)
    return [path]


def read_requests(files: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """``custom_id`` -> the request's ``body``, over request files as :func:`request_line` writes them."""
    from connote.core.jsonio import read_jsonl

    bodies: dict[str, dict[str, Any]] = {}
    for path in files:
        for lineno, line in read_jsonl(path, what="Batch API request file"):
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
            body = line.get("body") if isinstance(line, dict) else None
            if not isinstance(custom_id, str) or not custom_id or not isinstance(body, dict) \
                    or not isinstance(body.get("messages"), list) or not body["messages"]:
                raise InputError("expected a Batch API request line {custom_id, method, url, body: {model, "
                                 "messages, ...}}", path=path, line=lineno)
            if custom_id in bodies:
                raise InputError(f"custom_id {custom_id!r} occurs twice in the request files", path=path,
                                 line=lineno)
            bodies[custom_id] = body
    return bodies


def _sent_text(body: dict[str, Any]) -> str | None:
    """The text of a request body's last user turn (a string, or the text parts of a content list)."""
    content = body["messages"][-1].get("content") if isinstance(body["messages"][-1], dict) else None
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    return content if isinstance(content, str) else None


def request_mismatch(body: dict[str, Any], req: Any) -> str | None:
    """Why the request written to the file is not ``req`` (prompt, length limit, temperature), or None."""
    if _sent_text(body) != (req.prompt or ""):
        return f"its prompt was {(_sent_text(body) or '')[:80]!r}"
    if body.get("max_tokens", body.get("max_completion_tokens")) != req.max_new_tokens:
        return f"it asked for max_tokens={body.get('max_tokens')}, this run for {req.max_new_tokens}"
    if float(body.get("temperature", 1.0)) != float(req.temperature):
        return f"it was sent at temperature {body.get('temperature', 1.0)}, this run asks {req.temperature}"
    return None


def unmatched_ids(custom_ids: Iterable[str], asked: Iterable[tuple[str, str]]) -> list[str]:
    """The ``custom_ids`` of an output that none of the requests ``asked`` ((key, digest) pairs) takes."""
    asked = list(asked)
    keys, digests = {k for k, _ in asked}, {d for _, d in asked}

    def taken(custom_id: str) -> bool:
        digest = split_custom_id(custom_id)[1]
        return digest in digests if digest is not None else custom_id in keys

    return sorted(cid for cid in custom_ids if not taken(cid))


def read_output(files: Iterable[Path]) -> dict[str, BatchAnswer]:
    """``custom_id`` -> its answer or failure, over the output (and error) files (see the module docs)."""
    from connote.core.jsonio import read_jsonl

    answers: dict[str, BatchAnswer] = {}
    for path in files:
        for lineno, line in read_jsonl(path, what="Batch API output file"):
            where = f"{path.name}, line {lineno}"
            if not isinstance(line, dict):
                raise InputError(f"expected a JSON object (a Batch API output line), got {type(line).__name__}",
                                 path=path, line=lineno)
            custom_id = line.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                raise InputError("a Batch API output line without a custom_id", path=path, line=lineno)
            if not isinstance(line.get("response"), dict) and not line.get("error"):
                raise InputError(f"custom_id {custom_id!r}: neither a response object nor an error", path=path,
                                 line=lineno)
            answer = _answer(line, where, path, lineno)
            old = answers.get(custom_id)
            if old is not None and old.failure is None and answer.failure is None:
                raise InputError(f"custom_id {custom_id!r} is answered twice (first at {old.where})", path=path,
                                 line=lineno)
            if old is None or answer.failure is None:
                answers[custom_id] = answer  # an answer wins over a failure of the same request
    return answers


class OpenAIBatchAnswers:
    """``openai-batch:OUTPUT.jsonl`` (or a folder of output files): each request answered from the Batch API
    output by its ``key`` (the ``custom_id`` the request file gave it); nothing is sent anywhere.

    ``?requests=REQUESTS.jsonl`` (a file or folder of the request files the batch ran) checks each answer against
    the request it was for: a request whose prompt, length limit or temperature is not this run's is that item's
    error (``differs from the request file``), as is one the request files do not hold."""

    backend = "openai-batch"

    def __init__(self, weights: str | None = None, *, requests: str | None = None) -> None:
        if not weights:
            raise InputError("openai-batch needs the Batch API output: openai-batch:OUTPUT.jsonl (or a folder of "
                             "output files)")
        from connote.core.files import file_sha256

        self.files = output_files(weights)
        self.answers = read_output(self.files)
        self.sha256 = {p.name: file_sha256(p) for p in self.files}
        self.request_files = output_files(requests, "request") if requests else []
        self.requests = read_requests(self.request_files) if requests else None
        self.request_sha256 = {p.name: file_sha256(p) for p in self.request_files}

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> OpenAIBatchAnswers:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        models = sorted({a.model for a in self.answers.values() if a.model})
        return {"backend": self.backend, "files": self.sha256, "answers": len(self.answers), "models": models,
                "requests": self.request_sha256 or None}

    def _request_body(self, custom_id: str) -> dict[str, Any] | None:
        """The request file's body for ``custom_id`` (by its key, for an id written without a digest)."""
        assert self.requests is not None
        body = self.requests.get(custom_id)
        if body is None and split_custom_id(custom_id)[1] is None:
            body = next((b for cid, b in self.requests.items() if split_custom_id(cid)[0] == custom_id), None)
        return body

    def _checked(self, custom_id: str, req: Any) -> BatchFailure | None:
        if self.requests is None:
            return None
        body = self._request_body(custom_id)
        if body is None:
            return BatchFailure(f"custom_id {custom_id!r}: no such request in {', '.join(self.request_sha256)} (the "
                                f"request {NOT_THIS_REQUEST})")
        why = request_mismatch(body, req)
        return BatchFailure(f"custom_id {custom_id!r}: this run's request {NOT_THIS_REQUEST}: {why}") if why else None

    def _find(self, key: str, digest: str) -> tuple[str, BatchAnswer | None, BatchFailure | None]:
        """(custom_id, its answer, why it cannot be taken) for this run's request ``key`` with ``digest``."""
        exact = batch_custom_id(key, digest)
        if exact in self.answers:
            return exact, self.answers[exact], None
        same = [cid for cid in self.answers if split_custom_id(cid)[1] == digest]
        if same:  # the same request under another key (a table without ids, reordered): the answer is its own
            same.sort(key=lambda cid: self.answers[cid].failure is not None)
            return same[0], self.answers[same[0]], None
        if key in self.answers:  # written without a digest: only the request files can say what it answers
            if self.requests is None:
                return key, None, BatchFailure(
                    f"custom_id {key!r} carries no digest of its request, so its answer cannot be matched to this "
                    f"run's request (the request {NOT_THIS_REQUEST} unless checked): pass "
                    "?requests=REQUESTS.jsonl, the request files the batch ran")
            return key, self.answers[key], None
        other = sorted(cid for cid in self.answers if split_custom_id(cid)[0] == split_custom_id(exact)[0])
        if other:
            return other[0], None, BatchFailure(
                f"custom_id {other[0]!r} answers another request than this run's {exact!r}: the request "
                f"{NOT_THIS_REQUEST} (the prompt, the caption under this id, the length limit or the temperature "
                "changed since the requests were written)")
        return exact, None, None

    def generate(self, requests: Sequence[Any]) -> list[str | BaseException]:
        out: list[str | BaseException] = []
        for req in requests:
            key = getattr(req, "key", None)
            if not key:
                out.append(BatchFailure("openai-batch answers requests by their custom_id; this task's requests "
                                        "carry none (use a task that writes Batch API request files)"))
                continue
            digest = request_digest(req.prompt or "", req.max_new_tokens, req.temperature, req.seed)
            custom_id, answer, refused = self._find(key, digest)
            mismatch = self._checked(custom_id, req) or refused  # the request file says best what differs
            if mismatch is not None:
                out.append(mismatch)
            elif answer is None:
                out.append(BatchFailure(f"custom_id {custom_id!r} is {NOT_IN_OUTPUT} ({', '.join(self.sha256)})"))
            elif answer.failure is not None:
                out.append(BatchFailure(f"{BATCH_FAILED} ({answer.where}): {answer.failure}"))
            else:
                out.append(answer.text or "")
        return out

