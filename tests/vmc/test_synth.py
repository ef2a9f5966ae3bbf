"""`connote metaphor synth` (VMC A.5.2) against a loopback OpenAI-compatible server written here.

The server answers each caption with a fixed text: template answers (plain, with an ``Output:`` label, with an
explanation on a second line), non-template answers and an empty answer. Exactly the template ones are kept;
the counts, the resume (nothing asked again) and the bad inputs are asserted; the table trains stage 1 of a
tiny GIT-LLaVA.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.potato_state import potato_state

pytest.importorskip("openai")

from connote.cli import main  # noqa: E402
from connote.vmc.synth import SYNTH_PROMPT, filter_answer, synth_prompt  # noqa: E402

#: caption -> what the server answers
ANSWERS = {
    "A clock on a tower.": "The clock is as punctual as a train.",
    "A man riding a bicycle.": "Output: the bicycle is as swift as the wind",
    "A red bus on a street.": "A red bus parked on the street.",
    "A cat on a sofa.": "",
    "A blue sky over the sea.": "The sky is as blue as the sea.\nThis compares the sky with the sea.",
    "A plate of food.": "I cannot turn this into a metaphor.",
}
KEPT = {"The clock is as punctual as a train.", "the bicycle is as swift as the wind",
        "The sky is as blue as the sea."}


class Server:
    """A chat-completions server on 127.0.0.1 that answers from :data:`ANSWERS` and counts the prompts it got."""

    def __init__(self, hang_after: int | None = None, port: int = 0) -> None:
        self.prompts: list[str] = []
        self.release = threading.Event()
        self.images = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][0]["content"]
                text = content if isinstance(content, str) else next(p["text"] for p in content
                                                                      if p["type"] == "text")
                server.prompts.append(text)
                server.images += 0 if isinstance(content, str) else sum(p["type"] == "image_url" for p in content)
                if hang_after is not None and len(server.prompts) > hang_after:
                    server.release.wait(60)  # never answers while the test runs: the client is killed meanwhile
                    return
                caption = text.split("Input: ", 1)[1]
                data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                            "content": ANSWERS.get(caption, "no idea")}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.spec = f"openai:gpt-3.5-turbo?base_url=http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def write_coco(folder: Path) -> tuple[Path, Path]:
    """A COCO captions file over five images (one annotation names an image that is not listed) + the images."""
    from PIL import Image

    images = folder / "train2014"
    images.mkdir(parents=True)
    captions = list(ANSWERS)
    files = []
    for i in range(len(captions) - 1):
        name = f"COCO_train2014_{i:012d}.jpg"
        Image.new("RGB", (40, 30), (40 * i, 200 - 30 * i, 90)).save(images / name)
        files.append({"id": i, "file_name": name})
    anns = [{"id": 100 + n, "image_id": min(n, 4), "caption": c} for n, c in enumerate(captions)]
    anns.append({"id": 200, "image_id": 77, "caption": "A dog without a picture."})
    path = folder / "annotations" / "captions_train2014.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"images": files, "annotations": anns}))
    return path, images


def test_the_prompt_is_the_papers_and_the_filter_keeps_the_template() -> None:
    assert synth_prompt("  A clock on a tower. ") == (
        "Convert the following image caption to a metaphoric image caption in the following format <primary "
        "concept> is as <property> as <secondary concept>. Input: A clock on a tower.")
    assert "{caption}" in SYNTH_PROMPT
    kept = {c for c in (filter_answer(a)[0] for a in ANSWERS.values()) if c}
    assert kept == KEPT
    assert filter_answer("the car isn't as fast as a cheetah")[1]["negated"] is True


def test_synth_keeps_exactly_the_template_answers_and_resumes(server: Server, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    captions, images = write_coco(tmp_path / "coco")
    out = tmp_path / "synth"
    args = ["metaphor", "synth", str(captions), "--model", server.spec, "--images", str(images), "--out", str(out),
            "--batch-size", "2", "--quiet"]
    # a first run stopped after three captions (as a kill between batches would leave it)
    assert main([*args, "--limit", "3"]) == 0
    assert len(server.prompts) == 3
    assert main(args) == 1  # two rows failed: the empty answer and the caption without an image
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["n_resumed"] == 3 and summary["n_computed_this_run"] == 3
    assert len(server.prompts) == 6  # nothing asked twice; the caption without an image was never sent
    assert sorted(server.prompts) == sorted(synth_prompt(c) for c in ANSWERS)  # each caption once
    run = json.loads((out / "results.json").read_text())
    assert (run["captions"], run["kept"], run["dropped"], run["failed"]) == (7, 3, 2, 2)
    assert run["dropped_by_reason"] == {"not in the template": 2}
    assert run["failed_by_reason"] == {"no image": 1, "no text": 1}
    assert run["kept_share_of_answers"] == 0.6
    table = json.loads((out / "metaphors.json").read_text())
    assert {r["caption"] for r in table} == KEPT
    assert all(r["kind"] == "metaphor" and (images / r["image"]).is_file() for r in table)
    rows = {r["id"]: r for r in map(json.loads, (out / "synth.jsonl").read_text().splitlines())}
    assert rows["coco-200"]["error"].endswith("annotation 6 (image_id 77): no image for this caption")
    assert "the backend returned no text" in rows["coco-103"]["error"]
    assert rows["coco-102"]["dropped"] == "not in the template"
    # a rerun asks only for the failed row again (the empty answer); the kept rows are reused
    assert main(args) == 1
    assert len(server.prompts) == 7 and server.prompts[-1].endswith("A cat on a sofa.")


def test_send_image_sends_each_image_and_an_unreadable_one_is_that_rows_error(server: Server, tmp_path: Path) -> None:
    captions, images = write_coco(tmp_path / "coco")
    (images / "COCO_train2014_000000000004.jpg").write_bytes(b"not a picture")  # the image of two captions
    out = tmp_path / "synth"
    assert main(["metaphor", "synth", str(captions), "--model", server.spec, "--images", str(images), "--send-image",
                 "--out", str(out), "--quiet"]) == 1
    assert len(server.prompts) == 4 and server.images == 4  # one image with each prompt
    run = json.loads((out / "results.json").read_text())
    assert run["failed_by_reason"] == {"no image": 1, "no text": 1, "unreadable image": 2}
    assert run["kept"] == 2 and run["config"]["send_image"] is True


def test_bad_caption_files_exit_2_naming_file_and_line(server: Server, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad_jsonl = tmp_path / "caps.jsonl"
    bad_jsonl.write_text('{"image": "a.jpg", "caption": "A cat."}\n{"image": "b.jpg", "caption": \n')
    bad_csv = tmp_path / "caps.csv"
    bad_csv.write_bytes(b"image,caption\na.jpg,A caf\xe9\n")
    no_column = tmp_path / "nocol.csv"
    no_column.write_text("picture,words\na.jpg,A cat\n")
    for path, where in ((bad_jsonl, "line 2"), (bad_csv, "line 2"), (no_column, "line 1"),
                        (tmp_path / "missing.json", "not found")):
        assert main(["metaphor", "synth", str(path), "--model", server.spec, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and where in err and "Traceback" not in err
    assert server.prompts == []


@pytest.mark.slow  # ~5 s alone, over 20 s on the loaded shared machine
def test_the_synth_table_trains_stage_1(server: Server, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from connote.vmc.train.config import config_from_dict
    from connote.vmc.train.git_llava import GitLlava
    from connote.vmc.train.loop import train
    from tests.support.tiny_sources import make_tiny_sources

    captions, images = write_coco(tmp_path / "coco")
    out = tmp_path / "synth"
    main(["metaphor", "synth", str(captions), "--model", server.spec, "--images", str(images), "--out", str(out),
          "--quiet"])
    words = {w for c in KEPT for w in c.lower().split()}
    git, llm = make_tiny_sources(tmp_path / "models", sorted(words))
    torch.set_num_threads(1)
    cfg = config_from_dict({
        "stage": 1, "output_dir": str(tmp_path / "stage1"),
        "model": {"captioner": str(git), "llm": str(llm)},
        "data": {"synth": str(out)},
        "train": {"max_steps": 2, "batch_size": 3, "lr": 1e-2, "warmup_ratio": 0.0}})
    logged: list[str] = []
    before = GitLlava.build(cfg.model)
    result = train(cfg, log=logged.append)
    assert result.steps == 2 and len(result.losses) == 2
    assert any("stage 1: 3 metaphor pairs (synth 3)" in m for m in logged)
    after = GitLlava.from_pretrained(result.final_dir)
    assert not torch.equal(before.projector[0].weight, after.projector[0].weight)


def test_the_two_annotator_check_study(server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from connote.collect.project import read_manifest

    captions, images = write_coco(tmp_path / "coco")
    out = tmp_path / "synth"
    main(["metaphor", "synth", str(captions), "--model", server.spec, "--images", str(images), "--out", str(out),
          "--quiet"])
    study = tmp_path / "study"
    assert main(["collect", "make", "vmc-synth-check", "--data", str(out), "--out", str(study)]) == 0
    made = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (made["items"], made["per_item"], made["attention_checks"]) == (3, 2, 1)
    manifest = read_manifest(study)
    items = sorted(manifest["items"])
    assert items == ["coco-100", "coco-101", "coco-104"]
    config = (study / "config.yaml").read_text()
    assert "fluency" in config and "creativity" in config and "primary_concept" not in config
    # two annotators: alice finds everything fluent and creative but one caption; bob one caption not fluent
    check = {"fluency": "no", "creativity": "no"}
    potato_state(study, "alice", {"attention-1": check, **{i: {"fluency": "yes", "creativity": "yes"}
                                                            for i in items[:2]},
                                   items[2]: {"fluency": "yes", "creativity": "no"}})
    potato_state(study, "bob", {"attention-1": check, items[0]: {"fluency": "no", "creativity": "yes"},
                                 **{i: {"fluency": "yes", "creativity": "yes"} for i in items[1:]}})
    imported = tmp_path / "check"
    assert main(["collect", "import", str(study), "--out", str(imported)]) == 0
    shares = json.loads((imported / "synth_check.json").read_text())
    assert shares["fluency"]["yes"] == 5 and shares["fluency"]["judgements"] == 6
    assert shares["fluency"]["yes_share"] == round(5 / 6, 6) and shares["creativity"]["yes_share"] == round(5 / 6, 6)
    assert shares["fluency"]["all_annotators_yes_share"] == round(2 / 3, 6)
    labels = (imported / "labels.csv").read_text().splitlines()
    assert labels[0] == "item_id,rater,criterion,label" and len(labels) == 1 + 12


@pytest.mark.slow
def test_a_killed_run_resumes_with_nothing_asked_again(tmp_path: Path) -> None:
    """SIGKILL while the second batch waits for the server: the first batch's rows are kept and never asked again."""
    import os
    import subprocess
    import sys
    import time

    captions, images = write_coco(tmp_path / "coco")
    out = tmp_path / "synth"
    args = ["metaphor", "synth", str(captions), "--images", str(images), "--out", str(out), "--batch-size", "2",
            "--quiet"]
    hanging = Server(hang_after=2)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "connote", *args, "--model", hanging.spec], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(hanging.prompts) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(hanging.prompts) >= 3, proc.stderr.read().decode() if proc.poll() is not None else "no request"
        proc.kill()
        proc.wait(30)
    finally:
        hanging.close()
    first = {p.split("Input: ", 1)[1] for p in hanging.prompts[:2]}
    again = Server(port=hanging.httpd.server_address[1])  # the same server address: the same model fingerprint
    try:
        assert main([*args, "--model", again.spec]) == 1  # the empty answer and the imageless row
    finally:
        again.close()
    asked = {p.split("Input: ", 1)[1] for p in again.prompts}
    assert len(again.prompts) == 4 and not asked & first  # 6 sendable captions, 2 answered before the kill
    assert json.loads((out / "results.json").read_text())["n_resumed"] == 2


@pytest.mark.slow
def test_an_hf_chat_vlm_converts_with_the_image(tmp_path: Path) -> None:
    """Any generate backend: a tiny random LLaVA (hf-vlm, which needs an image: --send-image) answers every
    sendable caption; random answers are filtered like any other."""
    pytest.importorskip("torch")
    from tests.support.tiny_sources import make_tiny_llava

    captions, images = write_coco(tmp_path / "coco")
    vlm = make_tiny_llava(tmp_path / "llava", words=("clock", "bus", "sky", "sea", "blue", "the", "is", "as"))
    out = tmp_path / "synth"
    code = main(["metaphor", "synth", str(captions), "--model", f"hf-vlm:{vlm}?dtype=float32", "--images",
                 str(images), "--send-image", "--max-new-tokens", "6", "--out", str(out), "--quiet"])
    run = json.loads((out / "results.json").read_text())
    assert code == (1 if run["failed"] else 0)
    assert run["captions"] == 7 and run["failed_by_reason"].get("no image") == 1
    assert run["kept"] + run["dropped"] + run["failed_by_reason"].get("no text", 0) == 6
    rows = [json.loads(x) for x in (out / "synth.jsonl").read_text().splitlines()]
    assert all(r["answer"] is not None for r in rows if r["id"] != "coco-200")
