"""``vllm:MODEL`` / ``sglang:MODEL`` start the engine's server themselves: the process around it, against a stub.

The stub (``tests/support/serving_stub.py``) takes the engines' command lines and serves the tests' fake vLLM API on the
port it is given; environment variables make it take a taken port, crash mid-run or start slowly, once each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from connote.cli import main  # noqa: E402
from connote.models.registry import load_model  # noqa: E402
from tests.support.openai_server import SERVED  # noqa: E402
from tests.support.serving_stub import write_engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable that runs the stub; its launches write their pids to ``tmp_path/pids``."""
    monkeypatch.setenv("STUB_PIDS", str(tmp_path / "pids"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return write_engine(tmp_path)


def pids(tmp_path: Path) -> list[int]:
    file = tmp_path / "pids"
    return [int(x) for x in file.read_text().split()] if file.is_file() else []


def gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a child of this process: reap it, or it lingers as a zombie that kill(pid, 0) still finds
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_vllm_spec_starts_the_server_runs_the_task_and_stops_it(stub: Path, tmp_path: Path) -> None:
    out = tmp_path / "story"
    spec = f"vllm:{SERVED}?executable={stub}"
    assert main(["vist", "generate", "--model", spec, "--out", str(out), "--no-progress"]) == 0
    stories = rows(out / "stories.jsonl")
    assert stories and {s["story"] for s in stories} == {"we saw 5 pictures . it was fun !"}
    (log,) = (out / "engine").glob("vllm-*.log")  # the server's output, kept in the run folder
    text = log.read_text()
    assert f"serve {SERVED} --limit-mm-per-prompt" in text and "--host 127.0.0.1 --port" in text
    (pid,) = pids(tmp_path)
    assert gone(pid)  # stopped and reaped when the run ended
    model = json.loads((out / "results.json").read_text())["model_fingerprint"]
    assert model["engine"] == "vllm" and model["engine_version"] == "0.0.0+stub"
    assert model["decoding"] == "greedy (temperature 0)" and "base_url" not in model  # the port changes per run
    # a rerun resumes every story: the same fingerprint although the server got another port, and no server
    assert main(["vist", "generate", "--model", spec, "--out", str(out), "--no-progress", "--json"]) == 0
    assert len(pids(tmp_path)) == 1


def test_sglang_spec_and_probing_with_logprobs(stub: Path, tmp_path: Path) -> None:
    out = tmp_path / "probe"
    spec = f"sglang:{SERVED}?executable={stub}&top_logprobs=5"
    assert main(["cv-probes", "run", "--model", spec, "--out", str(out), "--no-progress"]) in (0, 1)
    items = rows(out / "items.jsonl")
    assert items and all(it["error"] is None and 0 < it["p_match"] < 1 for it in items)
    (log,) = (out / "engine").glob("sglang-*.log")
    assert f"--model-path {SERVED}" in log.read_text()
    assert all(gone(pid) for pid in pids(tmp_path))


def test_each_image_is_encoded_once_per_run(stub: Path, tmp_path: Path) -> None:
    from PIL import Image

    model = load_model(f"vllm:{SERVED}?executable={stub}")
    try:
        images = [Image.new("RGB", (40, 30), (10 * k, 20, 30)) for k in range(3)]
        pairs = [(i, c) for i in range(3) for c in range(4)]  # 12 requests, 3 images
        probs = model.match_probability(images, ["a", "b", "c", "d"], pairs)
        assert all(isinstance(p, float) for p in probs)
        again = [im.copy() for im in images]  # the same photos read again: other objects, the same pixels
        model.match_probability(again, ["e"], [(0, 0), (1, 0), (2, 0)])
        assert model.image_urls.encoded == 3
    finally:
        model.close()


def test_a_taken_port_is_chosen_again(stub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_BUSY", str(tmp_path / "busy"))
    out = tmp_path / "story"
    assert main(["vist", "generate", "--model", f"vllm:{SERVED}?executable={stub}", "--out", str(out),
                 "--no-progress"]) == 0
    # two launches (the second may have drawn the same free port: its log then holds both)
    text = "".join(log.read_text() for log in (out / "engine").glob("vllm-*.log"))
    assert text.count("$ ") == 2 and "address already in use" in text
    assert len(pids(tmp_path)) == 1  # the first launch never served


def test_a_server_that_never_gets_ready_is_an_error_per_item(stub: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_SLOW", "30")
    out = tmp_path / "story"
    code = main(["vist", "generate", "--model", f"vllm:{SERVED}?executable={stub}&startup_timeout=1&max_restarts=0",
                 "--out", str(out), "--no-progress"])
    assert code == 1  # the run ends, every item recorded with the reason
    errors = {s["error"] for s in rows(out / "stories.jsonl")}
    assert errors and all("did not answer GET /health within 1 s" in e for e in errors)


@pytest.mark.slow
def test_a_crash_mid_run_fails_the_batch_in_flight_and_the_server_restarts(stub: Path, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_CRASH_AFTER", "2")
    monkeypatch.setenv("STUB_CRASH", str(tmp_path / "crashed"))
    out = tmp_path / "story"
    spec = f"vllm:{SERVED}?executable={stub}&concurrency=1&adaptive=false"
    assert main(["vist", "generate", "--model", spec, "--out", str(out), "--no-progress", "--batch-size", "2"]) == 1
    stories = rows(out / "stories.jsonl")
    failed = [s for s in stories if s["error"]]
    assert failed and all("exited with status 3 during the call" in s["error"] for s in failed)
    assert len(failed) < len(stories)  # the next batch went to the restarted server
    assert len(pids(tmp_path)) == 2
    # a rerun retries the failed items only
    assert main(["vist", "generate", "--model", spec, "--out", str(out), "--no-progress"]) == 0
    assert all(s["error"] is None for s in rows(out / "stories.jsonl"))
    assert all(gone(pid) for pid in pids(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killing_connote_stops_the_server(stub: Path, tmp_path: Path, sig: signal.Signals) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), STUB_SLOW="0", HF_HUB_OFFLINE="1")
    # a server that takes its time on the first request: connote is killed while the run is under way
    proc = subprocess.Popen([sys.executable, "-m", "connote", "vist", "generate", "--model",
                             f"vllm:{SERVED}?executable={stub}&deadline=600&timeout=600", "--out",
                             str(tmp_path / "story"), "--no-progress"], env={**env, "STUB_HANG": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while not pids(tmp_path) and time.monotonic() < end:
        time.sleep(0.1)
    (pid,) = pids(tmp_path)
    time.sleep(0.5)
    proc.send_signal(sig)
    proc.wait(60)
    assert gone(pid, within=30), f"the server (pid {pid}) outlived connote killed by {sig.name}"


def test_an_engine_that_is_not_installed_names_the_extra(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import shutil

    if shutil.which("vllm"):
        pytest.skip("vllm is installed here")
    code = main(["vist", "generate", "--model", f"vllm:{SERVED}", "--out", str(tmp_path / "s"), "--no-progress"])
    assert code == 2 and "pip install 'connote[vllm]'" in capsys.readouterr().err
