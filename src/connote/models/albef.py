"""ALBEF image-text matching (``albef-itm``): the released checkpoints' ITM head, written on torch.nn.

ALBEF (Li et al., 2021) encodes the image with a ViT-B/16 and the text with BERT-base whose first six
layers are text-only and whose last six ("fusion") layers also cross-attend to the image tokens;
p(match) = softmax(itm_head(fused [CLS]))[1]. The modules here carry the release's own parameter names
(``visual_encoder.blocks.N.attn.qkv``, ``text_encoder.encoder.layer.N.crossattention.self.key``,
``itm_head``), so a released file loads with no renaming beyond ALBEF's own: the pre-trained files
(``ALBEF.pth``, ``ALBEF_4M.pth``) hold their text encoder as ``text_encoder.bert.*`` (a masked-LM model),
which is stripped to ``text_encoder.*`` as ALBEF's fine-tuning scripts do, and their 256 px position
embeddings are resized (bicubic) to the model's grid as ALBEF's ``interpolate_pos_embed`` does. The
momentum encoders, projections, queues and the MLM head are not used.

(transformers' own BERT and ViT modules are not used because their parameter names and call signatures
changed between 4.x and 5.x; these few modules keep the release's layout on any version.)

Checkpoint files are read, renamed and converted by :mod:`connote.models.albef_checkpoint` (nothing in a file
runs code).

Preprocessing as the release: 384 px bicubic resize, CLIP mean/std, and :func:`pre_caption` (lower case,
punctuation removed, 30 words) before the bert-base-uncased tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from connote.core.registry import require
from connote.models.albef_checkpoint import (
    IMAGE_SIZE,
    AlbefShape,
    checkpoint_file,
    infer_shape,
    interpolate_pos_embed,
    itm_state_dict,
    torch_load,
)
from connote.models.engine import TensorMatcher
from connote.models.indices import device_index, index_values

#: ALBEF's image normalisation (the CLIP statistics).
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)
#: ALBEF's ``pre_caption``: these characters are removed, ``-`` and ``/`` become spaces.
_STRIPPED = set(",.'!?\"()*#:;~")
MAX_WORDS = 30

# ------------------------------------------------------------------------------------------ text


def pre_caption_map(caption: str, max_words: int = MAX_WORDS) -> tuple[str, list[int]]:
    """ALBEF's ``pre_caption`` and, for each character of its output, the index it came from in ``caption``.

    Lower case; ``, . ' ! ? " ( ) * # : ; ~`` removed; ``-`` and ``/`` become spaces; runs of two or more
    whitespace characters become one space; trailing newlines and surrounding spaces stripped; at most
    ``max_words`` space-separated words.
    """
    chars: list[tuple[str, int]] = []
    lowered = caption.lower()
    pieces = [(lowered[i], i) for i in range(len(lowered))] if len(lowered) == len(caption) else \
        [(ch, i) for i, c in enumerate(caption) for ch in c.lower()]
    for ch, i in pieces:
        if ch in _STRIPPED:
            continue
        chars.append((" " if ch in "-/" else ch, i))
    out: list[tuple[str, int]] = []
    k = 0
    while k < len(chars):  # re.sub(r"\s{2,}", " ", ...)
        j = k
        while j < len(chars) and chars[j][0].isspace():
            j += 1
        if j - k >= 2:
            out.append((" ", chars[k][1]))
        else:
            out.append(chars[k])
            j = k + 1
        k = j
    while out and out[-1][0] == "\n":  # rstrip("\n")
        out.pop()
    while out and out[-1][0] == " ":  # strip(" ")
        out.pop()
    start = 0
    while start < len(out) and out[start][0] == " ":
        start += 1
    out = out[start:]
    text = "".join(c for c, _ in out)
    words = text.split(" ")
    if len(words) > max_words:
        text = " ".join(words[:max_words])
        out = out[:len(text)]
    return text, [i for _, i in out]


def pre_caption(caption: str, max_words: int = MAX_WORDS) -> str:
    """ALBEF's caption normalisation (see :func:`pre_caption_map`)."""
    return pre_caption_map(caption, max_words)[0]


# ---------------------------------------------------------------------------------------- modules


def build_module(shape: AlbefShape) -> Any:
    """The ALBEF ITM network (random weights) for ``shape``; its state dict names are the release's."""
    torch = require("torch", "hf")
    nn, F = torch.nn, torch.nn.functional

    def attend(q: Any, k: Any, v: Any, heads: int, mask: Any = None) -> Any:
        b, n, d = q.shape
        q, k, v = (t.reshape(b, t.shape[1], heads, d // heads).transpose(1, 2) for t in (q, k, v))
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return ctx.transpose(1, 2).reshape(b, n, d)

    class Attn(nn.Module):
        def __init__(self, width: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)

        def forward(self, x: Any) -> Any:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            return self.proj(attend(q, k, v, self.heads))

    class Mlp(nn.Module):
        def __init__(self, width: int, hidden: int) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, width)

        def forward(self, x: Any) -> Any:
            return self.fc2(F.gelu(self.fc1(x)))

    class Block(nn.Module):
        def __init__(self, width: int, heads: int, hidden: int) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width, eps=1e-6), nn.LayerNorm(width, eps=1e-6)
            self.attn, self.mlp = Attn(width, heads), Mlp(width, hidden)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class PatchEmbed(nn.Module):
        def __init__(self, patch: int, width: int) -> None:
            super().__init__()
            self.proj = nn.Conv2d(3, width, kernel_size=patch, stride=patch)

    class VisionTransformer(nn.Module):
        def __init__(self, s: AlbefShape) -> None:
            super().__init__()
            grid = s.image_size // s.patch_size
            self.patch_embed = PatchEmbed(s.patch_size, s.vision_width)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, s.vision_width))
            self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, s.vision_width))
            self.blocks = nn.ModuleList(Block(s.vision_width, s.vision_heads, s.mlp_hidden)
                                        for _ in range(s.vision_depth))
            self.norm = nn.LayerNorm(s.vision_width, eps=1e-6)

        def forward(self, pixels: Any) -> Any:
            x = self.patch_embed.proj(pixels).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1) + self.pos_embed
            for block in self.blocks:
                x = block(x)
            return self.norm(x)

    class Projections(nn.Module):
        def __init__(self, width: int, source: int) -> None:
            super().__init__()
            self.query = nn.Linear(width, width)
            self.key, self.value = nn.Linear(source, width), nn.Linear(source, width)

    class DenseNorm(nn.Module):
        def __init__(self, inner: int, width: int) -> None:
            super().__init__()
            self.dense = nn.Linear(inner, width)
            self.LayerNorm = nn.LayerNorm(width, eps=1e-12)

        def forward(self, x: Any, residual: Any) -> Any:
            return self.LayerNorm(self.dense(x) + residual)

    class BertAttention(nn.Module):
        def __init__(self, width: int, source: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.self = Projections(width, source)
            self.output = DenseNorm(width, width)

        def forward(self, x: Any, source: Any, mask: Any, kv: Any = None) -> Any:
            p = self.self
            if hasattr(kv, "attend"):  # rows grouped by image: each image's keys and values read once
                q = p.query(x)
                b, n, d = q.shape
                ctx = kv.attend(q.reshape(b, n, self.heads, d // self.heads).transpose(1, 2))
                return self.output(ctx.transpose(1, 2).reshape(b, n, d), x)
            key, value = kv if kv is not None else (p.key(source), p.value(source))
            return self.output(attend(p.query(x), key, value, self.heads, mask), x)

    class Dense(nn.Module):
        def __init__(self, width: int, inner: int) -> None:
            super().__init__()
            self.dense = nn.Linear(width, inner)

    class BertLayer(nn.Module):
        def __init__(self, s: AlbefShape, fusion: bool) -> None:
            super().__init__()
            self.attention = BertAttention(s.text_width, s.text_width, s.text_heads)
            if fusion:
                self.crossattention = BertAttention(s.text_width, s.vision_width, s.text_heads)
            self.intermediate = Dense(s.text_width, s.intermediate)
            self.output = DenseNorm(s.intermediate, s.text_width)

        def forward(self, x: Any, mask: Any, image: Any, kv: tuple[Any, Any] | None = None) -> Any:
            x = self.attention(x, x, mask)
            if hasattr(self, "crossattention"):
                x = self.crossattention(x, image, None, kv)  # every image token is attended to
            return self.output(F.gelu(self.intermediate.dense(x)), x)

    class Embeddings(nn.Module):
        def __init__(self, s: AlbefShape) -> None:
            super().__init__()
            self.word_embeddings = nn.Embedding(s.vocab_size, s.text_width)
            self.position_embeddings = nn.Embedding(s.max_positions, s.text_width)
            self.token_type_embeddings = nn.Embedding(s.type_vocab, s.text_width)
            self.LayerNorm = nn.LayerNorm(s.text_width, eps=1e-12)

        def forward(self, ids: Any) -> Any:
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.word_embeddings(ids) + self.token_type_embeddings(torch.zeros_like(ids))
            return self.LayerNorm(x + self.position_embeddings(pos)[None])

    class Encoder(nn.Module):
        def __init__(self, s: AlbefShape) -> None:
            super().__init__()
            self.layer = nn.ModuleList(BertLayer(s, i >= s.fusion_layer) for i in range(s.text_layers))

    class TextEncoder(nn.Module):
        def __init__(self, s: AlbefShape) -> None:
            super().__init__()
            self.embeddings = Embeddings(s)
            self.encoder = Encoder(s)

        def forward(self, ids: Any, attention_mask: Any, image: Any, kv: list[tuple[Any, Any]] | None = None) -> Any:
            x = self.embeddings(ids)
            # BERT's additive mask, as ALBEF's xbert builds it: 0 for tokens, -10000 for padding
            mask = ((1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0)
            pairs = iter(kv or [])
            for layer in self.encoder.layer:
                fused = hasattr(layer, "crossattention")
                x = layer(x, mask, image, next(pairs) if fused and kv else None)
            return x

    class AlbefItm(nn.Module):
        def __init__(self, s: AlbefShape) -> None:
            super().__init__()
            self.shape = s
            self.visual_encoder = VisionTransformer(s)
            self.text_encoder = TextEncoder(s)
            self.itm_head = nn.Linear(s.text_width, 2)

        def fusion_projections(self) -> list[Any]:
            """The fusion layers' cross-attention key and value projections, in order (k0, v0, k1, v1, ...)."""
            return [getattr(layer.crossattention.self, name) for layer in self.text_encoder.encoder.layer
                    if hasattr(layer, "crossattention") for name in ("key", "value")]

        def p_match(self, image_states: Any, ids: Any, attention_mask: Any,
                    kv: list[tuple[Any, Any]] | None = None) -> Any:
            fused = self.text_encoder(ids, attention_mask, image_states, kv)
            return self.itm_head(fused[:, 0, :]).float().softmax(dim=-1)[:, 1]

    return AlbefItm(shape)



class _GroupedKeysValues:
    """One fusion layer's cross-attention keys and values, read per image from the cached image states."""

    def __init__(self, groups: Any, states: Any, offset: int, size: int) -> None:
        self.groups, self.states, self.offset, self.size = groups, states, offset, size

    def _keys_values(self, images: list[int]) -> tuple[Any, Any]:
        from connote.models.grouped import state_rows

        kv = state_rows(self.states, images, slice(self.offset, self.offset + 2 * self.size))
        return kv[..., :self.size], kv[..., self.size:]

    def attend(self, query: Any) -> Any:
        return self.groups.attend(query, self._keys_values)


class AlbefItmMatcher(TensorMatcher):
    """ALBEF ITM head: p(match) = softmax(itm_head(fusion_encoder(text | image)[CLS]))[1].

    An image's state is its ViT tokens and, per fusion layer, their cross-attention keys and values, so the
    captions of an image share all image-side work (as the BLIP backend does).

    Options: ``tokenizer`` (the bert-base-uncased tokenizer ALBEF uses; a hub id or local folder),
    ``image_size`` (384, the fine-tunes' and MM-SHAP's resolution; the pre-trained files' 256 px position
    embeddings are resized to it), ``max_length`` (token cap after ``pre_caption``; 512 = none, as the
    MM-SHAP script; ALBEF's retrieval evaluation uses 30), ``vision_heads``/``text_heads`` (width / 64).
    """

    backend = "albef-itm"
    #: the release's PIL resize; the device path's antialiased bicubic differs by up to 0.03 (docs/performance.md)
    default_preprocess = "hf"

    def __init__(self, weights: str | None = None, *, tokenizer: str = "bert-base-uncased",
                 image_size: int | str = IMAGE_SIZE, max_length: int | str | None = None,
                 vision_heads: int | str | None = None, text_heads: int | str | None = None,
                 **engine: Any) -> None:
        self.checkpoint = checkpoint_file(weights)
        super().__init__(**engine)
        transformers = require("transformers", "hf")
        self.weights = weights
        self.tokenizer_id = tokenizer
        state = itm_state_dict(torch_load(self.checkpoint), str(self.checkpoint))
        shape = infer_shape(state, image_size=int(image_size), vision_heads=int(vision_heads) if vision_heads
                            else None, text_heads=int(text_heads) if text_heads else None)
        if shape.image_size % shape.patch_size:
            raise ValueError(f"image_size {shape.image_size} is not a multiple of the patch size {shape.patch_size}")
        state["visual_encoder.pos_embed"] = interpolate_pos_embed(state["visual_encoder.pos_embed"],
                                                                  shape.image_size // shape.patch_size)
        self.model = build_module(shape)
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"{self.checkpoint}: checkpoint does not fit ALBEF's ITM model (missing "
                             f"{', '.join(missing[:4]) or 'none'}; unexpected {', '.join(unexpected[:4]) or 'none'})")
        self.model.to(device=self.device, dtype=self.dtype).eval()
        self.shape = shape
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer)
        self.max_length = int(max_length) if max_length else shape.max_positions

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> AlbefItmMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        from connote.core.files import file_sha256
        from connote.models.hub_identity import weights_identity

        d = super().describe()
        tok = weights_identity(self.tokenizer_id, None, None)
        d.update({"weights": str(self.checkpoint.resolve()), "sha256": file_sha256(self.checkpoint),
                  "tokenizer": tok, "image_size": self.shape.image_size, "max_length": self.max_length,
                  "preprocess": "albef: bicubic resize, CLIP mean/std, pre_caption(30 words)"
                  + ("; pixels on the device" if self.preprocess == "device" else "")})
        return d

    def pixel_spec(self) -> Any:
        from connote.models.pixels import PixelSpec

        size = self.shape.image_size
        return PixelSpec(size=(size, size), resample="BICUBIC", mean=tuple(MEAN), std=tuple(STD))

    def processor_pixels(self, images: Sequence[Image.Image]) -> Any:
        torch = self.torch
        size = self.shape.image_size
        arrays = [np.asarray(im.convert("RGB").resize((size, size), Image.BICUBIC), dtype=np.float32) / 255.0
                  for im in images]
        x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
        return x.to(self.device, dtype=self.dtype)

    def encode_images(self, pixel_values: Any) -> Any:
        """The image tokens and each fusion layer's cross-attention keys and values of them, side by side:
        what every caption of the image shares, computed once."""
        vision = self.model.visual_encoder(pixel_values.to(self.dtype))
        return self.torch.cat([vision] + [proj(vision) for proj in self.model.fusion_projections()], dim=-1)

    def token_ids(self, captions: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer([pre_caption(c) for c in captions], add_special_tokens=True, truncation=True,
                             max_length=self.max_length)
        return [list(x) for x in enc["input_ids"]]

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        rows = device_index(range(image_states.shape[0]), image_states.device)
        return self.score_rows(image_states, rows, input_ids, attention_mask, text_states)

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any,
                   text_states: Any) -> Any:
        """The rows sorted by image; each fusion layer's cross-attention reads an image's cached keys and
        values once for all of its rows (:class:`~connote.models.grouped.RowGroups`), never a copy per row."""
        from connote.models.grouped import RowGroups

        groups = RowGroups(index_values(rows), input_ids.device)
        width = self.shape.vision_width
        first = image_states[0] if isinstance(image_states, list) else image_states[:1]
        vision = first[..., :width].expand(len(groups.order), -1, -1)  # unread where keys and values are given
        offset = width
        kv = []
        for key, _ in zip(*[iter(self.model.fusion_projections())] * 2):
            kv.append(_GroupedKeysValues(groups, image_states, offset, key.out_features))
            offset += 2 * key.out_features
        p = self.model.p_match(vision, input_ids.index_select(0, groups.perm),
                               attention_mask.index_select(0, groups.perm), kv)
        return groups.unpermute(p)

    def score_bytes_per_pair(self) -> int:
        """A pair's share of one fusion layer's keys and values (read a layer at a time, once per image)."""
        total = self.shape.vision_width + sum(p.out_features for p in self.model.fusion_projections())
        per_layer = self.shape.vision_width + 2 * self.model.fusion_projections()[0].out_features
        return max(1, self.image_state_bytes() * per_layer // total)

    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> Any:
        """MM-SHAP game on the ``pre_caption``-ed caption, as the public ALBEF script plays it under ``mmshap``
        (all ids are players, a masked id becomes 0, [CLS] is written back, patches of ``384 // p`` pixels
        are zeroed in the normalised image); token spans point into the caption as given."""
        from connote.models.masking import tensor_game

        text, index = pre_caption_map(caption)
        game = tensor_game(self, image, text, grid=grid, compat=compat)
        game.spans = [None if s is None or s[1] > len(index) else (index[s[0]], index[s[1] - 1] + 1)
                      for s in game.spans]
        return game
