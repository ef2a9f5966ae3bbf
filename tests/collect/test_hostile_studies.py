"""Hostile data against the annotation studies: what enters ``media/``, what a page can run, who is imported,
and that stopping ``connote collect serve`` stops its Potato server."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from connote.cli import main
from connote.collect.project import read_manifest
from connote.media.sample import write_sample_probes
from tests.support.potato_driver import browser_login, chrome, free_port, need_browser_tools, running

HOSTILE = ('<img src=x onerror="window.__xss=(window.__xss||0)+1">'
           '<script>window.__xss=(window.__xss||0)+10</script>')


def _manifest(tmp: Path, rows_of) -> Path:
    manifest = write_sample_probes(tmp / "sample")
    rows = rows_of(list(csv.DictReader(manifest.open()))[:4])
    path = tmp / "sample" / "hostile.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_only_images_and_videos_enter_a_study(tmp_path: Path, capsys) -> None:
    """``/etc/passwd`` named as an image, a link to it, a FIFO and a text file renamed .jpg are left out, named;
    the study's media folder holds only the real photos (as copies, not links)."""
    (tmp_path / "fifo.jpg").parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "fifo.jpg")
    (tmp_path / "link.jpg").symlink_to("/etc/passwd")
    (tmp_path / "text.jpg").write_text("root:x:0:0:root:/root:/bin/bash\n")
    odd = {"passwd": "/etc/passwd", "link": str(tmp_path / "link.jpg"), "fifo": str(tmp_path / "fifo.jpg"),
           "text": str(tmp_path / "text.jpg")}
    source = _manifest(tmp_path, lambda rows: rows + [{**rows[0], "item_id": k, "image": v} for k, v in odd.items()])
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "link.jpg: is a symbolic link" in err and "left out: fifo: image not found" in err
    assert "/etc/passwd: does not decode as an image or a video" in err and "text.jpg: does not decode" in err
    assert set(read_manifest(out)["items"]) == {r["item_id"] for r in csv.DictReader(source.open())} - set(odd)
    media = sorted(out.glob("media/*"))
    assert media and all(p.is_file() and not p.is_symlink() for p in media)
    assert not any(b"root:x:0:0" in p.read_bytes() for p in media)


def test_vist_descriptions_refuse_a_linked_photo(tmp_path: Path, capsys) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    from PIL import Image

    Image.new("RGB", (40, 30), (10, 120, 200)).save(photos / "real.jpg")
    (photos / "secret.jpg").symlink_to("/etc/passwd")
    out = tmp_path / "study"
    assert main(["collect", "make", "vist-descriptions", "--from", str(photos), "--out", str(out)]) == 0
    assert "secret.jpg: " in capsys.readouterr().err
    assert [p.name for p in out.glob("media/*")] == ["real.jpg"]


def test_serve_refuses_a_link_placed_in_media(tmp_path: Path, capsys) -> None:
    pytest.importorskip("potato")
    source = _manifest(tmp_path, lambda rows: rows)
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out)]) == 0
    (out / "media" / "passwd").symlink_to("/etc/passwd")
    capsys.readouterr()
    assert main(["collect", "serve", str(out), "--port", str(free_port())]) == 2
    assert "media/passwd: a symbolic link in the study's media folder" in capsys.readouterr().err


def test_page_texts_are_escaped_in_the_study_files(tmp_path: Path) -> None:
    source = _manifest(tmp_path, lambda rows: [{**r, "caption": HOSTILE + r["caption"],
                                                "caption_simplified": HOSTILE + r["caption_simplified"]}
                                               for r in rows])
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out)]) == 0
    data = (out / "data.jsonl").read_text()
    assert "<script" not in data and "&lt;script&gt;" in data


def _state(folder: Path, name: str, answers: dict[str, str], *, raw: str | None = None) -> None:
    out = folder / "annotation_output" / name
    out.mkdir(parents=True, exist_ok=True)
    state = {"user_id": name, "instance_id_ordering": list(answers),
             "instance_id_to_label_to_value": {iid: [[{"schema": "match", "name": v}, v]]
                                               for iid, v in answers.items()}}
    (out / "user_state.json").write_text(raw if raw is not None else json.dumps(state))


def test_import_names_a_truncated_state_and_a_hostile_id_and_imports_the_rest(tmp_path: Path, capsys) -> None:
    source = _manifest(tmp_path, lambda rows: rows)
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out), "--per-item", "1"]) == 0
    items = read_manifest(out)["items"]
    _state(out, "alice", {iid: "match" for iid in items})
    _state(out, "bob", {}, raw=json.dumps({"user_id": "bob", "instance_id_to_label_to_value": {}})[:25])
    hostile = "<img src=x onerror=alert(1)>"
    _state(out, "mallory", {iid: "no match" for iid in items})
    state = json.loads((out / "annotation_output" / "mallory" / "user_state.json").read_text())
    (out / "annotation_output" / "mallory" / "user_state.json").write_text(json.dumps({**state, "user_id": hostile}))
    capsys.readouterr()
    assert main(["collect", "import", str(out), "--out", str(tmp_path / "votes.csv"), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["imported"] == len(items) and report["incomplete"] == {}
    assert any("'bob': user_state.json unreadable" in r for r in report["excluded"])
    assert any("annotator id '<img src=x onerror=alert(1)>' is not an id" in r for r in report["excluded"])
    votes = list(csv.DictReader((tmp_path / "votes.csv").open()))
    assert votes and hostile not in (tmp_path / "votes.csv").read_text()


@pytest.mark.slow
def test_no_script_from_data_runs_in_the_page(tmp_path: Path) -> None:
    """Chromium on the real Potato server: captions holding ``<script>`` and ``onerror`` show as text."""
    need_browser_tools()
    source = _manifest(tmp_path, lambda rows: [{**r, "caption": HOSTILE + r["caption"],
                                                "caption_simplified": HOSTILE + r["caption_simplified"]}
                                               for r in rows])
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out)]) == 0
    with running(out) as server:
        driver = chrome(tmp_path)
        try:
            browser_login(driver, server, "alice")
            time.sleep(2)
            assert driver.execute_script("return window.__xss === undefined")
            assert "<script>window.__xss" in driver.find_element("tag name", "body").text  # shown as typed
        finally:
            driver.quit()


@pytest.mark.slow
def test_sigterm_to_collect_serve_stops_its_potato_server(tmp_path: Path) -> None:
    need_browser_tools()
    from connote.collect import serving

    source = _manifest(tmp_path, lambda rows: rows)
    out = tmp_path / "study"
    assert main(["collect", "make", "probes-votes", "--from", str(source), "--out", str(out)]) == 0
    port = free_port()
    import connote

    env = {**os.environ, "PYTHONPATH": str(Path(connote.__file__).resolve().parents[1])}  # the connote under test
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - a file, as when serve's output is logged
    proc = subprocess.Popen([sys.executable, "-m", "connote", "collect", "serve", str(out), "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        serving.wait_ready(port, timeout=240)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                opener.open(f"http://127.0.0.1:{port}/", timeout=2).close()
            except urllib.error.HTTPError:
                pass
            except OSError:
                break  # nothing listens any more
            time.sleep(0.3)
        else:
            raise AssertionError(f"Potato still answers on {port} after SIGTERM to connote collect serve")
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        _stop_leftover_potato(out)


def _stop_leftover_potato(study: Path) -> None:
    """A Potato server left serving ``study`` (the failure this test catches) is stopped by its pid."""
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            if Path(proc_dir / "cwd").resolve() == study.resolve() and b"potato" in (proc_dir / "cmdline").read_bytes():
                os.kill(int(proc_dir.name), signal.SIGKILL)
        except OSError:
            continue
