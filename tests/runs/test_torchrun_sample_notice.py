"""Under torchrun only rank 0 writes the sample set and prints its notice and the results (issue 22, item 8): two
gloo ranks on loopback, started as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT), a tiny CLIP."""

from __future__ import annotations

import json

import pytest

from tests.support import tiny_models  # noqa: E402
from tests.support.two_ranks import two_ranks

pytest.importorskip("accelerate")
pytest.importorskip("transformers")


@pytest.mark.slow
@pytest.mark.parametrize("command", [["probe"], ["explain", "--sample", "2", "--figures", "0"]])
def test_only_rank_0_writes_the_sample_and_speaks(command, tmp_path):
    clip = tiny_models.tiny_clip(tmp_path / "clip")
    out = tmp_path / "run"
    (rc0, out0, err0), (rc1, out1, err1) = two_ranks([*command, "--model", f"hf-clip:{clip}", "--out", str(out)],
                                                      tmp_path)
    assert (rc0, rc1) == (0, 0), (err0[-3000:], err1[-3000:])
    notice = "no --data: using the sample probe set written to"
    assert err0.count(notice) == 1 and notice not in err1
    assert err0.count("loading model") == 1 and "loading model" not in err1
    assert "run folder" in out0 and out1 == ""
    results = json.loads((out / "results.json").read_text())
    assert results["world_size"] == 2 and results["n_failed"] == 0
    assert results.get("n_items", results.get("n_pairs")) == (18 if command == ["probe"] else 2)
