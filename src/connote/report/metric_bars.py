"""Bar plots with interval error bars, as PNG bytes (matplotlib, Agg).

Value labels stand horizontal in dark text above each bar's error bar, so they never cross a bar;
``bbox_inches="tight"`` keeps axis labels inside the image.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from connote.report.plotting import LABEL_COLOUR, LABEL_SIZE

Interval = tuple[float, float] | None

DPI = 120


def to_png(fig) -> bytes:  # noqa: ANN001
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pyplot():  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax, xs: Sequence[float], values: Sequence[float | None], intervals: Sequence[Interval], width: float,  # noqa: ANN001
          label: str | None, digits: int, colour: str | None = None) -> float:
    """Draw one series of bars; returns the highest point drawn (bar top or interval end)."""
    top = 0.0
    heights = [0.0 if v is None or not math.isfinite(v) else float(v) for v in values]
    lower = [0.0 if ci is None or v is None else max(0.0, float(v) - ci[0]) for v, ci in zip(values, intervals)]
    upper = [0.0 if ci is None or v is None else max(0.0, ci[1] - float(v)) for v, ci in zip(values, intervals)]
    ax.bar(xs, heights, width, label=label, color=colour, yerr=[lower, upper], capsize=3,
           error_kw={"elinewidth": 1, "ecolor": "#333333"})
    for x, v, h, up in zip(xs, values, heights, upper):
        text = _label(v, digits)
        y = h + up
        top = max(top, y)
        ax.annotate(text, (x, y), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                    fontsize=LABEL_SIZE, color=LABEL_COLOUR)
    return top


def _label(value: float | None, digits: int) -> str:
    """The value as printed above its bar; a small non-zero value keeps two significant digits."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.2g}"
    return f"{value:.{digits}f}"


def metric_panels_figure(title: str, runs: Sequence[str], metrics: Sequence[str],
                         values: dict[str, Sequence[float | None]], intervals: dict[str, Sequence[Interval]],
                         digits: dict[str, int] | None = None, *, ylabel: str = "score x 100"):  # noqa: ANN201
    """One panel per metric, one bar per run, 95% intervals as error bars; the matplotlib figure.

    Every panel shares one value axis from 0 (to 100 when every bar and interval fits under it, else to the
    highest of them all), labelled ``ylabel``: a panel never rescales, so a BLEU-4 of 0.06 (x 100) is drawn
    as the sliver it is beside a METEOR of 16, not as a full bar.
    """
    plt = _pyplot()
    n = len(metrics)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    width_in = max(2.2 * cols, 0.45 * len(runs) * cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width_in, 2.9 * rows), squeeze=False)
    colours = [plt.get_cmap("tab10")(i % 10) for i in range(len(runs))]
    highest = max([0.0] + [ci[1] for m in metrics for ci in intervals[m] if ci] +
                  [v for m in metrics for v in values[m] if v is not None and math.isfinite(v)])
    top = 100.0 if highest <= 100.0 else highest
    for k, metric in enumerate(metrics):
        ax = axes[k // cols][k % cols]
        xs = list(range(len(runs)))
        for i in xs:  # one call per run: a colour per run, shared by every panel
            _bars(ax, [i], [values[metric][i]], [intervals[metric][i]], 0.7, None, (digits or {}).get(metric, 3),
                  colour=colours[i])
        ax.set_ylim(0, top * 1.15)  # the same axis in every panel; room for the labels
        ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= top])
        ax.set_title(metric, fontsize=9)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"r{i + 1}" for i in xs], fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        if k % cols == 0:
            ax.set_ylabel(ylabel, fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[i]) for i in range(len(runs))]
    fig.legend(handles, [f"r{i + 1}: {name}" for i, name in enumerate(runs)], loc="lower center",
               ncol=1 if len(runs) > 2 else len(runs), fontsize=8, frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(title, fontsize=10)
    legend_rows = len(runs) if len(runs) > 2 else 1
    fig.tight_layout(rect=(0, min(0.5, (0.09 + 0.04 * legend_rows) / rows), 1, 0.95))
    return fig


def metric_panels(title: str, runs: Sequence[str], metrics: Sequence[str],
                  values: dict[str, Sequence[float | None]], intervals: dict[str, Sequence[Interval]],
                  digits: dict[str, int] | None = None, *, ylabel: str = "score x 100") -> bytes:
    """:func:`metric_panels_figure` as PNG bytes."""
    return to_png(metric_panels_figure(title, runs, metrics, values, intervals, digits, ylabel=ylabel))


def grouped_bars(title: str, categories: Sequence[str], series: Sequence[str],
                 values: Sequence[Sequence[float | None]], intervals: Sequence[Sequence[Interval]], *,
                 ylabel: str, digits: int = 1, ymax: float | None = None) -> bytes:
    """Bars grouped by category (x axis), one bar per series in each group; ``values[series][category]``."""
    plt = _pyplot()
    n = max(1, len(series))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(categories) * max(1.0, n / 2.5)), 3.6))
    top = 0.0
    for s, name in enumerate(series):
        xs = [c + (s - (n - 1) / 2) * width for c in range(len(categories))]
        top = max(top, _bars(ax, xs, values[s], intervals[s], width * 0.95, name, digits))
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels([c.replace(" ", "\n", 1) if len(c) > 11 else c for c in categories], fontsize=8)
    ax.set_ylabel(ylabel)
    limit = ymax if ymax is not None else top
    ax.set_ylim(0, (limit or 1.0) * 1.25)  # room for the value labels above the highest interval
    if ymax is not None:  # no ticks past the scale's end (e.g. 100%)
        ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= ymax])
    ax.set_title(title, fontsize=10)
    if len(series) > 1:
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return to_png(fig)
