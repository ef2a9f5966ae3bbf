"""What a reader of the report sees: honest axes, one scale, readable labels, inline code, relative paths.

The figures are read through the functions that build them (matplotlib axes, bars and texts), not from tags.
"""

from __future__ import annotations

from connote.report.storytelling import metrics_figure

#: Album-protocol scores as ``connote vist score -p album`` stores them (0-1), the tiny BLEU-4 of issue #22.
STORES = [{"scores": {"BLEU-4": 0.0006, "METEOR": 0.16, "CIDEr-D": 0.02},
           "ci": {"BLEU-4": [0.0, 0.0012], "METEOR": [0.14, 0.18], "CIDEr-D": [0.01, 0.03]}},
          {"scores": {"BLEU-4": 0.0009, "METEOR": 0.12, "CIDEr-D": 0.05},
           "ci": {"BLEU-4": [0.0002, 0.0015], "METEOR": [0.10, 0.14], "CIDEr-D": [0.03, 0.07]}}]


def test_vist_metric_panels_share_one_honest_value_axis() -> None:
    fig = metrics_figure(["run a", "run b"], STORES, ["BLEU-4", "METEOR", "CIDEr-D"], "album")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["BLEU-4", "METEOR", "CIDEr-D"]
    limits = {ax.get_ylim() for ax in panels}
    assert len(limits) == 1  # one axis for every panel
    low, high = limits.pop()
    assert low == 0 and high >= 100  # the x 100 scale's full range
    assert max(ax.get_yticks().max() for ax in panels) == 100
    heights = {ax.get_title(): [round(p.get_height(), 4) for p in ax.patches] for ax in panels}
    assert heights["BLEU-4"] == [0.06, 0.09]  # 0.0006 x 100: a sliver of the axis, not a full bar
    assert heights["METEOR"] == [16.0, 12.0]
    assert panels[0].get_ylabel() == "score x 100"
