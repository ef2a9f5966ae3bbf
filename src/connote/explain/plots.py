"""Figures for MM-SHAP explanations (matplotlib, Agg backend, PNG).

* :func:`plot_pair`: the image with a patch heat map of ``image_shap`` and the caption below it with
  each token coloured by ``text_shap`` (one diverging colour scale shared by both modalities, so colours
  compare across them), T-SHAP / V-SHAP and the verb in the title.
* :func:`plot_cell_summary`: per-cell bars of mean T-SHAP and verb share, split by predicted match.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from connote.explain.mmshap import patch_boxes
from connote.runs.store import replacing


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _as_array(image: Any) -> np.ndarray:
    arr = np.asarray(image.convert("RGB")) if hasattr(image, "convert") else np.asarray(image)
    if arr.ndim == 3 and arr.shape[0] in (1, 3) and arr.shape[-1] not in (1, 3):
        arr = np.moveaxis(arr, 0, -1)  # channels first -> last
    if arr.dtype.kind == "f":
        lo, hi = float(arr.min()), float(arr.max())
        arr = (arr - lo) / (hi - lo) if hi > lo else np.zeros_like(arr)
    return arr


def _clean_token(tok: str) -> str:
    for marker in ("##", "\u0120", "\u2581"):
        tok = tok.replace(marker, "")
    return tok or " "


def plot_pair(row: dict[str, Any], image: Any, out_path: str | Path, *, title: str | None = None,
              cmap: str = "coolwarm", alpha: float = 0.55, dpi: int = 120) -> Path:
    """Save the image with a patch heat map and the token-coloured caption for one explanations row.

    Args:
        row: an ``explanations.jsonl`` row (``image_shap``, ``text_shap``, ``text_tokens``, ...).
        image: PIL image or array (``H x W [x C]``, or ``C x H x W``).
        out_path: PNG path (parent folders are created).
        title: figure title (default: item id, match probability, T-SHAP/V-SHAP, verb).
    """
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    arr = _as_array(image)
    h, w = arr.shape[:2]
    img_vals = np.asarray(row.get("image_shap") or [], dtype=float)
    txt_vals = np.asarray(row.get("text_shap") or [], dtype=float)
    p = int(row.get("patch_grid") or max(1, math.isqrt(img_vals.size)))
    vmax = float(np.max(np.abs(np.concatenate([img_vals, txt_vals]))) if img_vals.size + txt_vals.size else 0)
    vmax = vmax if vmax > 0 else 1.0
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-vmax, vmax=vmax)
    colour = plt.get_cmap(cmap)

    fig = plt.figure(figsize=(6.4, 7.2))
    ax = fig.add_axes((0.06, 0.30, 0.78, 0.60))
    ax.imshow(arr, cmap="gray" if arr.ndim == 2 else None)
    if img_vals.size == p * p:
        for k, (x0, y0, x1, y1) in enumerate(patch_boxes(h, w, p)):
            ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, facecolor=colour(norm(img_vals[k])),
                                   alpha=alpha, edgecolor="white", linewidth=0.6))
            ax.text((x0 + x1) / 2 - 0.5, (y0 + y1) / 2 - 0.5, f"{img_vals[k]:+.2f}", ha="center",
                    va="center", fontsize=7, color="black",
                    bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.7, "linewidth": 0})
    ax.set_xticks([])
    ax.set_yticks([])
    cax = fig.add_axes((0.87, 0.30, 0.03, 0.60))
    sm = plt.cm.ScalarMappable(norm=norm, cmap=colour)
    fig.colorbar(sm, cax=cax, label="Shapley value")

    if title is None:
        parts = [f"item {row.get('item_id')}"]
        if row.get("value_full") is not None:
            parts.append(f"p(match)={row['value_full']:.3f}")
        if row.get("t_shap") is not None:
            parts.append(f"T-SHAP={row['t_shap']:.2f} V-SHAP={row['v_shap']:.2f}")
        parts.append(f"verb: {row.get('verb') or '(none)'}")
        title = "   ".join(parts)
    fig.suptitle(title, fontsize=9, y=0.97)

    # caption: tokens laid out left to right in coloured boxes, wrapped at the figure width
    tokens = [_clean_token(t) for t in row.get("text_tokens") or []]
    verb_idx = set(row.get("verb_tokens") or [])
    renderer = fig.canvas.get_renderer()
    x, y, line_h = 0.06, 0.22, 0.055
    for i, tok in enumerate(tokens):
        val = float(txt_vals[i]) if i < txt_vals.size else 0.0
        t = fig.text(x, y, tok, fontsize=12, fontweight="bold" if i in verb_idx else "normal",
                     bbox={"boxstyle": "round,pad=0.25", "facecolor": colour(norm(val)),
                           "edgecolor": "black" if i in verb_idx else "none"})
        width = t.get_window_extent(renderer=renderer).width / fig.bbox.width
        if x + width > 0.94 and x > 0.06:
            t.remove()
            x, y = 0.06, y - line_h
            t = fig.text(x, y, tok, fontsize=12, fontweight="bold" if i in verb_idx else "normal",
                         bbox={"boxstyle": "round,pad=0.25", "facecolor": colour(norm(val)),
                               "edgecolor": "black" if i in verb_idx else "none"})
        label = fig.text(x + width / 2, y - 0.03, f"{val:+.2f}", fontsize=7, ha="center")
        label_width = label.get_window_extent(renderer=renderer).width / fig.bbox.width
        x += max(width, label_width) + 0.015
    notes = [f"calls={row.get('calls')}", f"estimator={row.get('estimator')}"]
    if row.get("t_shap_se") is not None:
        notes.append(f"T-SHAP s.e.={row['t_shap_se']:.3f}")
    if row.get("verb_share") is not None:
        notes.append(f"verb share={row['verb_share']:.2f}")
    if row.get("error"):
        notes.append(f"error: {row['error']}")
    # just under the caption's last line; the tight bounding box then drops the empty band below it
    fig.text(0.06, y - 0.085, "   ".join(notes), fontsize=8, color="dimgray")

    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as tmp:  # never through a link planted at the figure's name
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", pad_inches=0.15)  # keeps the colour-bar label
    plt.close(fig)
    return out


def plot_cell_summary(aggregates: dict[str, Any], out_path: str | Path, *, dpi: int = 120) -> Path:
    """Save per-cell bars of mean T-SHAP and mean verb share for predicted match / non-match."""
    plt = _pyplot()
    cells = list(aggregates.get("cells", {}))
    groups = cells + ["overall"]
    splits = [("match", "#4C72B0"), ("non_match", "#DD8452")]
    fig, axes = plt.subplots(1, 2, figsize=(max(6.4, 1.6 * len(groups) + 2), 3.8))
    xs = np.arange(len(groups))
    width = 0.38
    for ax, key, label in ((axes[0], "t_shap", "mean T-SHAP"), (axes[1], "verb_share", "mean verb share")):
        for j, (split, col) in enumerate(splits):
            vals, ns = [], []
            for g in groups:
                s = (aggregates["overall"] if g == "overall" else aggregates["cells"][g])[split]
                vals.append(np.nan if s[key] is None else s[key])
                ns.append(s["n"] if key == "t_shap" else s["n_verb"])
            bars = ax.bar(xs + (j - 0.5) * width, np.nan_to_num(vals), width, color=col,
                          label=split.replace("_", "-"))
            for b, v, n in zip(bars, vals, ns):
                ax.text(b.get_x() + b.get_width() / 2, (0 if np.isnan(v) else v) + 0.01,
                        f"n={n}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(xs)
        ax.set_xticklabels(groups, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(label)
        if key == "t_shap":
            ax.axhline(0.5, color="gray", linewidth=0.8, linestyle=":")
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle("MM-SHAP per cell (split by predicted match)", fontsize=10)
    fig.tight_layout()
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as tmp:
        fig.savefig(tmp, dpi=dpi)
    plt.close(fig)
    return out
