"""`connote vmc synth` through OpenAI's Batch API files, with any HF chat LM, and on the shipped sample.

* ``--write-batch``: the request file's lines exactly (custom_id, method, url, body with the A.5.2 prompt);
* ``openai-batch:OUTPUT.jsonl``: answers looked up by custom_id and filtered by the template; a missing or
  failed line is that row's error; a rerun recomputes nothing it kept; another output file is another
  fingerprint; bad lines stop with exit 2 naming file and line;
* ``hf-chat:DIR``: a tiny random Llama chat model saved here, its answers equal to transformers' own greedy
  generation through the chat template;
* the sample (no CAPTIONS): its counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.vmc.synth import SYNTH_PROMPT, filter_answer, synth_prompt

#: row id -> (image, caption)
ROWS = {"r1": ("a.jpg", "A clock on a tower."), "r2": ("b.jpg", "A man riding a bicycle."),
        "r3": ("a.jpg", "A red bus on a street."), "r4": ("c.jpg", "A cat on a sofa."),
        "r5": ("b.jpg", "A plate of food."), "r6": ("missing.jpg", "A dog in a park.")}


def write_table(folder: Path) -> tuple[Path, Path]:
    """A caption table of six rows (one naming an image that is not in the folder) and its image folder."""
    from PIL import Image

    images = folder / "images"
    images.mkdir(parents=True)
    for k, name in enumerate(("a.jpg", "b.jpg", "c.jpg")):
        Image.new("RGB", (24, 16), (60 * k, 90, 200 - 50 * k)).save(images / name)
    table = folder / "captions.jsonl"
    table.write_text("".join(json.dumps({"id": rid, "image": im, "caption": cap}) + "\n"
                             for rid, (im, cap) in ROWS.items()))
    return table, images


def cid(row_id: str, prompt: str = SYNTH_PROMPT, max_tokens: int = 64) -> str:
    """The custom_id ``--write-batch`` gives a row of ``ROWS`` (its id and the digest of its request)."""
    from connote.models.openai_batch import batch_custom_id, request_digest

    return batch_custom_id(row_id, request_digest(synth_prompt(ROWS[row_id][1], prompt), max_tokens, 0.0, None))


def ok(custom_id: str, content: str | None, model: str = "gpt-3.5-turbo-0125") -> dict:
    return {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "error": None,
            "response": {"status_code": 200, "request_id": "req", "body": {
                "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}]}}}


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


#: the output of a batch of r1..r5: r1, r2 in the template, r3 not, r4 failed (429 in the response), r5 missing
OUTPUT = [
    ok(cid("r3"), "A red bus parked on the street."),
    ok(cid("r1"), "The clock is as punctual as a train."),
    {"id": "batch_req_r4", "custom_id": cid("r4"), "error": None,
     "response": {"status_code": 429, "request_id": "req", "body": {"error": {
         "message": "Rate limit reached for gpt-3.5-turbo", "type": "requests", "code": "rate_limit_exceeded"}}}},
    ok(cid("r2"), "Output: the bicycle is as swift as the wind"),
]


def synth(*args: str) -> int:
    return main(["vmc", "synth", *args, "--quiet"])


def test_write_batch_writes_one_request_per_sendable_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, images = write_table(tmp_path / "data")
    requests = tmp_path / "requests.jsonl"
    assert synth(str(table), "--images", str(images), "--write-batch", str(requests), "--out",
                 str(tmp_path / "run")) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary == {"requests": 5, "files": [str(requests)], "model": "gpt-3.5-turbo", "left_out": 1,
                       "left_out_by_reason": {"image not found": 1}}
    lines = [json.loads(x) for x in requests.read_text().splitlines()]
    assert lines[0] == {"custom_id": cid("r1"), "method": "POST", "url": "/v1/chat/completions", "body": {
        "model": "gpt-3.5-turbo", "messages": [{"role": "user", "content": (
            "Convert the following image caption to a metaphoric image caption in the following format <primary "
            "concept> is as <property> as <secondary concept>. Input: A clock on a tower.")}],
        "max_tokens": 64, "temperature": 0.0}}
    assert [x["custom_id"] for x in lines] == [cid(f"r{k}") for k in range(1, 6)]  # r6's image is not in the folder
    assert [x["body"]["messages"][0]["content"] for x in lines] == [synth_prompt(ROWS[f"r{k}"][1])
                                                                    for k in range(1, 6)]
    assert not (tmp_path / "run" / "store.sqlite").exists()  # nothing is run

    # another model, sampling (seeded), an own prompt; more requests than a file takes -> numbered files
    split = tmp_path / "split" / "req.jsonl"
    assert synth(str(table), "--model", "openai:gpt-4o-mini", "--temperature", "0.7", "--max-new-tokens", "20",
                 "--prompt", "Metaphor please: {caption}", "--write-batch", str(split), "--requests-per-file", "4",
                 "--out", str(tmp_path / "run")) == 0
    files = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["files"]
    assert [Path(f).name for f in files] == ["req.part001.jsonl", "req.part002.jsonl"]
    parts = [[json.loads(x) for x in Path(f).read_text().splitlines()] for f in files]
    assert [len(p) for p in parts] == [4, 2]  # no --images: r6 is sent too
    assert parts[1][1]["custom_id"].startswith("r6#") and parts[1][1]["body"] == {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Metaphor please: A dog in a park."}],
        "max_tokens": 20, "temperature": 0.7, "seed": 0}
    assert not split.exists()


def test_write_batch_refuses_what_the_batch_api_cannot_take(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    table, images = write_table(tmp_path / "data")
    out = ["--out", str(tmp_path / "run"), "--write-batch", str(tmp_path / "r.jsonl")]
    assert synth(str(table), "--model", "hf-chat:x", *out) == 2
    assert "--model openai:NAME (got 'hf-chat:x')" in capsys.readouterr().err
    assert synth(str(table), "--images", str(images), "--send-image", *out) == 2
    assert "text-only requests" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_a_row_id_too_long_for_a_custom_id_beside_its_digest_is_written_and_answered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A custom_id has 64 characters; with the request's digest (issue 39, item 4) an id of 52 or more used to stop
    --write-batch ("cannot be a Batch API custom_id"): such a key is shortened to its head and a digest of it, and
    the answer under that custom_id goes to its row, one under the same key for another request does not."""
    from connote.models.openai_batch import MAX_CUSTOM_ID, batch_custom_id

    long_ids = ["coco/val2014/COCO_val2014_000000000042.jpg#caption-3-xx", "y" * 65, "y" * 64 + "z"]
    table = tmp_path / "long.csv"
    table.write_text("id,image,caption\n" + "".join(f"{rid},a.jpg,A dog number {k}.\n"
                                                    for k, rid in enumerate(long_ids)))
    requests = tmp_path / "r.jsonl"
    assert synth(str(table), "--write-batch", str(requests), "--out", str(tmp_path / "run")) == 0
    capsys.readouterr()
    ids = [json.loads(x)["custom_id"] for x in requests.read_text().splitlines()]
    assert len(set(ids)) == 3 and all(len(c) <= MAX_CUSTOM_ID for c in ids) and ids[0].startswith("coco/val2014/")
    answers = [ok(ids[0], "The dog is as loyal as a friend."), ok(ids[1], "The dog is as fast as a hare."),
               ok(batch_custom_id(long_ids[2], "0" * 12), "An answer to another request.")]
    output = write_lines(tmp_path / "out.jsonl", answers[::-1])
    run = tmp_path / "run"
    assert synth(str(table), "--model", f"openai-batch:{output}", "--out", str(run)) == 1
    rows = {r["id"]: r for r in map(json.loads, (run / "synth.jsonl").read_text().splitlines())}
    assert rows[long_ids[0]]["metaphor"] == "The dog is as loyal as a friend."
    assert rows[long_ids[1]]["metaphor"] == "The dog is as fast as a hare."
    assert "answers another request than this run's" in rows[long_ids[2]]["error"]


def test_answers_from_the_output_file_are_filtered_and_failures_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, images = write_table(tmp_path / "data")
    output = write_lines(tmp_path / "batch_out.jsonl", OUTPUT)
    run = tmp_path / "run"
    args = [str(table), "--images", str(images), "--model", f"openai-batch:{output}", "--out", str(run)]
    assert synth(*args) == 1  # rows failed
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (first["captions"], first["kept"], first["dropped"], first["failed"]) == (6, 2, 1, 3)
    assert first["failed_by_reason"] == {"batch request failed": 1, "image not found": 1, "not in the batch output": 1}
    rows = {r["id"]: r for r in map(json.loads, (run / "synth.jsonl").read_text().splitlines())}
    # kept and dropped exactly as the filter says of each answer
    for rid in ("r1", "r2", "r3"):
        answer = next(x for x in OUTPUT if x["custom_id"] == cid(rid))["response"]["body"]["choices"][0]["message"]
        assert rows[rid]["answer"] == answer["content"]
        assert rows[rid]["metaphor"] == filter_answer(answer["content"])[0]
    assert [rows[r]["metaphor"] for r in ("r1", "r2")] == ["The clock is as punctual as a train.",
                                                          "the bicycle is as swift as the wind"]
    assert rows["r3"]["dropped"] == "not in the template"
    assert "batch_out.jsonl, line 3): status 429: Rate limit reached" in rows["r4"]["error"]
    assert f"custom_id {cid('r5')!r} is not in the Batch API output (batch_out.jsonl)" in rows["r5"]["error"]
    assert "image file not found" in rows["r6"]["error"]
    table_rows = json.loads((run / "metaphors.json").read_text())
    assert [(r["id"], r["image"], r["source_caption"]) for r in table_rows] == [
        ("r1", "a.jpg", "A clock on a tower."), ("r2", "b.jpg", "A man riding a bicycle.")]
    describe = json.loads((run / "results.json").read_text())["model_fingerprint"]
    from connote.core.files import file_sha256

    assert describe["files"] == {"batch_out.jsonl": file_sha256(output)}
    assert describe["models"] == ["gpt-3.5-turbo-0125"]

    # a rerun with the same file recomputes nothing it kept or dropped: only the failed rows are asked again
    assert synth(*args, "--max-failed", "3") == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (again["n_resumed"], again["n_computed_this_run"], again["kept"], again["failed"]) == (3, 2, 2, 3)

    # another output file (the resubmitted failures answered, in a folder with the first): not reused
    folder = tmp_path / "outputs"
    folder.mkdir()
    write_lines(folder / "1-output.jsonl", OUTPUT)
    write_lines(folder / "2-retry.jsonl", [ok(cid("r4"), "The cat is as lazy as a Sunday."),
                                           ok(cid("r5"), "I cannot do that.")])
    assert synth(str(table), "--images", str(images), "--model", f"openai-batch:{folder}", "--out", str(run)) == 1
    third = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (third["n_resumed"], third["n_computed_this_run"]) == (0, 5)
    assert (third["kept"], third["dropped"], third["failed"], third["failed_by_reason"]) == (
        3, 2, 1, {"image not found": 1})
    kept = [r["caption"] for r in json.loads((run / "metaphors.json").read_text())]
    assert kept == ["The clock is as punctual as a train.", "the bicycle is as swift as the wind",
                    "The cat is as lazy as a Sunday."]


def test_the_request_file_checks_each_answer_is_for_this_runs_request(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``?requests=``: answers are used only for the requests this run makes (prompt, length limit, temperature)."""
    table, images = write_table(tmp_path / "data")
    requests = tmp_path / "requests.jsonl"
    assert synth(str(table), "--images", str(images), "--write-batch", str(requests), "--out",
                 str(tmp_path / "w")) == 0
    lines = requests.read_text().splitlines()
    write_lines(requests, lines[:4])  # r5's request is not in the file
    output = write_lines(tmp_path / "out.jsonl", [*OUTPUT, ok(cid("r5"), "The plate is as full as the moon.")])
    spec = f"openai-batch:{output}?requests={requests}"
    base = [str(table), "--images", str(images), "--model", spec, "--max-failed", "9"]
    assert synth(*base, "--out", str(tmp_path / "a")) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (first["kept"], first["dropped"]) == (2, 1)
    assert first["failed_by_reason"] == {"batch request failed": 1, "image not found": 1, "not this run's request": 1}
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "a" / "synth.jsonl").read_text().splitlines())}
    assert f"custom_id {cid('r5')!r}: no such request in requests.jsonl" in rows["r5"]["error"]
    # another prompt or length limit than the file's: no answer is taken
    assert synth(*base, "--prompt", "Metaphor: {caption}", "--out", str(tmp_path / "b")) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (second["kept"], second["dropped"], second["failed_by_reason"]) == (
        0, 0, {"image not found": 1, "not this run's request": 5})
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "b" / "synth.jsonl").read_text().splitlines())}
    assert "its prompt was 'Convert the following image caption" in rows["r1"]["error"]
    assert synth(*base, "--max-new-tokens", "32", "--out", str(tmp_path / "c")) == 0
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "c" / "synth.jsonl").read_text().splitlines())}
    assert "it asked for max_tokens=64, this run for 32" in rows["r2"]["error"]
    bad = write_lines(tmp_path / "bad-requests.jsonl", [lines[0], '{"custom_id": "r2", "body": {}}'])
    assert synth(*base[:3], "--model", f"openai-batch:{output}?requests={bad}", "--out", str(tmp_path / "d")) == 2
    err = capsys.readouterr().err
    assert f"{bad}, line 2: expected a Batch API request line" in err and "Traceback" not in err


@pytest.mark.parametrize(("lines", "line", "message"), [
    ([OUTPUT[0], '{"custom_id": "r1", "response": '], 2, "invalid JSON"),
    ([OUTPUT[0], OUTPUT[1], ["r2"]], 3, "expected a JSON object (a Batch API output line), got list"),
    ([{"id": "x", "response": OUTPUT[0]["response"], "error": None}], 1, "without a custom_id"),
    ([OUTPUT[0], {"id": "x", "custom_id": "r2", "response": None, "error": None}], 2,
     "custom_id 'r2': neither a response object nor an error"),
    ([{"custom_id": "r1", "response": {"status_code": 200, "body": {"data": []}}, "error": None}], 1,
     "a 200 response without choices[0].message"),
    ([OUTPUT[1], OUTPUT[0], ok(cid("r1"), "The clock is as old as time.")], 3,
     f"custom_id {cid('r1')!r} is answered twice"),
])
def test_bad_output_lines_exit_2_naming_file_and_line(lines: list, line: int, message: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    table, _ = write_table(tmp_path / "data")
    output = write_lines(tmp_path / "out.jsonl", lines)
    run = tmp_path / "run"
    assert synth(str(table), "--model", f"openai-batch:{output}", "--out", str(run)) == 2
    err = capsys.readouterr().err
    assert f"{output}, line {line}" in err and message in err and "Traceback" not in err
    assert not (run / "store.sqlite").exists()


def test_a_failed_line_in_the_error_files_layout_and_a_missing_file(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A line with ``error`` set (``response`` null: how expired requests come back) is that row's failure."""
    from connote.models.openai_batch import OpenAIBatchAnswers, batch_custom_id, request_digest
    from connote.models.protocols import GenerationRequest

    request = GenerationRequest(images=[], prompt="p")
    ids = {k: batch_custom_id(k, request_digest("p", request.max_new_tokens, 0.0, None)) for k in ("r1", "r2")}
    output = write_lines(tmp_path / "errors.jsonl", [
        {"id": "batch_req_1", "custom_id": ids["r1"], "response": None,
         "error": {"code": "batch_expired", "message": "This request could not be executed before the completion "
                                                       "window expired."}},
        ok(ids["r2"], None)])
    model = OpenAIBatchAnswers(str(output))
    got = model.generate([GenerationRequest(images=[], prompt="p", key=k) for k in ("r1", "r2")]
                         + [GenerationRequest(images=[], prompt="p")])
    assert str(got[0]).startswith("Batch API request failed (errors.jsonl, line 1): batch_expired: This request")
    assert got[1] == ""  # no content: the task records "no text"
    assert "carry none" in str(got[2])
    assert synth(str(write_table(tmp_path / "d")[0]), "--model", f"openai-batch:{tmp_path / 'nope.jsonl'}",
                 "--out", str(tmp_path / "run")) == 2
    assert "no such local file" in capsys.readouterr().err


def test_the_sample_runs_offline_with_its_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from connote.vmc.sample_synth import CAPTIONS, EXPECTED, sample_custom_id

    run = tmp_path / "run"
    requests = tmp_path / "requests.jsonl"
    assert synth("--write-batch", str(requests), "--out", str(run)) == 0
    capsys.readouterr()
    sent = [json.loads(x) for x in requests.read_text().splitlines()]
    answered = [json.loads(x) for x in (run / "sample" / "batch-output.jsonl").read_text().splitlines()]
    assert sorted(x["custom_id"] for x in sent) == sorted(x["custom_id"] for x in answered) == [
        sample_custom_id(c[0], c[2]) for c in CAPTIONS]
    assert synth("--out", str(run)) == 1  # one failed line
    assert synth("--out", str(run), "--max-failed", "1") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {k: summary[k] for k in EXPECTED} == EXPECTED
    assert summary["failed_by_reason"] == {"batch request failed": 1}
    assert summary["dropped_by_reason"] == {"not in the template": 2}
    assert (summary["n_resumed"], summary["n_computed_this_run"]) == (11, 1)
    table = json.loads((run / "metaphors.json").read_text())
    assert all((run / "sample" / "images" / r["image"]).is_file() for r in table) and len(table) == 9
    assert main(["collect", "make", "vmc-synth-check", "--data", str(run), "--out", str(tmp_path / "study")]) == 0
    made = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (made["items"], made["per_item"]) == (9, 2)


def test_any_hf_chat_model_converts_the_captions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``hf-chat:DIR`` on a tiny random Llama chat model: each answer is transformers' greedy continuation of the
    chat template's prompt, one prompt at a time (checked here with plain transformers calls), though the backend
    decodes the five prompts of different lengths in one left-padded batch; random answers are filtered like any."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tests.support.tiny_models import tiny_chat_lm

    torch.set_num_threads(1)
    folder = tiny_chat_lm(tmp_path / "chat")
    table, images = write_table(tmp_path / "data")
    run = tmp_path / "run"
    args = [str(table), "--images", str(images), "--model", f"hf-chat:{folder}?dtype=float32", "--max-new-tokens",
            "5", "--out", str(run)]
    code = synth(*args)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == (1 if summary["failed"] else 0)
    assert summary["captions"] == 6 and summary["failed_by_reason"].get("image not found") == 1
    rows = {r["id"]: r for r in map(json.loads, (run / "synth.jsonl").read_text().splitlines())}

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    lm = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    for rid in ("r1", "r2", "r3", "r4", "r5"):
        messages = [{"role": "user", "content": [{"type": "text", "text": synth_prompt(ROWS[rid][1],
                                                                                       SYNTH_PROMPT)}]}]
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True)
        with torch.no_grad():
            new = lm.generate(**ids, max_new_tokens=5, do_sample=False, pad_token_id=tok.pad_token_id)
        expected = tok.decode(new[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()
        assert expected and rows[rid]["answer"] == expected
        assert rows[rid]["metaphor"] == filter_answer(expected)[0]
    assert synth(*args) == code  # resumed: nothing recomputed (the imageless row is recorded, never sent)
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (again["n_resumed"], again["n_computed_this_run"], again["failed"]) == (5, 0, 1)
    # the model works from the prompt alone: it is not sent the image, and the storytelling task refuses it
    assert synth(*args, "--send-image") == 2
    assert "works from the prompt alone" in capsys.readouterr().err


def test_an_answer_goes_to_the_request_it_answers_when_a_table_without_ids_is_reordered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39, item 4: row ids of a table without an id column are positions; reordered after the batch was
    written, each row still gets its own caption's answer (by the request's digest in the custom_id); answers no
    row takes are counted and named; an output whose custom_ids carry no digest needs the request files."""
    table = tmp_path / "captions.csv"
    captions = ["A clock on a tower.", "A man riding a bicycle.", "A cat on a sofa."]
    table.write_text("image,caption\n" + "".join(f"x.jpg,{c}\n" for c in captions))
    requests = tmp_path / "requests.jsonl"
    assert synth(str(table), "--write-batch", str(requests), "--out", str(tmp_path / "w")) == 0
    sent = [json.loads(x) for x in requests.read_text().splitlines()]
    answers = {"A clock on a tower.": "The clock is as punctual as a train.",
               "A man riding a bicycle.": "The bicycle is as swift as the wind.",
               "A cat on a sofa.": "The cat is as lazy as a Sunday."}
    by_caption = {line["body"]["messages"][0]["content"].split("Input: ")[1]: line["custom_id"] for line in sent}
    output = write_lines(tmp_path / "out.jsonl", [ok(by_caption[c], a) for c, a in answers.items()]
                         + [ok("stray#0123456789ab", "The moon is as pale as milk.")])
    table.write_text("image,caption\n" + "".join(f"x.jpg,{c}\n" for c in reversed(captions)))  # reordered
    run = tmp_path / "run"
    assert synth(str(table), "--model", f"openai-batch:{output}", "--out", str(run)) == 0
    out, err = capsys.readouterr()
    rows = {r["source_caption"]: r["answer"] for r in map(json.loads, (run / "synth.jsonl").read_text().splitlines())}
    assert rows == answers
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["unmatched_answers"] == 1 and "1 answer(s) in the Batch API output match no request" in err
    assert "stray#0123456789ab" in err
    assert json.loads((run / "results.json").read_text())["unmatched_custom_ids"] == ["stray#0123456789ab"]

    # ids without a digest (written by hand or by an older connote): row 0 is now the cat, not the clock
    legacy = write_lines(tmp_path / "legacy.jsonl", [ok(str(k), answers[c]) for k, c in enumerate(captions)])
    assert synth(str(table), "--model", f"openai-batch:{legacy}", "--out", str(tmp_path / "legacy-run"),
                 "--max-failed", "9") == 0
    capsys.readouterr()
    rows = [json.loads(x) for x in (tmp_path / "legacy-run" / "synth.jsonl").read_text().splitlines()]
    assert all(r["answer"] is None and "carries no digest of its request" in r["error"] for r in rows)
    old = write_lines(tmp_path / "old-requests.jsonl", [{**line, "custom_id": str(k)} for k, line in enumerate(
        sorted(sent, key=lambda x: captions.index(x["body"]["messages"][0]["content"].split("Input: ")[1])))])
    assert synth(str(table), "--model", f"openai-batch:{legacy}?requests={old}", "--out", str(tmp_path / "checked"),
                 "--max-failed", "9") == 0  # with the request files: each answer checked against this run's request
    rows = {r["source_caption"]: r for r in map(json.loads,
                                                (tmp_path / "checked" / "synth.jsonl").read_text().splitlines())}
    assert rows["A man riding a bicycle."]["answer"] == answers["A man riding a bicycle."]  # row 1 both times
    assert "differs from the request file" in rows["A cat on a sofa."]["error"]


def test_vmc_synth_is_an_alias_of_connote_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37, item 1: ``vmc synth`` runs through the one run path (``connote run vmc-synth``): the same results
    and printing, ``--json``, and ``--track`` checked before anything runs (issue 41, item 3)."""
    alias, direct = tmp_path / "alias", tmp_path / "run"
    assert synth("--out", str(alias), "--max-failed", "1") == 0
    printed_alias = capsys.readouterr()
    assert main(["run", "vmc-synth", "--out", str(direct), "--set", "max_failed=1", "--no-progress"]) == 0
    printed_direct = capsys.readouterr()
    a, b = (json.loads((d / "results.json").read_text()) for d in (alias, direct))
    counts = ("captions", "kept", "dropped", "dropped_by_reason", "failed", "failed_by_reason", "n_computed_this_run")
    assert {k: a[k] for k in counts} == {k: b[k] for k in counts} and a["config"]["prompt"] == b["config"]["prompt"]
    assert a["model_fingerprint"]["files"] == b["model_fingerprint"]["files"]  # each folder's own copy of the sample
    assert printed_alias.out.replace(str(alias), "OUT") == printed_direct.out.replace(str(direct), "OUT")
    assert "caption(s): 9 kept" in printed_alias.err and "caption(s): 9 kept" in printed_direct.err
    # max_failed is the command's exit rule, not a setting of the rows: the same run resumes, and exits 1 without it
    assert main(["run", "vmc-synth", "--out", str(direct), "--no-progress"]) == 1
    assert json.loads((direct / "results.json").read_text())["fingerprint"] == b["fingerprint"]
    capsys.readouterr()
    assert synth("--out", str(alias), "--max-failed", "1", "--json") == 0
    assert json.loads(capsys.readouterr().out)["kept"] == 9
    fresh = tmp_path / "fresh"
    assert synth("--out", str(fresh), "--track", "no-such-tracker") == 2
    assert "--track no-such-tracker: expected one of mlflow, wandb, trackio" in capsys.readouterr().err
    assert not fresh.exists()


def test_the_batch_output_is_read_once_per_run_and_its_unmatched_answers_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The answers model was built twice a run (once to count the answers no request takes, once to answer), so
    the output file was read twice; the count now comes from the run's own model (``model_results``). A fully
    resumed run, which builds no model to answer, reads it once for the count; ``synthesize`` is the same path."""
    import connote.models.openai_batch as batch
    from connote.vmc.synth_task import synthesize

    reads: list[list[str]] = []
    real = batch.read_output
    monkeypatch.setattr(batch, "read_output", lambda files: reads.append([p.name for p in files]) or real(files))
    table, images = write_table(tmp_path)
    answered = [ok(cid(r), f"The {r} is as calm as a lake.") for r in ("r1", "r2", "r3", "r4", "r5")]
    output = write_lines(tmp_path / "out.jsonl", [*answered, ok("stray#0123456789ab", "The moon is as pale as milk.")])
    args = [str(table), "--images", str(images), "--model", f"openai-batch:{output}", "--max-failed", "9"]
    run = tmp_path / "run"
    for computed in (5, 0):  # the first run answers every row with an image, the second resumes them all
        reads.clear()
        assert synth(*args, "--out", str(run)) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert reads == [["out.jsonl"]], reads
        assert summary["n_computed_this_run"] == computed and summary["unmatched_answers"] == 1, summary
        assert json.loads((run / "results.json").read_text())["unmatched_custom_ids"] == ["stray#0123456789ab"]
    reads.clear()
    results = synthesize(table, f"openai-batch:{output}", tmp_path / "api", images=images, progress=False)
    assert reads == [["out.jsonl"]] and results["unmatched_custom_ids"] == ["stray#0123456789ab"]
