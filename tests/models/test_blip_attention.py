"""BLIP scored through torch's fused attention gives the probabilities of transformers' eager BLIP."""

import pytest
import torch

from connote.core.errors import InputError
from connote.models import load_model
from connote.models.hf_itm import _sdpa_text_attention, _sdpa_vision_attention
from tests.tiny_models import random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits", "a cat", "a dog holds a red cup with a hand near a car"]
PAIRS = [(0, 0), (0, 1), (1, 1), (2, 2), (1, 0), (2, 3), (0, 3), (1, 3)]


def eager_reference(folder, pairs):
    """p(match) per pair from a freshly loaded, unpatched BlipForImageTextRetrieval, one pair at a time."""
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    model = BlipForImageTextRetrieval.from_pretrained(folder).eval()
    processor = AutoProcessor.from_pretrained(folder)
    out = []
    with torch.no_grad():
        for i, c in pairs:
            inputs = processor(images=IMAGES[i], text=CAPTIONS[c], return_tensors="pt")
            out.append(model(**inputs).itm_score.softmax(-1)[0, 1].item())
    return out


def test_sdpa_is_the_default_and_matches_eager_transformers(tiny_blip_dir):
    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}?batch_size=3&image_batch_size=2")
    vision = matcher.model.vision_model.encoder.layers[0].self_attn
    text = matcher.model.text_encoder.encoder.layer[0]
    assert vision.forward.__func__ is _sdpa_vision_attention
    assert text.attention.self.forward.__func__ is _sdpa_text_attention
    assert text.crossattention.self.forward.__func__ is _sdpa_text_attention
    assert "attention" not in matcher.describe()
    probs = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)  # padded batches of mixed caption lengths
    ref = eager_reference(tiny_blip_dir, PAIRS)
    assert len({round(p, 4) for p in ref}) > 2, "the tiny model must tell pairs apart for this test to mean much"
    assert probs == pytest.approx(ref, abs=1e-6)


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
    from connote.models.engine import ImageStates
    from connote.models.hf_itm import _CrossSide

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}?{options}")
    grouped = "eager" not in options
    assert bool(matcher._sides) == grouped
    if grouped:
        side = matcher.model.text_encoder.encoder.layer[0].crossattention.self.__dict__["_connote_side"]
        assert isinstance(side, _CrossSide) and (side.offset is None) == ("false" in options)
    states = matcher.image_states(IMAGES)
    ids = matcher.token_ids(CAPTIONS)
    image_of = [i for i, _ in PAIRS]
    rows = [ids[c] for _, c in PAIRS]
    ref = eager_reference(tiny_blip_dir, PAIRS)
    assert matcher.score_ids(states, image_of, rows, batch=5) == pytest.approx(ref, abs=1e-6)
    per_image = ImageStates(states[j:j + 1] for j in range(len(IMAGES)))
    assert matcher.score_ids(per_image, image_of, rows, batch=5) == pytest.approx(ref, abs=1e-6)
    assert all(side.groups is None for side in matcher._sides)  # a call leaves no rows behind


def test_accelerators_group_rows_only_for_images_with_many(tiny_blip_dir, monkeypatch):
    """On a CPU rows are always grouped by image; elsewhere only from ACCELERATOR_ROWS_PER_IMAGE rows per image
    (probe batches of a few captions per image keep one batched kernel per layer), with the same p(match)."""
    from connote.models.hf_itm import ACCELERATOR_ROWS_PER_IMAGE

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    states = matcher.image_states(IMAGES)
    input_ids, mask = matcher.pad(matcher.token_ids(CAPTIONS[:2] * ACCELERATOR_ROWS_PER_IMAGE))
    few = torch.tensor([0, 1, 2, 0] * (len(input_ids) // 4))
    many = torch.zeros(len(input_ids), dtype=torch.long)
    grouped = []
    real = matcher._score_grouped
    monkeypatch.setattr(matcher, "_score_grouped", lambda *a: grouped.append(len(a[0])) or real(*a))
    with torch.inference_mode():
        on_cpu = [matcher.score_rows(states, rows, input_ids, mask, None) for rows in (few, many)]
        assert grouped == [3, 1]
        monkeypatch.setattr(matcher, "device", "cuda:0")  # the rule reads the device name; tensors stay put
        elsewhere = [matcher.score_rows(states, rows, input_ids, mask, None) for rows in (few, many)]
    assert grouped == [3, 1, 1]  # the few-rows batch was gathered per row
    for a, b in zip(on_cpu, elsewhere):
        assert torch.allclose(a, b, atol=1e-6)
