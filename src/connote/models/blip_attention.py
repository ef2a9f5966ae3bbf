"""BLIP's attention through torch's fused kernel, and BLIP's and BLIP-2's cross-attention read per image.

transformers' BLIP has only eager attention; :func:`sdpa_vision_attention` and :func:`sdpa_text_attention` take
over ``BlipAttention.forward`` and ``BlipTextSelfAttention.forward`` (the same projections, scale, masks and
softmax, without writing out the score matrices). :class:`ImageSideLinear` returns a cross-attention key or
value projection of the image tokens from the image state, where the engine cached it, and
:class:`CrossSide` reads an image's keys and values once for all of a scoring batch's rows of that image (in
BLIP's text layers, :func:`sdpa_text_attention`, and BLIP-2's Q-Former, :func:`grouped_cross_attention`).
"""

from __future__ import annotations

import inspect
from typing import Any

from connote.core.registry import require
from connote.models.grouped import RowGroups, state_rows


class ImageSideLinear:
    """Wraps a cross-attention key/value projection so its output can be read from the image state.

    The projection of the image tokens is the same for every caption of an image, so the engine
    computes it once per image (in ``encode_images``) and the wrapped layer returns that slice, for
    the batch's rows, when it is called on the image tokens of the current batch. The rows are
    gathered only when the layer runs, so a batch holds one layer's keys and values at a time
    rather than every layer's.
    """

    def __init__(self, linear: Any) -> None:
        self.linear = linear
        self.source: Any = None
        self.states: Any = None
        self.rows: Any = None
        self.offset = 0

    def __call__(self, x: Any) -> Any:
        if self.source is not None and x is self.source:
            size = self.linear.out_features
            return self.states[..., self.offset:self.offset + size].index_select(0, self.rows)
        return self.linear(x)


#: The leading parameters of ``BlipTextSelfAttention.forward`` that ``sdpa_text_attention`` takes over;
#: a transformers version whose forward starts otherwise (older ones pass ``head_mask`` positionally) keeps
#: its eager attention.
TEXT_ATTENTION_PARAMETERS = ["hidden_states", "attention_mask", "encoder_hidden_states", "encoder_attention_mask"]


def leading_parameters(module: Any, count: int) -> list[str]:
    """The first ``count`` parameter names of a module class's ``forward`` (``self`` left out)."""
    names = list(inspect.signature(type(module).forward).parameters)[1:]
    return names[:count]


def own_forward(self: Any, hidden_states: Any, attention_mask: Any, encoder_hidden_states: Any,
                encoder_attention_mask: Any, **kwargs: Any) -> Any:
    """transformers' own forward of a text or Q-Former attention module, for a call the fused or grouped code does
    not take (attention maps, a cache, training); refused while the module's :class:`CrossSide` holds a scoring
    call's groups, which that code would not read."""
    side = self.__dict__.get("_connote_side")
    if side is not None and side.groups is not None:
        raise RuntimeError("grouped cross-attention scores without attention maps or a cache")
    return type(self).forward(self, hidden_states, attention_mask=attention_mask,
                              encoder_hidden_states=encoder_hidden_states,
                              encoder_attention_mask=encoder_attention_mask, **kwargs)


def sdpa_vision_attention(self: Any, hidden_states: Any, **kwargs: Any) -> tuple[Any, Any]:
    """BLIP's vision self-attention (``BlipAttention.forward``) through torch's fused attention.

    The same projections, scale and softmax as the eager code, but the (heads x 577 x 577) score and
    probability matrices are never written out: on a CPU the eager code's passes over them make a
    ViT-B/16 forward at 384 px ~20% slower per image, and more so the more images a batch holds.
    """
    if kwargs.get("output_attentions") or kwargs.get("head_mask") is not None or self.training:
        return type(self).forward(self, hidden_states, **kwargs)
    torch = require("torch", "hf")
    bsz, tokens, width = hidden_states.shape
    qkv = self.qkv(hidden_states).reshape(bsz, tokens, 3, self.num_heads, width // self.num_heads)
    qkv = qkv.permute(2, 0, 3, 1, 4)
    context = torch.nn.functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], scale=self.scale)
    return self.projection(context.transpose(1, 2).reshape(bsz, tokens, width)), None


def sdpa_text_attention(self: Any, hidden_states: Any, attention_mask: Any = None,
                         encoder_hidden_states: Any = None, encoder_attention_mask: Any = None,
                         **kwargs: Any) -> tuple[Any, Any]:
    """BLIP's text self- and cross-attention (``BlipTextSelfAttention.forward``) through fused attention.

    Scoring passes no cache and asks for no attention maps; anything else runs the eager code. The
    masks are the model's additive masks, as the eager code adds them to the scores.
    """
    if kwargs.get("output_attentions") or kwargs.get("cache") is not None or self.training:
        return own_forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask,
                           **kwargs)
    torch = require("torch", "hf")
    cross = encoder_hidden_states is not None
    context = grouped_context(self, hidden_states) if cross else None
    if context is not None:
        return context, None
    head = self.attention_head_size
    query = self.query(hidden_states).view(*hidden_states.shape[:-1], -1, head).transpose(1, 2)
    source = encoder_hidden_states if cross else hidden_states
    mask = encoder_attention_mask if cross else attention_mask
    key = self.key(source).view(*source.shape[:-1], -1, head).transpose(1, 2)
    value = self.value(source).view(*source.shape[:-1], -1, head).transpose(1, 2)
    if mask is not None:
        mask = mask.to(dtype=query.dtype, device=query.device)
    context = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    context = context.transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size)
    return context, None


def grouped_context(self: Any, hidden_states: Any) -> Any | None:
    """A cross-attention layer's context vectors ``(rows, length, heads * head size)`` read per image through its
    :class:`CrossSide`, while a scoring call has set the side's groups; else None (the layer runs as it would)."""
    side = self.__dict__.get("_connote_side")
    if side is None or side.groups is None:
        return None
    shape = hidden_states.shape[:-1]
    query = self.query(hidden_states).view(*shape, -1, self.attention_head_size).transpose(1, 2)
    return side.attend(query).transpose(1, 2).reshape(*shape, self.all_head_size)


def grouped_cross_attention(self: Any, hidden_states: Any, attention_mask: Any = None,
                            encoder_hidden_states: Any = None, encoder_attention_mask: Any = None,
                            **kwargs: Any) -> tuple[Any, Any]:
    """BLIP-2's Q-Former cross-attention (``Blip2QFormerMultiHeadAttention.forward`` of a cross-attention layer)
    reading each image's keys and values once for all of a scoring call's rows of that image (:class:`CrossSide`);
    outside such a call, or asked for attention maps, transformers' own forward."""
    context = None if kwargs.get("output_attentions") or self.training else grouped_context(self, hidden_states)
    if context is None:
        return own_forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask,
                           **kwargs)
    return context, None


class CrossSide:
    """The image side of one cross-attention layer (BLIP's text encoder, BLIP-2's Q-Former) during a scoring
    call, read per image.

    The call's rows are sorted by image (:class:`~connote.models.grouped.RowGroups`), and each image's keys
    and values are read from its state where the state caches them (``offset``), else projected once per
    image from its vision tokens; they are never gathered per row.
    """

    def __init__(self, attention: Any, width: int, offset: int | None) -> None:
        self.attention = attention
        self.width = width
        self.offset = offset
        self.groups: RowGroups | None = None
        self.states: Any = None

    def _keys_values(self, images: list[int]) -> tuple[Any, Any]:
        if self.offset is not None:
            size = self.attention.all_head_size
            kv = state_rows(self.states, images, slice(self.offset, self.offset + 2 * size))
            return kv[..., :size], kv[..., size:]
        vision = state_rows(self.states, images, slice(0, self.width))  # the projections are the layer's own
        vision = vision.to(self.attention.key.weight.dtype)  # BLIP-2 keeps its Q-Former in float32
        return self.attention.key(vision), self.attention.value(vision)

    def attend(self, query: Any) -> Any:
        """Context vectors (rows, heads, length, head size) for ``query`` of the same shape."""
        assert self.groups is not None
        return self.groups.attend(query, self._keys_values)
