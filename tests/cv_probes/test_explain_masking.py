"""MM-SHAP through each backend: both feature definitions, the public code's game reproduced exactly,
runs resume, the data's verb, hostile item ids."""

import json
import math

import numpy as np
import pytest

from connote.cli import main
from connote.explain.shapley import exact_shapley
from connote.models import load_model
from connote.models.masking import MMSHAP_MASKED_ID, masking_game, require_masking
from tests.support.probe_manifest import ROWS, write_manifest
from tests.support.tiny_models import BUILDERS, random_image

CAPTION = "a man begs on the street"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_connote_mode_full_mask_equals_engine_and_masked_tokens_keep_specials(name, tiny_dirs, monkeypatch):
    matcher = load_model(f"{name}:{tiny_dirs[name]}")
    image = random_image(3)
    game = masking_game(matcher, image, CAPTION, compat="connote")
    if name == "hf-vlm-yesno":
        assert game.tokens == CAPTION.split()
    else:
        assert [t.lower() for t in game.tokens] == CAPTION.split()  # word-level test vocab
    n = game.n_text + game.n_patches
    assert game.n_patches == int(np.ceil(np.sqrt(game.n_text))) ** 2
    full = game.value_fn(np.ones((1, n), dtype=bool))[0]
    assert full == pytest.approx(matcher.match_probability([image], [CAPTION], [(0, 0)])[0], abs=1e-5)
    if name == "hf-vlm-yesno":
        return
    seen = []
    original = matcher.score_ids

    def spy(states, index, ids, *batch):  # the game passes its own batch size
        seen.extend(ids)
        return original(states, index, ids, *batch)

    monkeypatch.setattr(matcher, "score_ids", spy)
    masks = np.ones((3, n), dtype=bool)
    masks[1, :game.n_text] = False      # all text masked
    masks[2, game.n_text:] = False      # all patches masked
    values = game.value_fn(masks)
    tok = matcher.tokenizer
    specials = {tok.cls_token_id, tok.sep_token_id} - {None}
    full_ids, text_masked = seen[0], seen[1]
    assert [t for t in text_masked if t in specials] == [t for t in full_ids if t in specials]
    assert text_masked.count(matcher.mask_token_id) == game.n_text
    assert values[0] == pytest.approx(full, abs=1e-5)
    assert len(set(np.round(values, 6))) == 3
    assert game.calls[0] == 4


@pytest.mark.parametrize("name", ["hf-blip-itm", "hf-clip"])
def test_mmshap_mode_features_are_all_ids_and_masked_ids_are_zero(name, tiny_dirs, monkeypatch):
    matcher = load_model(f"{name}:{tiny_dirs[name]}")
    ids = matcher.token_ids([CAPTION])[0]
    game = masking_game(matcher, random_image(3), CAPTION)  # compat="mmshap" is the default
    assert game.compat == "mmshap"
    assert game.n_text == len(ids) == 8  # [CLS] a man begs on the street [SEP]
    assert game.n_patches == math.ceil(math.sqrt(len(ids))) ** 2 == 9
    seen = []
    original = matcher.score_ids
    monkeypatch.setattr(matcher, "score_ids", lambda s, i, rows, *b: seen.extend(rows) or original(s, i, rows, *b))
    masks = np.ones((1, game.n_text + game.n_patches), dtype=bool)
    masks[0, :game.n_text] = False
    game.value_fn(masks)
    keep_last = name == "hf-clip"  # the public CLIP script restores the end-of-text id too; ALBEF's does not
    expected = [ids[0]] + [MMSHAP_MASKED_ID] * (len(ids) - 2) + [ids[-1] if keep_last else MMSHAP_MASKED_ID]
    assert seen[0] == expected


def _public_mmshap_values(model, ids, pixels, masks):
    """The public MM-SHAP value function written from plain transformers calls: masked ids -> 0 with the
    first id restored, masked patches zeroed in the normalised pixels (patch size H // p, patch k at row
    k // cols and column k % cols, cols = W // (W // p)), p(match) from the ITM head."""
    import torch

    n_text = len(ids)
    p = math.isqrt(masks.shape[1] - n_text)
    h, w = pixels.shape[-2:]
    ph, pw = h // p, w // p
    cols = w // pw
    texts, images = [], []
    for mask in masks:
        text = [t if keep else 0 for t, keep in zip(ids, mask[:n_text])]
        text[0] = ids[0]
        image = pixels[0].clone()
        for k, keep in enumerate(mask[n_text:]):
            if not keep:
                r, c = k // cols, k % cols
                image[:, r * ph:(r + 1) * ph, c * pw:(c + 1) * pw] = 0
        texts.append(text)
        images.append(image)
    text = torch.tensor(texts)
    with torch.no_grad():
        logits = model(input_ids=text, pixel_values=torch.stack(images), attention_mask=torch.ones_like(text),
                       use_itm_head=True).itm_score
    return torch.softmax(logits, -1)[:, 1].double().numpy()


@pytest.mark.slow
def test_mmshap_mode_exact_values_equal_an_independent_public_value_function(tiny_blip_dir):
    import torch
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    model = BlipForImageTextRetrieval.from_pretrained(tiny_blip_dir).eval()
    processor = AutoProcessor.from_pretrained(tiny_blip_dir)
    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    image = random_image(5)
    pixels = processor(images=image, return_tensors="pt")["pixel_values"].to(torch.float32)

    # "a cat sits": 5 ids -> p = 3 -> 10-pixel patches on the 32-pixel image, a 2-pixel strip never masked
    ids = processor.tokenizer("a cat sits")["input_ids"]
    game = masking_game(matcher, image, "a cat sits", compat="mmshap")
    assert (game.n_text, game.n_patches) == (5, 9)
    probe = np.random.default_rng(0).random((16, 14)) < 0.5
    assert np.allclose(game.value_fn(probe), _public_mmshap_values(model, ids, pixels, probe), atol=1e-5)

    # exact enumeration (2**8 coalitions) of "a cat": 4 ids -> p = 2
    ids = processor.tokenizer("a cat")["input_ids"]
    game = masking_game(matcher, image, "a cat", compat="mmshap")
    assert (game.n_text, game.n_patches) == (4, 4)
    ours = exact_shapley(game.value_fn, 8)
    theirs = exact_shapley(lambda masks: _public_mmshap_values(model, ids, pixels, masks), 8)
    assert np.allclose(ours.values, theirs.values, atol=1e-5)
    assert np.abs(ours.values).max() > 1e-3  # not a trivially flat game
    assert ours.values[0] == pytest.approx(0.0, abs=1e-7)  # [CLS] is always restored: a null player
    assert ours.full == pytest.approx(matcher.match_probability([image], ["a cat"], [(0, 0)])[0], abs=1e-5)


@pytest.mark.slow
def test_explain_cli_writes_rows_aggregates_and_resumes(tiny_blip_dir, manifest, tmp_path, capsys):
    out = tmp_path / "shap"
    args = ["explain", "--data", str(manifest), "--model", f"hf-blip-itm:{tiny_blip_dir}", "--out", str(out),
            "--budget", "120", "--sample", "4", "--seed", "1", "--figures", "1", "-q"]
    assert main(args) == 0
    rows = [json.loads(x) for x in (out / "explanations.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    for r in rows:
        assert {"item_id", "value_full", "value_base", "text_tokens", "text_shap", "image_shap", "t_shap",
                "v_shap", "verb", "verb_shap", "calls", "error"} <= set(r)
        assert r["error"] is None and r["calls"] <= 120 and r["compat"] == "mmshap"
        assert r["estimator"] == "permutation"
        assert r["text_tokens"][0] == "[CLS]" and r["text_tokens"][-1] == "[SEP]"
        assert len(r["text_shap"]) == len(r["text_tokens"])
        assert len(r["image_shap"]) == r["patch_grid"] ** 2
        assert r["t_shap"] + r["v_shap"] == pytest.approx(1.0)
        total = sum(r["text_shap"]) + sum(r["image_shap"])
        assert total == pytest.approx(r["value_full"] - r["value_base"], abs=1e-6)
        assert r["verb_source"] == "data" and r["flags"] == []  # "man sits": the column's verb is found
        assert r["verb"] == r["verb_wanted"]
    res = json.loads((out / "results.json").read_text())
    assert res["n_pairs"] == 4 and res["overall"]["all"]["n"] == 4 and res["compat"] == "mmshap"
    assert res["n_verb_from_data"] == 4 and res["n_verb_not_found"] == 0
    assert (out / "figures" / "cells.png").exists()
    capsys.readouterr()
    assert main(args) == 0  # resumes: nothing recomputed, same rows
    again = [json.loads(x) for x in (out / "explanations.jsonl").read_text().splitlines()]
    assert again == rows


@pytest.mark.slow
def test_explain_verb_from_data_and_flagged_when_absent(tiny_blip_dir, tmp_path, capsys):
    rows = [
        ("h1", "img1.png", "SG", "A man stands.", "A man stands.", "SG", "stand", "1;1;1", ""),
        ("h2", "img2.png", "SG", "A cat sits and looks", "A cat sits and looks", "PG", "sit", "1;1;1", ""),
        ("h3", "img3.png", "PG", "A man races.", "A man races.", "SG", "pray", "1;1;1", ""),  # verb absent
        ("h4", "img4.png", "PG", "A man sits.", "A man sits.", "PG", "", "1;1;1", ""),  # tagger fallback
    ]
    data = write_manifest(tmp_path / "data", rows=rows)
    out = tmp_path / "run"
    assert main(["explain", "--data", str(data), "--model", f"hf-blip-itm:{tiny_blip_dir}", "--out", str(out),
                 "--budget", "60", "--grid", "2", "--figures", "0", "-q"]) == 0
    got = {r["item_id"]: r for r in map(json.loads, (out / "explanations.jsonl").read_text().splitlines())}
    tokens = got["h2"]["text_tokens"]
    assert got["h2"]["verb"] == "sits" and [tokens[i] for i in got["h2"]["verb_tokens"]] == ["sits"]
    assert got["h1"]["verb_source"] == "data" and got["h1"]["verb"] == "stands"
    assert got["h3"]["flags"] == ["verb_not_found"] and got["h3"]["verb_shap"] is None
    assert got["h3"]["t_shap"] is not None
    assert got["h4"]["verb_source"] == "tagger"
    res = json.loads((out / "results.json").read_text())
    assert res["n_verb_not_found"] == 1 and res["verb_not_found"] == ["h3"]
    assert res["overall"]["all"]["n"] == 4  # the flagged pair stays in the T-SHAP mean
    assert res["overall"]["all"]["t_shap"] == pytest.approx(np.mean([r["t_shap"] for r in got.values()]))
    assert res["overall"]["all"]["n_verb_not_found"] == 1
    assert "whose manifest verb is not in the caption" in capsys.readouterr().out


@pytest.mark.slow
def test_explain_figures_stay_inside_the_run_folder_for_hostile_ids(tiny_blip_dir, tmp_path):
    hostile = ["../../../escape", str(tmp_path / "abs"), "a/b", "..", ".hidden", "cells", "x" * 300, "ok-1"]
    rows = [(hid, f"img{k % 5 + 1}.png", "SG", "a man sits", "a man sits", "PG", "sit", "1;1;1", "")
            for k, hid in enumerate(hostile)]
    data = write_manifest(tmp_path / "deep" / "er" / "data", rows=rows)
    out = tmp_path / "deep" / "er" / "run"
    assert main(["explain", "--data", str(data), "--model", f"hf-blip-itm:{tiny_blip_dir}", "--out", str(out),
                 "--budget", "60", "--grid", "2", "--compat", "connote", "--figures", "20", "-q"]) == 0
    index = json.loads((out / "figures" / "index.json").read_text())
    assert set(index) == set(hostile)
    files = sorted(p.name for p in (out / "figures").iterdir())
    assert len(set(index.values())) == len(hostile)  # distinct ids, distinct files
    assert sorted(list(index.values()) + ["cells.png", "index.json"]) == files
    assert index["ok-1"] == "ok-1.png"
    for name in index.values():
        assert "/" not in name and not name.startswith(".") and name != "cells.png"
    escaped = [p for p in tmp_path.rglob("*.png") if (out / "figures") not in p.parents
               and p.parent != data.parent]
    assert escaped == [] and not (tmp_path / "abs.png").exists()


def test_explain_refuses_a_backend_it_cannot_mask(manifest, tmp_path, capsys):
    from connote.models.registry import MODELS, register_model

    class MatchOnly:
        backend = "match-only"

        def __init__(self, weights=None):
            pass

        def describe(self):
            return {"backend": self.backend}

        def match_probability(self, images, captions, pairs):
            return [0.5] * len(pairs)

    register_model("match-only", MatchOnly, capabilities={"match"}, weights="none")
    try:
        code = main(["explain", "--data", str(manifest), "--model", "match-only", "--out", str(tmp_path / "x"),
                     "-q"])
    finally:
        MODELS._entries.pop("match-only", None)
        MODELS._help.pop("match-only", None)
    assert code == 2
    assert "'match-only' cannot be explained" in capsys.readouterr().err
    assert not (tmp_path / "x" / "explanations.jsonl").exists()


def test_a_backend_declares_masking_with_a_method():
    class Declares:
        backend = "fake"

        def masking_game(self, image, caption, *, grid=None, compat=None):
            return (caption, grid, compat)

    require_masking(Declares())
    assert masking_game(Declares(), None, "a cap", grid=2, compat="connote") == ("a cap", 2, "connote")
    from connote.core.errors import InputError

    with pytest.raises(InputError, match="'plain' cannot be explained"):
        require_masking(type("Plain", (), {"backend": "plain"})())


@pytest.mark.parametrize("extra, message", [
    (["--compat", "shap"], "unknown --compat 'shap'"),
    (["--grid", "0"], "--grid must be a positive integer, got 0"),
    (["--budget", "0"], "--budget must be a positive integer, got 0"),
    (["--sample", "-1"], "--sample must be a positive integer, got -1"),
])
def test_bad_options_are_refused_before_any_work(manifest, tmp_path, capsys, extra, message):
    code = main(["explain", "--data", str(manifest), "--model", "hf-blip-itm:/nonexistent/never-loaded",
                 "--out", str(tmp_path / "x"), "-q", *extra])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_a_budget_too_small_for_a_pair_is_refused_before_any_pair_is_explained(tiny_blip_dir, manifest, tmp_path,
                                                                                capsys):
    from connote.runs.store import RunStore

    out = tmp_path / "x"
    args = ["explain", "--data", str(manifest), "--model", f"hf-blip-itm:{tiny_blip_dir}", "--out", str(out),
            "--sample", "3", "--compat", "connote", "--figures", "0", "-q"]
    assert main([*args, "--budget", "6"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("error: --budget 6 is too small for the adaptive estimator: pair ")
    need = int(err.split("needs at least ")[1].split()[0])
    assert "of 3 pairs to compute need" in err and f"give --budget {need} or more" in err
    with RunStore(out) as store:  # nothing was explained (and so nothing spent on the model)
        assert all(store.rows(fp) == {} for fp in store.fingerprints())
    assert main([*args, "--budget", str(need)]) == 0  # the minimum it named is enough for every pair
    rows = [json.loads(x) for x in (out / "explanations.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["error"] is None and r["calls"] <= need for r in rows)
    assert max(r["calls"] for r in rows) == need


assert ROWS  # the shared manifest rows stay importable for other modules


def test_tensor_game_batches_and_cache_follow_the_memory_plan(tiny_blip_dir, monkeypatch):
    from connote.explain.mmshap import explain_pair
    from connote.models.masking import GAME_BATCH, GAME_IMAGE_BATCH, GAME_SHARES, game_batches

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    assert matcher.batch_sizes_given == (False, False)
    score, images, cache = game_batches(matcher)
    # auto sizes: a round's masks are known at once, so the game batches past the engine's defaults (16, 8)
    assert (score, images) == (GAME_BATCH, GAME_IMAGE_BATCH)
    assert cache == int(matcher.memory_budget * GAME_SHARES["cache"])  # a share of the budget, not a fixed size
    batches = []
    original = matcher.encode_images
    monkeypatch.setattr(matcher, "encode_images", lambda pv: batches.append(len(pv)) or original(pv))
    game = masking_game(matcher, random_image(2), "a man begs on the street")
    patch_masks: set[bytes] = set()

    def value_fn(masks):
        patch_masks.update(m.tobytes() for m in masks[:, game.n_text:])
        return game.value_fn(masks)

    row = explain_pair(value_fn, game.n_text, game.n_patches, find_verb=False, seed=1, tolerance=0.0)
    assert row["calls"] == game.calls[0] and row["calls"] > GAME_BATCH and row["estimator"] == "adaptive"
    assert max(batches) > 8  # more than the engine's CPU default per encoder batch
    # across the adaptive estimator's rounds every distinct patch mask is encoded once (kept in the cache)
    assert game.image_encodes[0] == sum(batches) == len(patch_masks)
    # a spec that names the sizes keeps them
    fixed = load_model(f"hf-blip-itm:{tiny_blip_dir}?batch_size=4&image_batch_size=2")
    assert fixed.batch_sizes_given == (True, True)
    assert game_batches(fixed)[:2] == (4, 2)


def test_evicted_states_are_rebuilt_from_their_vision_tokens(tiny_blip_dir):
    """A state cache too small for a pair's image masks keeps the vision tokens of what it evicts, and a later
    round rebuilds those states from them instead of running the vision tower: the same values, fewer encodes."""
    import torch

    from connote.explain.mmshap import explain_pair
    from connote.models.masking import tensor_game

    matcher = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    caption = "a man begs on the street"
    state = matcher.image_states([random_image(2)])
    small = matcher.compact_state(state)
    assert small.shape[-1] == matcher.model.config.vision_config.hidden_size
    assert torch.allclose(matcher.expand_states(small), state, atol=1e-6)
    runs = {}
    one = state.numel() * state.element_size()
    for label, cache_bytes, compact_bytes in (("ample", 10 ** 12, 0), ("two states", 2 * one, 10 ** 12),
                                              ("two states, no copies", 2 * one, 0)):
        game = tensor_game(matcher, random_image(2), caption, cache_bytes=cache_bytes, compact_bytes=compact_bytes)
        row = explain_pair(game.value_fn, game.n_text, game.n_patches, find_verb=False, seed=1, tolerance=0.0)
        runs[label] = (game, row)
    ample, tight, bare = runs["ample"][0], runs["two states"][0], runs["two states, no copies"][0]
    assert ample.image_rebuilds[0] == 0 == bare.image_rebuilds[0]
    assert tight.image_rebuilds[0] > 0
    assert tight.image_encodes[0] == ample.image_encodes[0]  # every mask through the vision tower once
    assert bare.image_encodes[0] > ample.image_encodes[0]  # without the copies, evicted masks are encoded again
    for key in ("text_shap", "image_shap"):
        for label in ("two states", "two states, no copies"):
            assert np.allclose(runs[label][1][key], runs["ample"][1][key], atol=1e-6)
    plain = load_model(f"hf-blip-itm:{tiny_blip_dir}?cache_cross_attention=false")
    assert plain.compact_state(plain.image_states([random_image(2)])) is None  # vision tokens are all it keeps
