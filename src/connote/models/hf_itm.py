"""Hugging Face image-text matching backends: BLIP, BLIP-2, FLAVA (ITM heads) and CLIP.

Each loads with ``from_pretrained`` from a hub id or a local directory and plugs its
architecture into ``TensorMatcher``'s hooks: the vision tower runs once per image, and only the
cross-modal part runs per pair.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from connote.core.files import reachable_files
from connote.core.registry import require
from connote.models.engine import ImageStates, TensorMatcher, index_states
from connote.models.grouped import RowGroups, state_rows
from connote.runs.store import file_sha256, file_stamp

#: The digest cache kept beside the weights (or under the user cache when the folder is read-only).
DIGEST_SIDECAR = ".connote-sha256.json"


def _sidecar_paths(folder: Path) -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "connote" / "weight-digests"
    name = hashlib.sha256(str(folder).encode()).hexdigest()[:24] + ".json"
    return [folder / DIGEST_SIDECAR, cache / name]


def _read_sidecar(folder: Path) -> dict[str, Any]:
    for path in _sidecar_paths(folder):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("files"), dict):
            return data["files"]
    return {}


def _write_sidecar(folder: Path, files: dict[str, Any]) -> None:
    text = json.dumps({"format": 1, "files": files}, indent=1, sort_keys=True)
    for path in _sidecar_paths(folder):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
            return
        except OSError:
            continue  # a read-only weights folder: try the user cache; the digest is only a cache


def content_digests(folder: str | Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative path -> hex digest), hidden ones (``.git``, the
    digest sidecar) excepted: a backend may read any file of a local model folder (weights, configs,
    tokenizer files, ``chat_template.jinja``, a processor's extra files), so all of them are covered, also
    behind links (:func:`connote.core.files.reachable_files`).

    Digests are cached in a JSON sidecar keyed by each file's path and stamp (size, mtime, change
    time, inode, device), so a rerun on unchanged weights reads no weights; any rewrite of a file
    changes its change time and so its digest is computed afresh.
    """
    return folder_digests(folder)[0]


def folder_digests(folder: str | Path) -> tuple[dict[str, str], set[str]]:
    """:func:`content_digests` and the real paths of the folders and linked files it read (what the lazy
    identity checks a built model's description against)."""
    folder = Path(folder).resolve()
    files, real = reachable_files(folder)  # through links to folders too (a model folder's linked llm/)
    cached = _read_sidecar(folder)
    digests: dict[str, str] = {}
    entries: dict[str, Any] = {}
    changed = False
    for rel, path in files:
        stamp = file_stamp(path)
        entry = cached.get(rel)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
            digest = entry["sha256"]
        else:
            digest, changed = file_sha256(path), True
        digests[rel] = digest
        entries[rel] = {"stamp": stamp, "sha256": digest}
        if path.is_symlink():
            real.add(os.path.realpath(path))
    if changed or set(entries) != set(cached):
        _write_sidecar(folder, entries)
    return digests, real


#: Files one of which every model, tokenizer or processor repository holds: how a cached snapshot is found.
SNAPSHOT_MARKERS = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")


def hub_commit(repo_id: str, revision: str | None) -> str | None:
    """The commit a hub id resolves to in the local cache (the snapshot folder of ``revision``, ``main`` when
    None), found by any of :data:`SNAPSHOT_MARKERS` (a tokenizer's repository has no ``config.json``)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for name in SNAPSHOT_MARKERS:
        try:
            found = try_to_load_from_cache(repo_id, name, revision=revision)
        except Exception:  # an id the hub library rejects has no cached snapshot
            return None
        if isinstance(found, str) and Path(found).parent.parent.name == "snapshots":
            return Path(found).parent.name
    return None


def weights_identity(weights: str, revision: str | None, model: Any) -> dict[str, Any]:
    """What identifies the weights, for the run fingerprint.

    A hub id: the id, the requested revision and the commit it resolved to (the loaded config's
    ``_commit_hash``, else the local cache's snapshot folder). A local folder: its resolved path
    and the sha256 of every weight, config and tokenizer file, so copied-in weights with the same
    sizes and times still change the fingerprint.
    """
    ident: dict[str, Any] = {"weights": weights, "revision": revision}
    path = Path(weights)
    commit = getattr(getattr(model, "config", None), "_commit_hash", None)
    if path.is_dir():
        ident["weights"] = str(path.resolve())
        ident["files"] = content_digests(path)
    elif not commit:
        commit = hub_commit(weights, revision)
    if commit:
        ident["commit"] = commit
    return ident


class HFMatcher(TensorMatcher):
    """Common loading for the Hugging Face backends."""

    model_class = "AutoModel"
    default_weights: str | None = None

    def __init__(self, weights: str | None = None, *, revision: str | None = None,
                 max_length: int | str | None = None, **engine: Any) -> None:
        super().__init__(**engine)
        transformers = require("transformers", "hf")
        weights = weights or self.default_weights
        if not weights:
            raise ValueError(f"{self.backend} needs weights: a hub id or a local directory")
        self.weights = weights
        self.revision = revision
        cls = getattr(transformers, self.model_class)
        # loaded straight in the engine's dtype: a checkpoint saved in bf16 still runs in fp32 on CPU
        self.model = cls.from_pretrained(weights, revision=revision, dtype=self.dtype)
        self.model.to(self.device).eval()
        self.processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.image_processor = getattr(self.processor, "image_processor", None)
        self.max_length = int(max_length) if max_length else self._default_max_length()

    def _default_max_length(self) -> int:
        cfg = getattr(self.model.config, "text_config", None) or getattr(self.model.config, "qformer_config", None)
        return int(getattr(cfg, "max_position_embeddings", 512) or 512)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> HFMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(weights_identity(self.weights, self.revision, self.model))
        d["max_length"] = self.max_length
        return d

    def pixel_spec(self) -> Any:
        from connote.models.pixels import PixelSpec

        if getattr(self, "_pixel_spec", None) is None:
            self._pixel_spec = PixelSpec.from_processor(self.image_processor)
        return self._pixel_spec

    def processor_pixels(self, images: Sequence[Image.Image]) -> Any:
        pv = self.image_processor(images=list(images), return_tensors="pt")["pixel_values"]
        return pv.to(self.device, dtype=self.dtype if self.dtype != self.torch.float32 else None)

    def token_ids(self, captions: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(captions), add_special_tokens=True, truncation=True,
                             max_length=self.max_length)
        return [list(x) for x in enc["input_ids"]]

    def _ones(self, states: Any) -> Any:
        return self.torch.ones(states.shape[:-1], dtype=self.torch.long, device=states.device)

    @staticmethod
    def _p_match(logits: Any) -> Any:
        return logits.float().softmax(dim=-1)[:, 1]

    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> Any:
        """MM-SHAP masking game for one pair: this backend can be explained (``connote cv-probes explain``)."""
        from connote.models.masking import tensor_game

        return tensor_game(self, image, caption, grid=grid, compat=compat)


class _ImageSideLinear:
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


#: The leading parameters of ``BlipTextSelfAttention.forward`` that ``_sdpa_text_attention`` takes over;
#: a transformers version whose forward starts otherwise (older ones pass ``head_mask`` positionally) keeps
#: its eager attention.
_TEXT_ATTENTION_PARAMETERS = ["hidden_states", "attention_mask", "encoder_hidden_states", "encoder_attention_mask"]


def _leading_parameters(module: Any, count: int) -> list[str]:
    """The first ``count`` parameter names of a module class's ``forward`` (``self`` left out)."""
    names = list(inspect.signature(type(module).forward).parameters)[1:]
    return names[:count]


def _sdpa_vision_attention(self: Any, hidden_states: Any, **kwargs: Any) -> tuple[Any, Any]:
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


def _sdpa_text_attention(self: Any, hidden_states: Any, attention_mask: Any = None,
                         encoder_hidden_states: Any = None, encoder_attention_mask: Any = None,
                         **kwargs: Any) -> tuple[Any, Any]:
    """BLIP's text self- and cross-attention (``BlipTextSelfAttention.forward``) through fused attention.

    Scoring passes no cache and asks for no attention maps; anything else runs the eager code. The
    masks are the model's additive masks, as the eager code adds them to the scores.
    """
    if kwargs.get("output_attentions") or kwargs.get("cache") is not None or self.training:
        side = self.__dict__.get("_connote_side")
        if side is not None and side.groups is not None:
            raise RuntimeError("BLIP's grouped cross-attention scores without attention maps or a cache")
        return type(self).forward(self, hidden_states, attention_mask=attention_mask,
                                  encoder_hidden_states=encoder_hidden_states,
                                  encoder_attention_mask=encoder_attention_mask, **kwargs)
    torch = require("torch", "hf")
    head = self.attention_head_size
    query = self.query(hidden_states).view(*hidden_states.shape[:-1], -1, head).transpose(1, 2)
    cross = encoder_hidden_states is not None
    side = self.__dict__.get("_connote_side") if cross else None
    if side is not None and side.groups is not None:
        context = side.attend(query)
        return context.transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size), None
    source = encoder_hidden_states if cross else hidden_states
    mask = encoder_attention_mask if cross else attention_mask
    key = self.key(source).view(*source.shape[:-1], -1, head).transpose(1, 2)
    value = self.value(source).view(*source.shape[:-1], -1, head).transpose(1, 2)
    if mask is not None:
        mask = mask.to(dtype=query.dtype, device=query.device)
    context = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    context = context.transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size)
    return context, None


class _CrossSide:
    """The image side of one BLIP text layer's cross-attention during a scoring call, read per image.

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
        return self.attention.key(vision), self.attention.value(vision)

    def attend(self, query: Any) -> Any:
        """Context vectors (rows, heads, length, head size) for ``query`` of the same shape."""
        assert self.groups is not None
        return self.groups.attend(query, self._keys_values)


class BlipItmMatcher(HFMatcher):
    """BLIP ITM head: p(match) = softmax(itm_head(text_encoder(text | image)[CLS]))[1].

    The image state holds the vision tokens and, per text layer, their cross-attention keys and
    values, so captions of the same image share all image-side work (``cache_cross_attention=false``
    keeps only the vision tokens, for less memory per image). Under the default fused attention a
    scoring batch's rows are grouped by image and each cross-attention layer reads an image's keys
    and values once for all of its rows (:class:`_CrossSide`), instead of a copy per row: an MM-SHAP
    masking game scores hundreds of rows against a few masked images, and at BLIP-base size those
    copies (44 MB per row) cost more than the rows' own compute.
    """

    backend = "hf-blip-itm"
    model_class = "BlipForImageTextRetrieval"
    default_weights = "Salesforce/blip-itm-base-coco"

    def __init__(self, weights: str | None = None, *, cache_cross_attention: bool | str = True,
                 attention: str = "sdpa", **kw: Any) -> None:
        if attention not in ("sdpa", "eager"):  # before loading the weights
            raise ValueError(f"attention must be sdpa or eager, got {attention!r}")
        super().__init__(weights, **kw)
        self.cache_cross_attention = str(cache_cross_attention).lower() not in ("false", "0", "no")
        self.attention = attention
        if attention == "sdpa":
            # transformers' BLIP has only eager attention; the fused kernel computes the same softmax
            # attention without materialising its score matrices (p(match) agrees to ~1e-7)
            for module in self.model.modules():
                kind = type(module).__name__
                if kind == "BlipAttention" and _leading_parameters(module, 1) == ["hidden_states"]:
                    module.forward = types.MethodType(_sdpa_vision_attention, module)
                elif kind == "BlipTextSelfAttention" and _leading_parameters(module, 4) == _TEXT_ATTENTION_PARAMETERS:
                    module.forward = types.MethodType(_sdpa_text_attention, module)
        self._projections: list[_ImageSideLinear] = []
        self._sides: list[_CrossSide] = []
        width = self.model.config.vision_config.hidden_size
        offset = width
        for layer in self.model.text_encoder.encoder.layer:
            cross = getattr(layer, "crossattention", None)
            if cross is None:
                continue
            if self.cache_cross_attention:
                for name in ("key", "value"):
                    wrapped = _ImageSideLinear(getattr(cross.self, name))
                    cross.self.__dict__[name] = wrapped  # shadows the submodule for calls only
                    self._projections.append(wrapped)
            self._sides.append(_CrossSide(cross.self, width, offset if self.cache_cross_attention else None))
            offset += 2 * cross.self.all_head_size
        if not all(getattr(side.attention.forward, "__func__", None) is _sdpa_text_attention for side in self._sides):
            self._sides = []  # eager attention (or a transformers whose forward was not taken over): rows gathered
        for side in self._sides:
            side.attention.__dict__["_connote_side"] = side

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        if self.attention != "sdpa":  # the default is left out, so runs made before it stay resumable
            d["attention"] = self.attention
        return d

    def encode_images(self, pixel_values: Any) -> Any:
        return self.expand_states(self.model.vision_model(pixel_values=pixel_values).last_hidden_state)

    def compact_state(self, state: Any) -> Any | None:
        """The vision tokens alone (a copy: 1/25 of a BLIP-base state), when the state caches keys and values."""
        if not self._projections:
            return None
        return state[..., :self.model.config.vision_config.hidden_size].clone()

    def expand_states(self, compact: Any) -> Any:
        """Image states from vision tokens: the tokens and every cross-attention layer's keys and values."""
        if not self._projections:
            return compact
        return self.torch.cat([compact] + [p.linear(compact) for p in self._projections], dim=-1)

    def score_bytes_per_pair(self) -> int:
        """A pair's vision tokens plus one layer's keys and values (layers are gathered one at a time)."""
        if not self._projections:
            return super().score_bytes_per_pair()
        width = self.model.config.vision_config.hidden_size
        total = width + sum(p.linear.out_features for p in self._projections)
        per_layer = width + 2 * self._projections[0].linear.out_features
        return max(1, self.image_state_bytes() * per_layer // total)

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        rows = self.torch.arange(image_states.shape[0], device=image_states.device)
        return self.score_rows(image_states, rows, input_ids, attention_mask, text_states)

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any,
                   text_states: Any) -> Any:
        if self._sides and len(rows):
            return self._score_grouped(image_states, RowGroups(rows.tolist(), input_ids.device), input_ids,
                                       attention_mask)
        # eager attention (the parity option): transformers' own cross-attention, on rows gathered per layer
        if isinstance(image_states, ImageStates):
            image_states = index_states(image_states, rows)
            rows = self.torch.arange(image_states.shape[0], device=image_states.device)
        width = self.model.config.vision_config.hidden_size
        vision = image_states[..., :width].index_select(0, rows)
        offset = width
        for p in self._projections:
            p.source, p.states, p.rows, p.offset = vision, image_states, rows, offset
            offset += p.linear.out_features
        try:
            out = self.model.text_encoder(input_ids=input_ids, attention_mask=attention_mask,
                                          encoder_hidden_states=vision,
                                          encoder_attention_mask=self._ones(vision))
        finally:
            for p in self._projections:
                p.source = p.states = p.rows = None
        return self._p_match(self.model.itm_head(out.last_hidden_state[:, 0, :]))

    def _score_grouped(self, image_states: Any, groups: RowGroups, input_ids: Any, attention_mask: Any) -> Any:
        """``score_rows`` with the rows sorted by image and each cross-attention layer reading an image's
        keys and values once for all of its rows (:class:`_CrossSide`)."""
        width = self.model.config.vision_config.hidden_size
        first = image_states[0] if isinstance(image_states, ImageStates) else image_states[:1]
        # the text model reads only the shape of the image tokens (a broadcast view); the cross-attention
        # layers read their images' keys and values through the groups
        vision = first[..., :width].expand(len(groups.order), -1, -1)
        for side in self._sides:
            side.groups, side.states = groups, image_states
        try:
            out = self.model.text_encoder(input_ids=input_ids.index_select(0, groups.perm),
                                          attention_mask=attention_mask.index_select(0, groups.perm),
                                          encoder_hidden_states=vision, encoder_attention_mask=self._ones(vision))
        finally:
            for side in self._sides:
                side.groups = side.states = None
        return groups.unpermute(self._p_match(self.model.itm_head(out.last_hidden_state[:, 0, :])))


class Blip2ItmMatcher(HFMatcher):
    """BLIP-2 Q-Former ITM head: queries + text attend to the image; logits averaged over queries."""

    backend = "hf-blip2-itm"
    model_class = "Blip2ForImageTextRetrieval"
    default_weights = "Salesforce/blip2-itm-vit-g-coco"

    def encode_images(self, pixel_values: Any) -> Any:
        return self.model.vision_model(pixel_values=pixel_values)[0]

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        m = self.model
        queries = m.query_tokens.expand(image_states.shape[0], -1, -1)
        n_q = queries.shape[1]
        embeds = m.embeddings(input_ids=input_ids, query_embeds=queries)
        mask = self.torch.cat([self._ones(queries), attention_mask], dim=1)
        out = m.qformer(query_embeds=embeds, query_length=n_q, attention_mask=mask,
                        encoder_hidden_states=image_states,
                        encoder_attention_mask=self._ones(image_states), return_dict=True)
        hidden = out.last_hidden_state[:, :n_q, :].to(m.itm_head.weight.dtype)
        return self._p_match(m.itm_head(hidden).mean(dim=1))


class FlavaItmMatcher(HFMatcher):
    """FLAVA: unimodal encoders -> multimodal encoder -> ITM head. Text is encoded once per caption."""

    backend = "hf-flava-itm"
    model_class = "FlavaForPreTraining"
    default_weights = "facebook/flava-full"
    caches_text = True

    def _default_max_length(self) -> int:
        return int(self.model.config.text_config.max_position_embeddings)

    def encode_images(self, pixel_values: Any) -> Any:
        f = self.model.flava
        states = f.image_model(pixel_values=pixel_values, output_hidden_states=True).hidden_states
        return f.image_to_mm_projection(states[-1])

    def encode_texts(self, input_ids: Any, attention_mask: Any) -> Any:
        f = self.model.flava
        states = f.text_model(input_ids=input_ids, attention_mask=attention_mask,
                              output_hidden_states=True).hidden_states
        return f.text_to_mm_projection(states[-1])

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        f = self.model.flava
        b, n_img, _ = image_states.shape
        n_img += 1 if f.multimodal_model.use_cls_token else 0
        mask = self.torch.cat([self.torch.ones(b, n_img, device=attention_mask.device,
                                               dtype=attention_mask.dtype), attention_mask], dim=1)
        mm = f.multimodal_model(self.torch.cat([image_states, text_states], dim=1),
                                attention_mask=mask, return_dict=True)
        return self._p_match(self.model.itm_head(mm.last_hidden_state))


class ClipMatcher(HFMatcher):
    """CLIP: cosine similarity mapped to p(match) by a logistic calibration.

    ``p = sigmoid(scale * (cos - threshold))``. ``scale`` defaults to the model's learned
    ``logit_scale.exp()`` (100 for trained CLIP, the temperature CLIP's own softmax uses) and
    ``threshold`` to 0.25, roughly midway between typical matching (~0.30) and non-matching
    (~0.20) cosines of OpenAI CLIP ViT-B models. Both are options of the spec
    (``hf-clip:ID?threshold=0.22&scale=50``) and part of the fingerprint; accuracy depends on
    the threshold, correlations with human votes do not (the map is monotone).
    """

    backend = "hf-clip"
    #: Under ``--compat mmshap`` the last id (end of text) is restored too, as the public MM-SHAP CLIP script does.
    mmshap_keep_last = True
    model_class = "CLIPModel"
    default_weights = "openai/clip-vit-base-patch32"
    caches_text = True

    def __init__(self, weights: str | None = None, *, threshold: float | str = 0.25,
                 scale: float | str | None = None, **kw: Any) -> None:
        super().__init__(weights, **kw)
        self.threshold = float(threshold)
        self.scale = float(scale) if scale not in (None, "") else float(self.model.logit_scale.exp().item())

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["calibration"] = {"kind": "logistic", "threshold": self.threshold, "scale": round(self.scale, 6)}
        return d

    @staticmethod
    def _features(out: Any) -> Any:
        return out.pooler_output if hasattr(out, "pooler_output") else out

    def encode_images(self, pixel_values: Any) -> Any:
        feats = self._features(self.model.get_image_features(pixel_values=pixel_values))
        return self.torch.nn.functional.normalize(feats.float(), dim=-1)

    def encode_texts(self, input_ids: Any, attention_mask: Any) -> Any:
        feats = self._features(self.model.get_text_features(input_ids=input_ids,
                                                            attention_mask=attention_mask))
        return self.torch.nn.functional.normalize(feats.float(), dim=-1)

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        cos = (image_states.float() * text_states.float()).sum(-1)
        return self.torch.sigmoid(self.scale * (cos - self.threshold))


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
