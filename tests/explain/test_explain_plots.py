"""The MM-SHAP figures are written as PNG files."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from connote.explain.mmshap import aggregate, explain_pair
from connote.explain.plots import plot_cell_summary, plot_pair

PNG = b"\x89PNG\r\n\x1a\n"


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for i, (img_kind, cap_kind) in enumerate([("SG", "SG"), ("SG", "PG"), ("PG", "SG"), ("PG", "PG")] * 2):
        w = rng.normal(size=4 + 4)

        def game(m: np.ndarray, w: np.ndarray = w) -> np.ndarray:
            return 1 / (1 + np.exp(-(m.astype(float) @ w)))

        rows.append(explain_pair(game, 4, 4, estimator="exact", item_id=i, find_verb=False,
                                 text_tokens=["a", "man", "beg", "##s"],
                                 extra={"image_kind": img_kind, "caption_kind": cap_kind}))
    return rows


@pytest.mark.parametrize("image", ["pil", "array", "chw"])
def test_plot_pair(tmp_path, image):
    row = dict(_rows()[0], verb="begs", verb_tokens=[2, 3], verb_share=0.4)
    arr = (np.random.default_rng(1).random((48, 64, 3)) * 255).astype(np.uint8)
    img = {"pil": Image.fromarray(arr), "array": arr, "chw": np.moveaxis(arr, -1, 0).astype(np.float32)}[image]
    out = plot_pair(row, img, tmp_path / "figs" / "pair.png")
    assert out.read_bytes()[:8] == PNG


def test_plot_pair_error_row(tmp_path):
    row = {"item_id": 3, "text_tokens": ["a"], "text_shap": None, "image_shap": None, "error": "budget: x"}
    assert plot_pair(row, np.zeros((8, 8)), tmp_path / "err.png").exists()


def test_plot_cell_summary(tmp_path):
    out = plot_cell_summary(aggregate(_rows()), tmp_path / "cells.png")
    assert out.read_bytes()[:8] == PNG
