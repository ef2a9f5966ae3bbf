"""Every backend through its real loading path (``from_pretrained`` on a saved tiny model).

The engine's batched, image-reusing scores are checked against the model's own Hugging Face
forward pass run one pair at a time.
"""

import pytest
import torch

from connote.models import MODELS, load_model
from connote.models.engine import TensorMatcher

from .conftest import BUILDERS, random_image

IMAGES = [random_image(s) for s in range(3)]
CAPTIONS = ["a man begs on the street", "a woman sits on a bench", "a cat", "a dog holds a red cup with a hand"]
PAIRS = [(0, 0), (0, 1), (1, 1), (2, 2), (1, 0), (2, 3), (0, 3)]


def reference_probability(name, matcher, image, caption):
    """The plain HF forward pass for one pair (what a user's naive loop computes)."""
    m = matcher.model
    proc = matcher.processor
    with torch.no_grad():
        if name == "hf-vlm-yesno":
            return matcher.match_probability([image], [caption], [(0, 0)])[0]
        inputs = proc(images=[image], text=[caption], return_tensors="pt")
        if name == "hf-blip-itm":
            logits = m(input_ids=inputs["input_ids"], pixel_values=inputs["pixel_values"],
                       attention_mask=inputs["attention_mask"]).itm_score
            return logits.softmax(-1)[0, 1].item()
        if name == "hf-blip2-itm":
            out = m(pixel_values=inputs["pixel_values"], input_ids=inputs["input_ids"],
                    attention_mask=inputs["attention_mask"], use_image_text_matching_head=True)
            return out.logits_per_image.softmax(-1)[0, 1].item()
        if name == "hf-flava-itm":
            out = m.flava(input_ids=inputs["input_ids"], pixel_values=inputs["pixel_values"],
                          attention_mask=inputs["attention_mask"], output_hidden_states=True)
            return m.itm_head(out.multimodal_embeddings).softmax(-1)[0, 1].item()
        if name == "hf-clip":
            out = m(**inputs)
            cos = (out.logits_per_image / m.logit_scale.exp()).item()
            return torch.sigmoid(torch.tensor(matcher.scale * (cos - matcher.threshold))).item()
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_backend_loads_by_spec_and_matches_reference(name, tiny_dirs):
    matcher = load_model(f"{name}:{tiny_dirs[name]}?batch_size=3")
    probs = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    assert len(probs) == len(PAIRS)
    assert all(0.0 <= p <= 1.0 for p in probs)
    assert len({round(p, 6) for p in probs}) > 1, "random model should separate pairs"
    ref = [reference_probability(name, matcher, IMAGES[i], CAPTIONS[c]) for i, c in PAIRS]
    assert probs == pytest.approx(ref, abs=2e-5)
    d = matcher.describe()
    assert d["backend"] == name and d["weights"] == str(tiny_dirs[name].resolve())


@pytest.mark.parametrize("name", sorted(n for n in BUILDERS if n != "hf-vlm-yesno"))
def test_engine_masking_ids_come_from_tokenizer(name, tiny_dirs):
    matcher = load_model(f"{name}:{tiny_dirs[name]}")
    assert isinstance(matcher, TensorMatcher)
    tok = matcher.tokenizer
    assert matcher.mask_token_id == tok.mask_token_id
    assert tok.cls_token_id in matcher.special_token_ids()


def test_registry_lists_backends_and_rejects_unknown():
    assert {"hf-blip-itm", "hf-blip2-itm", "hf-flava-itm", "hf-clip", "hf-vlm-yesno", "openai",
            "objects"} <= set(MODELS.names())
    with pytest.raises(KeyError, match="valid models: .*hf-blip-itm"):
        load_model("hf-blipp-itm:x")


def test_yes_no_ids_exclude_unknown_token(tiny_dirs):
    matcher = load_model(f"hf-vlm-yesno:{tiny_dirs['hf-vlm-yesno']}")
    unk = matcher.processor.tokenizer.unk_token_id
    assert unk not in matcher.yes_ids and unk not in matcher.no_ids
    assert set(matcher.processor.tokenizer.convert_ids_to_tokens(matcher.yes_ids)) == {"Yes", "yes"}


def test_blip_cross_attention_cache_gives_the_same_numbers(tiny_dirs):
    cached = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}")
    plain = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}?cache_cross_attention=false")
    assert len(cached._projections) == 4 and not plain._projections  # 2 layers x key/value
    states = cached.image_states(IMAGES)
    assert states.shape[-1] == 32 * 5  # vision width + 4 projections of width 32
    assert cached.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(
        plain.match_probability(IMAGES, CAPTIONS, PAIRS), abs=1e-6)
