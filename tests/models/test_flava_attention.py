"""FLAVA scored through torch's fused attention gives the probabilities of transformers' eager FLAVA."""

import pytest
import torch

from connote.models import load_model
from connote.models.hf_flava import sdpa_flava_attention
from tests.support.references import transformers_p_match
from tests.support.tiny_models import random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits", "a cat", "a dog holds a red cup with a hand near a car"]
PAIRS = [(0, 0), (0, 1), (1, 1), (2, 2), (1, 0), (2, 3), (0, 3), (1, 3)]


def eager_reference(folder, pairs):
    """p(match) per pair from a freshly loaded, unpatched FlavaForPreTraining, one pair at a time."""
    return transformers_p_match("hf-flava-itm", folder, IMAGES, CAPTIONS, pairs)


def _patched(matcher) -> list[bool]:
    return [getattr(m.forward, "__func__", None) is sdpa_flava_attention for m in matcher.model.modules()
            if type(m).__name__ == "FlavaSelfAttention"]


def test_sdpa_is_the_default_and_matches_eager_transformers(tiny_dirs):
    folder = tiny_dirs["hf-flava-itm"]
    fused = load_model(f"hf-flava-itm:{folder}")
    eager = load_model(f"hf-flava-itm:{folder}?attention=eager")
    assert _patched(fused) and all(_patched(fused)) and not any(_patched(eager))
    assert "attention" not in fused.describe() and eager.describe()["attention"] == "eager"  # in the fingerprint
    want = eager_reference(folder, PAIRS)
    assert fused.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(want, abs=5e-6)  # SDPA vs eager, fp32
    assert eager.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(want, abs=1e-6)
    assert len({round(p, 4) for p in want}) > 2  # the tiny model tells pairs apart


def test_attention_maps_asked_for_run_the_eager_code(tiny_dirs):
    fused = load_model(f"hf-flava-itm:{tiny_dirs['hf-flava-itm']}")
    inputs = fused.processor(images=IMAGES[0], text=CAPTIONS[0], return_tensors="pt")
    with torch.no_grad():
        out = fused.model.flava(**inputs, output_attentions=True)
    maps = out.text_output.attentions  # FlavaModel passes output_attentions to its unimodal encoders
    assert maps is not None and len(maps) == len(fused.model.flava.text_model.encoder.layer)
    assert maps[0].shape[-1] == maps[0].shape[-2] == inputs["input_ids"].shape[1]


def test_unknown_attention_is_refused(tiny_dirs):
    with pytest.raises(Exception, match="attention must be sdpa or eager"):
        load_model(f"hf-flava-itm:{tiny_dirs['hf-flava-itm']}?attention=flash")


@pytest.mark.slow
def test_scoring_peak_at_flava_base_width_stays_under_the_plan(monkeypatch):
    """benchmarks/flava_attention.py at FLAVA-base width (one layer per encoder, 32 pairs in one batch): each side's
    measured peak stays under the plan's bytes per pair for that many pairs, and the sides agree (~1 min)."""
    from tests.support.benchmark_scripts import load

    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    sides = load("flava_attention").main(["--images", "4", "--captions", "8", "--layers", "1"])
    for side in sides.values():
        assert 0 < side["peak"] <= side["pairs"] * side["plan_per_pair"]
    assert sides["sdpa"]["peak"] < sides["eager"]["peak"]  # the fused kernel writes no score matrices
    assert max(abs(a - b) for a, b in zip(sides["eager"]["p"], sides["sdpa"]["p"])) <= 5e-6  # fp32 kernels differ
