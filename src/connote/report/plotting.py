"""Matplotlib set-up shared by the report's figures: a headless backend and PNG bytes for embedding."""

from __future__ import annotations

import io
from typing import Any

#: Font size of the value labels over bars (points): the size of the tick labels, readable on the page.
LABEL_SIZE = 8
#: Colour of the value labels: dark text, set on the light background above each bar (never inside it).
LABEL_COLOUR = "#1f2328"


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any, dpi: int = 130) -> bytes:
    """The figure as PNG bytes (tight bounding box, so no tick or axis label is clipped); closes it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.15)
    pyplot().close(fig)
    return buf.getvalue()
