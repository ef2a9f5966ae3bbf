"""MM-SHAP through each backend: special tokens stay, values agree with the engine, runs resume."""

import json

import numpy as np
import pytest

from connote.cli import main
from connote.models import load_model
from connote.models.masking import masking_game

from .conftest import BUILDERS, random_image

CAPTION = "a man begs on the street"


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_full_mask_equals_engine_and_masked_tokens_keep_specials(name, tiny_dirs, monkeypatch):
    matcher = load_model(f"{name}:{tiny_dirs[name]}")
    image = random_image(3)
    game = masking_game(matcher, image, CAPTION)
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

    def spy(states, index, ids):
        seen.extend(ids)
        return original(states, index, ids)

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
        assert r["error"] is None and r["calls"] <= 120
        assert len(r["text_shap"]) == len(r["text_tokens"])
        assert len(r["image_shap"]) == r["patch_grid"] ** 2
        assert r["t_shap"] + r["v_shap"] == pytest.approx(1.0)
        total = sum(r["text_shap"]) + sum(r["image_shap"])
        assert total == pytest.approx(r["value_full"] - r["value_base"], abs=1e-6)
    res = json.loads((out / "results.json").read_text())
    assert res["n_pairs"] == 4 and res["overall"]["all"]["n"] == 4
    assert (out / "figures" / "cells.png").exists()
    capsys.readouterr()
    assert main(args) == 0  # resumes: nothing recomputed, same rows
    again = [json.loads(x) for x in (out / "explanations.jsonl").read_text().splitlines()]
    assert again == rows


def test_explain_refuses_a_backend_it_cannot_mask(manifest, tmp_path, capsys):
    code = main(["explain", "--data", str(manifest), "--model", "objects", "--out", str(tmp_path / "x"), "-q"])
    assert code == 2
    assert "'objects' cannot be explained" in capsys.readouterr().err
