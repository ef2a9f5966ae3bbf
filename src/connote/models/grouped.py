"""Cross-attention of a scoring batch whose rows are grouped by image, without a per-row copy of any image state.

In BLIP's and ALBEF's fusion layers every caption token attends to the image tokens, through keys and values
that depend on the image alone (the engine caches them in the image state). A scoring batch holds a few
images' rows (a probe's captions of a photo, a masking game's masks of one masked image); gathering each row's
keys and values copies an image state per row (44 MB at BLIP-base, 384 px, fp32), which on an H200 ran a
masking game out of memory. Here the rows are sorted by image; the queries of an image's rows are put side by
side as one query sequence against that image's keys and values (softmax attention treats each query on its
own, so the result is the one per row), and images whose row counts are within a factor of two of each other
share one batched ``scaled_dot_product_attention`` call (the shorter groups padded with repeats of their own
first row, whose outputs are dropped). Per call and layer the keys and values are read once per image: views
of the state where the images lie side by side in one tensor, else one copy per image (not per row).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connote.core.registry import require
from connote.models.indices import device_index

#: Largest ratio of the longest to the shortest group of rows that share one attention call (padding <= half).
BUCKET_RATIO = 2


class RowGroups:
    """A scoring batch's rows in image order, and the attention calls (buckets) that cover them.

    ``rows[k]`` is the image (an index into the batch's image states) of row ``k``. ``perm`` lists the rows in
    image order: the model runs on ``input_ids[perm]`` and :meth:`unpermute` puts its outputs back.
    """

    def __init__(self, rows: Sequence[int], device: Any) -> None:
        index = [int(r) for r in rows]
        order = sorted(range(len(index)), key=index.__getitem__)
        spans: list[tuple[int, int, int]] = []  # (first sorted row, end, image)
        start = 0
        for k in range(1, len(order) + 1):
            if k == len(order) or index[order[k]] != index[order[start]]:
                spans.append((start, k, index[order[start]]))
                start = k
        self.order = order
        self.spans = spans
        self.perm = device_index(order, device)
        self.buckets: list[tuple[list[int], int, Any, Any | None, Any]] = []
        spans_by_size = sorted(spans, key=lambda s: s[0] - s[1])  # largest group first
        i = 0
        while i < len(spans_by_size):
            width = spans_by_size[i][1] - spans_by_size[i][0]
            j = i
            while j < len(spans_by_size) and BUCKET_RATIO * (spans_by_size[j][1] - spans_by_size[j][0]) >= width:
                j += 1
            members = spans_by_size[i:j]
            take, valid, put = [], [], []
            for g, (s, e, _) in enumerate(members):
                for c in range(width):
                    take.append(s + c if s + c < e else s)  # padding repeats the group's first row
                    if s + c < e:
                        valid.append(g * width + c)
                        put.append(s + c)
            as_t = lambda xs: device_index(xs, device)  # noqa: E731
            padded = len(valid) != len(take)
            self.buckets.append(([m[2] for m in members], width, as_t(take), as_t(valid) if padded else None,
                                 as_t(put)))
            i = j

    def unpermute(self, values: Any) -> Any:
        """Outputs computed on the rows in image order, put back in the batch's order."""
        return values.new_empty(values.shape).index_copy_(0, self.perm, values)

    def attend(self, query: Any, keys_values: Callable[[list[int]], tuple[Any, Any]]) -> Any:
        """Context vectors for ``query`` (rows in image order, heads, length, head size).

        ``keys_values(images)`` gives the keys and values of those images, each ``(images, tokens, heads *
        head size)`` (views where it can)."""
        torch = require("torch", "hf")
        rows, heads, length, head = query.shape
        out = torch.empty_like(query)
        for images, width, take, valid, put in self.buckets:
            key, value = (x.to(query.dtype).unflatten(-1, (heads, head)).transpose(1, 2) for x in keys_values(images))
            n = len(images)
            q = query.index_select(0, take).view(n, width, heads, length, head).transpose(1, 2)
            context = torch.nn.functional.scaled_dot_product_attention(q.reshape(n, heads, width * length, head),
                                                                       key, value)
            context = context.view(n, heads, width, length, head).transpose(1, 2).reshape(n * width, heads,
                                                                                         length, head)
            out.index_copy_(0, put, context if valid is None else context.index_select(0, valid))
        return out


def state_rows(states: Any, images: list[int], columns: slice) -> Any:
    """``states[images][..., columns]`` as ``(len(images), tokens, width)``: a view where the images are
    consecutive rows of one tensor, else one copy per image (``states`` a tensor or a list of ``(1, ...)``
    tensors, :class:`~connote.models.engine.ImageStates`)."""
    torch = require("torch", "hf")
    if isinstance(states, (list, tuple)):
        if len(images) == 1:
            return states[images[0]][..., columns]
        return torch.cat([states[i][..., columns] for i in images])
    if images == list(range(images[0], images[0] + len(images))):
        return states[images[0]:images[0] + len(images), :, columns]
    return states[..., columns].index_select(0, device_index(images, states.device))
