"""Every backend through its real loading path (``from_pretrained`` on a saved tiny model).

The engine's batched, image-reusing scores are checked against the model's own Hugging Face
forward pass run one pair at a time.
"""

import pytest
import torch

from connote.models import MODELS, load_model
from connote.models.engine import TensorMatcher
from tests.support.tiny_models import BUILDERS, random_image

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
    canonical = {"hf-vlm-yesno": "hf-vlm"}.get(name, name)  # an alias's fingerprint is its backend's
    assert d["backend"] == canonical and d["weights"] == str(tiny_dirs[name].resolve())


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
    states = torch.cat(list(cached.image_states(IMAGES)))  # one (1, ...) state per image, not copied into one
    assert states.shape[-1] == 32 * 5  # vision width + 4 projections of width 32
    assert cached.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(
        plain.match_probability(IMAGES, CAPTIONS, PAIRS), abs=1e-6)


# ---- memory-sized work ---------------------------------------------------------------------------
def test_memory_budget_option_parses_sizes_and_rejects_nonsense(tiny_dirs):
    from connote.models.engine import parse_bytes

    assert parse_bytes("2GB") == 2 * 10**9 and parse_bytes("512MiB") == 512 * 2**20
    assert parse_bytes("1.5g") == 1_500_000_000 and parse_bytes("4096") == 4096 and parse_bytes("auto") is None
    for bad in ("lots", "2XB", "-1GB", "0"):
        with pytest.raises(ValueError, match="memory_budget"):
            parse_bytes(bad)
    matcher = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}?memory_budget=3MB")
    assert matcher.memory_budget == 3_000_000


def test_budget_splits_a_call_into_image_groups_with_the_same_numbers(tiny_dirs, monkeypatch):
    """A budget of a few image states: images are encoded in sub-groups, states freed between them."""
    roomy = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}?batch_size=64")
    expected = roomy.match_probability(IMAGES, CAPTIONS, PAIRS)
    assert len(roomy.image_groups(PAIRS)) == 1

    tight = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}?batch_size=64")
    state = tight.image_state_bytes()
    assert state == 17 * 32 * 5 * 4  # (16 patches + CLS) x (vision width + 4 projections of width 32) x fp32
    held = tight.held_bytes_per_image()
    assert held == state + 3 * 32 * 32 * 4  # and its preprocessed pixels, held while the group is scored
    tight._memory_budget = 2 * held * 2  # half of it holds two images' states and pixels
    plan = tight.work_plan()
    assert plan["group_images"] == 2
    assert plan["score_batch"] == min(64, 2 * held // tight.score_bytes_per_pair())  # pair: 3/5 of a state
    tight.batch_size = 3
    plan = tight.work_plan()
    assert plan["peak_bytes"] <= tight.memory_budget
    # first-use order; image 0's three pairs fill a scoring batch, images 1 and 2 share the next
    assert tight.image_groups(PAIRS) == [[0], [1, 2]]
    live: list[int] = []
    encode = tight.encode_images
    monkeypatch.setattr(tight, "encode_images", lambda pv: live.append(pv.shape[0]) or encode(pv))
    assert tight.match_probability(IMAGES, CAPTIONS, PAIRS) == pytest.approx(expected, abs=1e-6)
    assert sum(live) == 3 and max(live) <= 2  # each image encoded once, never more than a group at a time


def test_scoring_batch_follows_the_budget_per_pair(tiny_dirs):
    matcher = load_model(f"hf-blip-itm:{tiny_dirs['hf-blip-itm']}?batch_size=64")
    per_pair = matcher.score_bytes_per_pair()
    # one layer's keys and values plus the vision tokens: 3 of the state's 5 slices
    assert per_pair == matcher.image_state_bytes() * 3 // 5
    matcher._memory_budget = 2 * 3 * per_pair
    assert matcher.work_plan()["score_batch"] == 3
    assert matcher.work_plan()["image_batch"] >= 1


# ---- fingerprints ---------------------------------------------------------------------------------
def _copy_model(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_fingerprint_hashes_content_not_stamps(tiny_dirs, tmp_path):
    """Different weights copied in with the same size and times change the fingerprint; same bytes do not."""
    import os
    import shutil

    from connote.models.hub_identity import DIGEST_SIDECAR, weights_identity

    folder = _copy_model(tiny_dirs["hf-blip-itm"], tmp_path / "blip")
    first = weights_identity(str(folder), None, None)
    assert (folder / DIGEST_SIDECAR).is_file()
    assert set(first["files"]) >= {"model.safetensors", "config.json"}
    assert weights_identity(str(folder), None, None) == first  # same bytes, read from the sidecar

    other = tmp_path / "other"  # same architecture, other random weights: the same file size
    from tests.support.tiny_models import tiny_blip

    tiny_blip(other, seed=1)
    target = folder / "model.safetensors"
    assert target.stat().st_size == (other / "model.safetensors").stat().st_size
    before = target.stat()
    with open(other / "model.safetensors", "rb") as src, open(target, "r+b") as dst:  # cp: same inode
        shutil.copyfileobj(src, dst)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    changed = weights_identity(str(folder), None, None)
    assert changed["files"]["model.safetensors"] != first["files"]["model.safetensors"]
    assert changed["files"]["config.json"] == first["files"]["config.json"]

    same = _copy_model(folder, tmp_path / "same")  # the same bytes elsewhere: the same content digests
    assert weights_identity(str(same), None, None)["files"] == changed["files"]


def test_fingerprint_digest_sidecar_is_reused_and_survives_a_read_only_folder(tiny_dirs, tmp_path, monkeypatch):
    from connote.models import hub_identity

    folder = _copy_model(tiny_dirs["hf-clip"], tmp_path / "clip")
    first = hub_identity.content_digests(folder)
    hashed: list[str] = []
    real = hub_identity.file_sha256
    monkeypatch.setattr(hub_identity, "file_sha256", lambda p: hashed.append(p.name) or real(p))
    assert hub_identity.content_digests(folder) == first and hashed == []  # unchanged: no file read
    (folder / "config.json").write_text((folder / "config.json").read_text())  # rewritten, same bytes
    assert hub_identity.content_digests(folder) == first and hashed == ["config.json"]
    (folder / hub_identity.DIGEST_SIDECAR).write_text("{not json")  # a damaged sidecar is only a cache miss
    assert hub_identity.content_digests(folder) == first


def test_hub_id_fingerprint_has_the_resolved_commit(tiny_dirs, tmp_path, monkeypatch):
    """A hub id loaded offline from the local cache: the fingerprint names the snapshot's commit."""
    import shutil

    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--connote-test--tiny-blip"
    shutil.copytree(tiny_dirs["hf-blip-itm"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    matcher = load_model("hf-blip-itm:connote-test/tiny-blip")
    d = matcher.describe()
    assert d["weights"] == "connote-test/tiny-blip" and d["commit"] == commit
    assert "files" not in d

