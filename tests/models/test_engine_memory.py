"""The engine's memory: rows grouped by image give the numbers of scoring each pair alone, on every backend
that caches image states; a masking game under a tight budget scores a call a sub-group of masks at a time
with the numbers of a roomy one; a batch that runs out of memory is halved, retried and reported."""

import numpy as np
import pytest
import torch

from connote.models import load_model
from tests.support import tiny_models
from tests.support.tiny_models import random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits on a bench", "a cat", "a dog holds a red cup with a hand"]
# image 0 with four captions, image 1 with two, image 2 with one, out of order
PAIRS = [(0, 0), (1, 1), (0, 1), (2, 3), (0, 2), (1, 0), (0, 3)]


@pytest.fixture(scope="module")
def albef_spec(tmp_path_factory):
    ckpt, tok = tiny_models.tiny_albef(tmp_path_factory.mktemp("albef") / "ft", seed=1, layout="retrieval", grid=4)
    return f"albef-itm:{ckpt}?tokenizer={tok}&image_size=32"


@pytest.mark.parametrize("backend", ["hf-blip-itm", "hf-blip2-itm", "hf-flava-itm", "hf-clip", "albef-itm"])
def test_grouped_rows_give_each_pair_alone(tiny_dirs, albef_spec, backend):
    spec = albef_spec if backend == "albef-itm" else f"{backend}:{tiny_dirs[backend]}"
    matcher = load_model(f"{spec}{'&' if '?' in spec else '?'}batch_size=64")
    together = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    alone = [matcher.match_probability(IMAGES, CAPTIONS, [pair])[0] for pair in PAIRS]
    assert together == pytest.approx(alone, abs=1e-6)
    assert len({round(p, 5) for p in together}) > 2  # the tiny model tells pairs apart


def test_masking_game_under_a_tight_budget_scores_sub_groups_with_the_same_values(tiny_blip_dir, monkeypatch):
    from connote.models.masking import game_plan, tensor_game

    roomy = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    tight = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    tight._memory_budget = 12 * tight.held_bytes_per_image()  # the states share holds 3 masks
    plan = game_plan(tight)
    assert plan["group_images"] == 3 and plan["peak_bytes"] <= tight.memory_budget
    rng = np.random.default_rng(0)
    want = tensor_game(roomy, IMAGES[0], CAPTIONS[0], compat="connote")
    game = tensor_game(tight, IMAGES[0], CAPTIONS[0], compat="connote")
    masks = rng.random((40, want.n_text + want.n_patches)) < 0.5
    held = []
    real = tight.score_ids
    monkeypatch.setattr(tight, "score_ids", lambda states, *a: held.append(len(states)) or real(states, *a))
    assert game.value_fn(masks) == pytest.approx(want.value_fn(masks), abs=1e-6)
    assert len(held) > 1 and max(held) <= 3  # never more than a sub-group's states at a time


def test_a_batch_that_runs_out_of_memory_is_halved_retried_and_reported(tiny_dirs, capsys):
    matcher = load_model(f"hf-blip2-itm:{tiny_dirs['hf-blip2-itm']}?batch_size=8&image_batch_size=4")
    want = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    sizes = {"score": [], "encode": []}
    score, encode = matcher.score_rows, matcher.encode_images

    def tight_score(states, rows, *a):  # noqa: ANN001, ANN002
        sizes["score"].append(len(rows))
        if len(rows) > 2:  # what a device with room for two rows does
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 7.81 GiB")
        return score(states, rows, *a)

    def tight_encode(pv):  # noqa: ANN001
        sizes["encode"].append(len(pv))
        if len(pv) > 1:
            raise MemoryError
        return encode(pv)

    matcher.score_rows, matcher.encode_images = tight_score, tight_encode
    assert matcher.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(want, abs=1e-6)
    assert sum(n for n in sizes["score"] if n <= 2) == len(PAIRS)  # each pair scored once, in batches that fit
    assert sum(n for n in sizes["encode"] if n == 1) == len(IMAGES)
    plan = matcher.work_plan()
    assert plan["score_batch"] == 2 and plan["image_batch"] == 1  # lowered for the rest of the run
    err = capsys.readouterr().err
    assert "score_batch is now" in err and "image_batch is now 1" in err
    assert len(matcher.memory_events) == err.count("ran out of memory")


@pytest.mark.parametrize("backend", ["hf-flava-itm", "hf-clip"])
def test_cached_text_backends_halve_caption_and_pair_batches_that_run_out_of_memory(tiny_dirs, backend, capsys):
    """FLAVA and CLIP encode each caption once and score its pairs: both batches go through halve_on_oom."""
    matcher = load_model(f"{backend}:{tiny_dirs[backend]}?batch_size=8")
    want = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    sizes = {"texts": [], "rows": []}
    encode, score = matcher.encode_texts, matcher.score_text_rows

    def tight_encode(ids, mask):  # noqa: ANN001
        sizes["texts"].append(len(ids))
        if len(ids) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return encode(ids, mask)

    def tight_score(states, image_rows, *a):  # noqa: ANN001, ANN002
        sizes["rows"].append(len(image_rows))
        if len(image_rows) > 1:
            raise MemoryError
        return score(states, image_rows, *a)

    matcher.encode_texts, matcher.score_text_rows = tight_encode, tight_score
    assert matcher.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(want, abs=1e-6)
    assert sum(n for n in sizes["texts"] if n <= 2) == len(CAPTIONS)  # each caption encoded once, in batches that fit
    assert sum(n for n in sizes["rows"] if n == 1) == len(PAIRS)
    assert matcher.work_plan()["score_batch"] == 1
    assert "score_batch is now" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["hf-flava-itm", "hf-clip"])
def test_cached_text_backends_gather_no_state_per_row(tiny_dirs, backend, monkeypatch):
    """A caption's encoded state and an image's state are read in place for all of their rows: the engine's
    per-row gather (``index_states``) is never called, in a probe call or in a masking game's."""
    from connote.models import engine
    from connote.models.masking import tensor_game

    matcher = load_model(f"{backend}:{tiny_dirs[backend]}?batch_size=64")
    want = [matcher.match_probability(IMAGES, CAPTIONS, [pair])[0] for pair in PAIRS]
    game = tensor_game(matcher, IMAGES[0], CAPTIONS[3], compat="connote")
    masks = np.random.default_rng(0).random((12, game.n_text + game.n_patches)) < 0.5
    values = game.value_fn(masks)

    def gathered(*a):  # noqa: ANN002
        raise AssertionError("a state was gathered per row")

    monkeypatch.setattr(engine, "index_states", gathered)
    assert matcher.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(want, abs=1e-6)
    assert game.value_fn(masks) == pytest.approx(values, abs=1e-6)


@pytest.mark.slow
def test_real_size_peaks_stay_under_the_plan(tmp_path):
    """BLIP-base (random weights, from its config) on the CPU under memory_budget=1GB: the measured peak
    resident memory of a probe call and of a masking-game call (benchmarks/engine_memory.py, freed blocks
    returned to the system) stays under the plan's prediction, which stays under the budget (~5 min)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from connote.models.memory import PeakRSS

    if not PeakRSS.available():
        pytest.skip("needs Linux's /proc/self/clear_refs")
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "memory.json"
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, str(root / "benchmarks" / "engine_memory.py"), "--budget", "1GB",
                    "--images", "4", "--masks", "16", "--json", str(out)], check=True, env=env)
    figures = json.loads(out.read_text())
    for name in ("probe", "explain"):
        r = figures[name]
        assert 0 < r["peak_bytes"] <= r["plan_peak_bytes"] <= 10**9, (name, r)
