"""BLIP scored through torch's fused attention gives the probabilities of transformers' eager BLIP."""

import pytest
import torch

from connote.core.errors import InputError
from connote.models import load_model
from connote.models.blip_attention import sdpa_text_attention, sdpa_vision_attention
from tests.support.references import transformers_p_match
from tests.support.tiny_models import random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits", "a cat", "a dog holds a red cup with a hand near a car"]
PAIRS = [(0, 0), (0, 1), (1, 1), (2, 2), (1, 0), (2, 3), (0, 3), (1, 3)]


def eager_reference(folder, pairs):
    """p(match) per pair from a freshly loaded, unpatched BlipForImageTextRetrieval, one pair at a time."""
    return transformers_p_match("hf-blip-itm", folder, IMAGES, CAPTIONS, pairs)


def test_sdpa_is_the_default_and_matches_eager_transformers(tiny_blip_dir):
    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}?batch_size=3&image_batch_size=2")
    vision = matcher.model.vision_model.encoder.layers[0].self_attn
    text = matcher.model.text_encoder.encoder.layer[0]
    assert vision.forward.__func__ is sdpa_vision_attention
    assert text.attention.self.forward.__func__ is sdpa_text_attention
    assert text.crossattention.self.forward.__func__ is sdpa_text_attention
    assert "attention" not in matcher.describe()
    probs = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)  # padded batches of mixed caption lengths
    ref = eager_reference(tiny_blip_dir, PAIRS)
    assert len({round(p, 4) for p in ref}) > 2, "the tiny model must tell pairs apart for this test to mean much"
    assert probs == pytest.approx(ref, abs=5e-6)  # fp32: SDPA against eager kernels, one or more threads


def test_eager_option_keeps_transformers_attention(tiny_blip_dir):
    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}?attention=eager&batch_size=3")
    assert "forward" not in vars(matcher.model.vision_model.encoder.layers[0].self_attn)
    assert matcher.describe()["attention"] == "eager"
    assert matcher.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(eager_reference(tiny_blip_dir, PAIRS),
                                                                               abs=1e-6)
    with pytest.raises(InputError, match="attention must be sdpa or eager"):
        load_model(f"hf-blip-itm:{tiny_blip_dir}?attention=flash")


def test_attention_maps_requested_fall_back_to_eager(tiny_blip_dir):
    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    pixel_values = matcher.pixel_values(IMAGES[:1])
    with torch.no_grad():
        out = matcher.model.vision_model(pixel_values=pixel_values, output_attentions=True)
    assert out.attentions is not None and all(a is not None for a in out.attentions)
    assert torch.allclose(out.attentions[0].sum(-1), torch.ones(()), atol=1e-5)


@pytest.mark.parametrize("options", ["", "cache_cross_attention=false", "attention=eager"])
def test_rows_of_shared_images_score_as_eager_transformers(tiny_blip_dir, options):
    """Rows naming images out of order and repeatedly, from one state tensor or one tensor per image: the
    grouped cross-attention (sdpa) and the per-row gather (eager) both give transformers' eager p(match)."""
    from connote.models.blip_attention import CrossSide
    from connote.models.engine import ImageStates

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}?{options}")
    grouped = "eager" not in options
    assert bool(matcher._sides) == grouped
    if grouped:
        side = matcher.model.text_encoder.encoder.layer[0].crossattention.self.__dict__["_connote_side"]
        assert isinstance(side, CrossSide) and (side.offset is None) == ("false" in options)
    per_image = matcher.image_states(IMAGES)
    assert isinstance(per_image, ImageStates) and len(per_image) == len(IMAGES)  # not copied into one tensor
    states = torch.cat(list(per_image))
    ids = matcher.token_ids(CAPTIONS)
    image_of = [i for i, _ in PAIRS]
    rows = [ids[c] for _, c in PAIRS]
    ref = eager_reference(tiny_blip_dir, PAIRS)
    tol = 5e-6 if grouped else 1e-6  # fp32: SDPA against eager kernels (1.13e-6 seen on an Intel Xeon), as above
    assert matcher.score_ids(states, image_of, rows, batch=5) == pytest.approx(ref, abs=tol)
    assert matcher.score_ids(per_image, image_of, rows, batch=5) == pytest.approx(ref, abs=tol)
    assert all(side.groups is None for side in matcher._sides)  # a call leaves no rows behind


def test_rows_are_grouped_by_image_on_every_device_with_buckets_of_like_sizes(tiny_blip_dir, monkeypatch):
    """Rows are grouped by image on a CPU and elsewhere alike; images whose row counts are within a factor of
    two share one attention call per layer (shorter groups padded and their padding dropped), with the
    p(match) of scoring each row alone; no image state is copied per row (the path no longer reads the device)."""
    from connote.models.grouped import RowGroups

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    states = matcher.image_states(IMAGES)
    ids = matcher.token_ids(CAPTIONS)
    image_of = [0] * 7 + [1] + [2] * 3 + [0, 2]  # groups of 8, 1 and 4 rows: two buckets
    caption_of = [k % len(CAPTIONS) for k in range(len(image_of))]
    groups = RowGroups(image_of, "cpu")
    assert [b[0] for b in groups.buckets] == [[0, 2], [1]] and [b[1] for b in groups.buckets] == [8, 1]
    alone = [matcher.score_ids(states, [i], [ids[c]]) for i, c in zip(image_of, caption_of)]
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, k, v, **kw: calls.append(k.shape[0]) or real(q, k, v, **kw))
    together = matcher.score_ids(states, image_of, [ids[c] for c in caption_of], batch=len(image_of))
    assert together == pytest.approx([a[0] for a in alone], abs=5e-6)  # fp32: one batch against row by row
    layers = len(matcher._sides)
    cross = [n for n in calls if n in (1, 2)][-2 * layers:]  # the text model's cross-attention calls
    assert sorted(cross) == [1] * layers + [2] * layers  # one call per bucket and layer, keys of 2 and 1 images
