"""BLIP-2's rows grouped by image: each Q-Former cross-attention layer reads an image's keys and values once for
all of its rows, with transformers' Blip2ForImageTextRetrieval p(match), and no image state copied per row."""

import numpy as np
import pytest
import torch

from connote.core.errors import InputError
from connote.models import load_model
from connote.models.blip_attention import CrossSide, grouped_cross_attention
from connote.models.engine import ImageStates
from tests.support import tiny_models
from tests.support.references import transformers_p_match
from tests.support.tiny_models import random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits", "a cat", "a dog holds a red cup with a hand near a car"]
# three images with 5, 1 and 3 rows, out of order; then every row of one image
MIXED = [(0, 0), (2, 1), (0, 1), (1, 3), (0, 2), (2, 3), (0, 3), (2, 0), (0, 0)]
ONE_IMAGE = [(1, c) for c in (0, 1, 2, 3, 2)]


@pytest.fixture(scope="module")
def every_layer_dir(tmp_path_factory):
    """A tiny BLIP-2 whose two Q-Former layers both cross-attend (the default tiny one: only the first)."""
    return tiny_models.tiny_blip2(tmp_path_factory.mktemp("blip2") / "m", seed=1, cross_attention_frequency=1)


@pytest.fixture(params=["every-2nd", "every"])
def folder(request, tiny_dirs, every_layer_dir):
    return tiny_dirs["hf-blip2-itm"] if request.param == "every-2nd" else every_layer_dir


def reference(folder, pairs):
    """p(match) per pair from a freshly loaded, unpatched Blip2ForImageTextRetrieval, one pair at a time."""
    return transformers_p_match("hf-blip2-itm", folder, IMAGES, CAPTIONS, pairs)


def test_grouped_is_the_default_and_eager_keeps_transformers_attention(tiny_dirs):
    folder = tiny_dirs["hf-blip2-itm"]
    grouped = load_model(f"hf-blip2-itm:{folder}")
    eager = load_model(f"hf-blip2-itm:{folder}?attention=eager")
    cross = [layer.crossattention.attention for layer in grouped.model.qformer.encoder.layer
             if layer.has_cross_attention]
    assert cross and [side.attention for side in grouped._sides] == cross
    assert all(m.forward.__func__ is grouped_cross_attention and isinstance(m.__dict__["_connote_side"], CrossSide)
               for m in cross)
    assert not eager._sides and not any("forward" in vars(m) for m in eager.model.qformer.modules())
    assert "attention" not in grouped.describe() and eager.describe()["attention"] == "eager"  # in the fingerprint
    with pytest.raises(InputError, match="attention must be sdpa or eager"):
        load_model(f"hf-blip2-itm:{folder}?attention=flash")


@pytest.mark.parametrize("options", ["", "attention=eager"])
def test_mixed_and_one_image_batches_give_transformers_p_match(folder, options):
    """Three images with uneven row counts in one scoring batch, and a batch whose rows all share one image, from
    one state tensor or one tensor per image: p(match) of transformers' reference within 1e-5 (fp32)."""
    matcher = load_model(f"hf-blip2-itm:{folder}?{options}")
    per_image = matcher.image_states(IMAGES)
    assert isinstance(per_image, ImageStates)
    ids = matcher.token_ids(CAPTIONS)
    for pairs in (MIXED, ONE_IMAGE):
        want = reference(folder, pairs)
        assert len({round(p, 4) for p in want}) > 2, "the tiny model must tell pairs apart for this test to mean much"
        image_of, rows = [i for i, _ in pairs], [ids[c] for _, c in pairs]
        for states in (per_image, torch.cat(list(per_image))):
            assert matcher.score_ids(states, image_of, rows, batch=len(pairs)) == pytest.approx(want, abs=1e-5)
        assert matcher.match_probability(IMAGES, CAPTIONS, pairs) == pytest.approx(want, abs=1e-5)
    assert all(side.groups is None and side.states is None for side in matcher._sides)  # a call leaves nothing


def _watch(matcher, monkeypatch):
    """Record the engine's per-row gathers and, per cross-attention layer, the rows its key projection sees."""
    import connote.models.engine as engine

    seen = {"gathers": [], "key_rows": []}
    real = engine.index_states
    monkeypatch.setattr(engine, "index_states", lambda states, idx: seen["gathers"].append(len(idx))
                        or real(states, idx))
    for layer in matcher.model.qformer.encoder.layer:
        if layer.has_cross_attention:
            layer.crossattention.attention.key.register_forward_hook(
                lambda module, args, out: seen["key_rows"].append(args[0].shape[0]))
    return seen


@pytest.mark.parametrize("options", ["", "attention=eager"])
def test_no_image_state_is_copied_per_row(folder, options, monkeypatch):
    """Grouped (the default): the engine never gathers states per row, and each cross-attention layer projects
    the keys of the batch's 3 images once, not of its 9 rows. ``attention=eager`` (transformers on gathered
    rows) is the control: there the gather and the per-row projections are seen, so the check can fail."""
    matcher = load_model(f"hf-blip2-itm:{folder}?{options}")
    states = matcher.image_states(IMAGES)
    ids = matcher.token_ids(CAPTIONS)
    seen = _watch(matcher, monkeypatch)
    matcher.score_ids(states, [i for i, _ in MIXED], [ids[c] for _, c in MIXED], batch=len(MIXED))
    layers = sum(layer.has_cross_attention for layer in matcher.model.qformer.encoder.layer)
    if options:
        assert seen["gathers"] == [len(MIXED)] and seen["key_rows"] == [len(MIXED)] * layers
    else:
        assert seen["gathers"] == [] and sum(seen["key_rows"]) == len(IMAGES) * layers


def test_masking_game_scores_as_transformers_on_gathered_rows(tiny_dirs, monkeypatch):
    """explain's path (hf-blip2-itm can mask): a value-function call over many joint masks scores each masked
    image's rows together, with the values of transformers' Q-Former on a state per row (attention=eager)."""
    from connote.models.masking import tensor_game

    folder = tiny_dirs["hf-blip2-itm"]
    grouped = load_model(f"hf-blip2-itm:{folder}")
    eager = load_model(f"hf-blip2-itm:{folder}?attention=eager")
    want_game = tensor_game(eager, IMAGES[0], CAPTIONS[3], compat="connote")
    game = tensor_game(grouped, IMAGES[0], CAPTIONS[3], compat="connote")
    rng = np.random.default_rng(0)
    players = game.n_text + game.n_patches
    masks = rng.random((24, players)) < 0.5
    masks[12:, game.n_text:] = masks[0, game.n_text:]  # half the rows share one image mask, many rows per image
    want = want_game.value_fn(masks)
    assert len({round(float(v), 4) for v in want}) > 2
    seen = _watch(grouped, monkeypatch)
    assert game.value_fn(masks) == pytest.approx(want, abs=1e-5)
    assert seen["gathers"] == [] and seen["key_rows"]  # the grouped path ran, and gathered nothing


@pytest.mark.slow
def test_grouped_scoring_at_q_former_size_holds_no_state_per_row(monkeypatch):
    """benchmarks/blip2_grouped.py at the Q-Former's full size (ViT-g/14-shaped tokens, one vision layer; 2 images x
    8 rows in one batch): each side's peak stays under the plan's bytes per pair for its rows, grouped rows hold
    less than gathered ones, and the sides agree (~30 s)."""
    from tests.support.benchmark_scripts import load

    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    sides = load("blip2_grouped").main(["--images", "2", "--rows", "8"])
    for side in sides.values():
        assert 0 < side["peak"] <= side["pairs"] * side["plan_per_pair"]
    assert sides["sdpa"]["peak"] < sides["eager"]["peak"]  # no [rows, 257, 1408] gather, no keys and values per row
    assert max(abs(a - b) for a, b in zip(sides["eager"]["p"], sides["sdpa"]["p"])) <= 1e-5
