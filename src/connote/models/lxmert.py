"""LXMERT image-text matching (``hf-lxmert``) on region features researchers already have.

LXMERT (Tan & Bansal, 2019) reads 36 Faster R-CNN region features per image with their boxes;
p(match) = softmax(``cross_relationship_score``)[1] of transformers' ``LxmertForPreTraining``. The
features come from a file given with ``?features=``, in one of the bottom-up-attention layouts:

* ``.tsv`` — one image per line, base64 float32 fields: LXMERT's 10 columns (``img_id, img_h, img_w,
  objects_id, objects_conf, attrs_id, attrs_conf, num_boxes, boxes, features``) or the original
  bottom-up-attention 6 (``image_id, image_w, image_h, num_boxes, boxes, features``);
* a folder of ``<image>.npz`` — arrays ``x`` (or ``features``) and ``bbox`` (or ``boxes``), with
  ``image_w``/``image_h``;
* ``.h5``/``.hdf5`` — a group per image (datasets ``features``, ``boxes``; ``image_w``/``image_h`` as
  datasets or attributes), or flat datasets ``image_ids``, ``features (N, R, D)``, ``boxes (N, R, 4)``,
  ``image_w``, ``image_h``.

An image is looked up by its path as the manifest gives it, then its file name, then its name without the
extension. Pixel boxes ``(x1, y1, x2, y2)`` are divided by the image's width and height, as LXMERT's
data loaders do (boxes already in [0, 1] with no size given are taken as normalised). An image with no
features is an error of its items, naming it; the other items go on.

MM-SHAP (``masking_game``): the text side is the public LXMERT script's (under ``mmshap``: every id a
player, masked ids -> 0, [CLS] and the last [SEP] written back); the image players are the regions, a
masked region's feature vector zeroed with its box kept, as LXMERT's own pre-training masks objects. The
public script instead zeroes pixel patches and runs its Faster R-CNN again on each masked image; without
a detector in connote that game cannot be played here (see docs/explain.md).
"""

from __future__ import annotations

import base64
import csv
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from connote.core.errors import InputError, ItemError
from connote.core.registry import require
from connote.media.images import SOURCE_KEY
from connote.models.engine import TensorMatcher
from connote.models.hub_identity import weights_identity
from connote.models.masking import MMSHAP_MASKED_ID, MaskGame, _span, check_compat

TSV_LXMERT = ["img_id", "img_h", "img_w", "objects_id", "objects_conf", "attrs_id", "attrs_conf", "num_boxes",
              "boxes", "features"]
TSV_BUTD = ["image_id", "image_w", "image_h", "num_boxes", "boxes", "features"]
#: Images whose features are kept after reading (the engine reads an image's regions more than once per call).
RECENT = 64


def lookup_keys(ref: str) -> list[str]:
    """The keys an image is looked up by: the reference as given, its file name, its stem."""
    p = Path(ref)
    return list(dict.fromkeys([ref, p.name, p.stem]))


def normalise_boxes(boxes: np.ndarray, width: float | None, height: float | None, where: str) -> np.ndarray:
    """Pixel boxes ``(x1, y1, x2, y2)`` divided by the image size (LXMERT's input); normalised boxes as they are."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4).copy()
    if width and height:
        boxes[:, (0, 2)] /= float(width)
        boxes[:, (1, 3)] /= float(height)
        return boxes
    if boxes.size and (boxes.min() < -1e-5 or boxes.max() > 1 + 1e-5):
        raise ItemError(f"{where}: boxes are in pixels but the image's width and height are not given")
    return boxes


def _features_rows(features: np.ndarray, n_boxes: int) -> np.ndarray:
    f = np.asarray(features, dtype=np.float32)
    if f.ndim == 2 and f.shape[0] != n_boxes and f.shape[1] == n_boxes:
        f = f.T  # some extractors store (D, N)
    return f.reshape(n_boxes, -1)


class RegionFeatures:
    """Region features and normalised boxes per image, read from a ``.tsv``, ``.npz`` folder or HDF5 file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise InputError(f"region features {path}: no such file or folder")
        suffix = "".join(self.path.suffixes[-1:]).lower()
        if self.path.is_dir():
            self.layout = "npz"
        elif suffix == ".tsv":
            self.layout = "tsv"
        elif suffix in (".h5", ".hdf5"):
            self.layout = "hdf5"
            require("h5py", "lxmert")
        else:
            raise InputError(f"region features {path}: expected a .tsv file, an .h5/.hdf5 file or a folder of .npz "
                             "files (one per image)")
        self._tsv_index: dict[str, int] | None = None
        self._h5: Any = None
        self._h5_rows: dict[str, int] | None = None
        self._lock = threading.Lock()  # the engine preprocesses image chunks in threads
        self._recent: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    # ---- identity ---------------------------------------------------------------------------
    def files(self) -> dict[str, Path]:
        """Every file the features are read from, by its name in the folder (an ``.npz`` may be a link to a file
        elsewhere: it is read, and named, through the link)."""
        if self.layout == "npz":
            from connote.core.files import reachable_files

            return {rel: p for rel, p in reachable_files(self.path)[0] if rel.endswith(".npz")}
        return {self.path.name: self.path}

    def describe(self) -> dict[str, Any]:
        from connote.core.files import file_sha256

        return {"path": str(self.path.resolve()), "layout": self.layout,
                "files": {name: file_sha256(p) for name, p in self.files().items()}}

    # ---- reading ----------------------------------------------------------------------------
    def get(self, ref: str) -> tuple[np.ndarray, np.ndarray]:
        """``(features (R, D), boxes (R, 4))`` of an image; ``ItemError`` naming it when the file has none."""
        reader = {"npz": self._npz, "tsv": self._tsv, "hdf5": self._hdf5}[self.layout]
        with self._lock:
            if ref in self._recent:
                self._recent.move_to_end(ref)
                return self._recent[ref]
            for key in lookup_keys(ref):
                found = reader(key)
                if found is not None:
                    self._recent[ref] = found
                    while len(self._recent) > RECENT:
                        self._recent.popitem(last=False)
                    return found
        raise ItemError(f"{ref}: no region features for this image in {self.path} (looked up as "
                        f"{', '.join(repr(k) for k in lookup_keys(ref))})")

    def _npz(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        if "/" in key or "\\" in key or key in ("", ".", ".."):
            return None  # a path from the data never leaves the features folder
        path = self.path / f"{key}.npz"
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                names = set(z.files)
                feat_key = next((k for k in ("x", "features", "feats") if k in names), None)
                box_key = next((k for k in ("bbox", "boxes") if k in names), None)
                if feat_key is None or box_key is None:
                    raise ItemError(f"{path}: expected arrays x (or features) and bbox (or boxes); found "
                                    f"{', '.join(sorted(names))}")
                w = next((float(z[k]) for k in ("image_w", "img_w") if k in names), None)
                h = next((float(z[k]) for k in ("image_h", "img_h") if k in names), None)
                boxes = normalise_boxes(z[box_key], w, h, str(path))
                return _features_rows(z[feat_key], len(boxes)), boxes
        except (OSError, ValueError) as exc:
            raise ItemError(f"{path}: cannot read region features ({exc})") from None

    def _tsv_rows(self) -> dict[str, int]:
        if self._tsv_index is None:
            index: dict[str, int] = {}
            with open(self.path, "rb") as f:
                while True:
                    at = f.tell()
                    line = f.readline()
                    if not line:
                        break
                    key = line.split(b"\t", 1)[0].decode("utf-8", "replace").strip()
                    if key:
                        index.setdefault(key, at)
            self._tsv_index = index
        return self._tsv_index

    def _tsv(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        at = self._tsv_rows().get(key)
        if at is None:
            return None
        with open(self.path, "rb") as f:
            f.seek(at)
            line = f.readline().decode("utf-8").rstrip("\r\n")
        csv.field_size_limit(sys.maxsize)
        fields = next(csv.reader([line], delimiter="\t"))
        where = f"{self.path}: image {key}"
        if len(fields) == len(TSV_LXMERT):
            row = dict(zip(TSV_LXMERT, fields))
            w, h = row["img_w"], row["img_h"]
        elif len(fields) == len(TSV_BUTD):
            row = dict(zip(TSV_BUTD, fields))
            w, h = row["image_w"], row["image_h"]
        else:
            raise ItemError(f"{where}: {len(fields)} tab-separated fields; expected {len(TSV_LXMERT)} "
                            f"({', '.join(TSV_LXMERT)}) or {len(TSV_BUTD)} ({', '.join(TSV_BUTD)})")
        try:
            n = int(row["num_boxes"])
            boxes = np.frombuffer(base64.b64decode(row["boxes"]), dtype=np.float32).reshape(n, 4)
            feats = np.frombuffer(base64.b64decode(row["features"]), dtype=np.float32).reshape(n, -1)
            return feats.copy(), normalise_boxes(boxes, float(w), float(h), where)
        except (ValueError, TypeError) as exc:
            raise ItemError(f"{where}: cannot decode boxes/features ({exc})") from None

    def _hdf5(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        h5py = require("h5py", "lxmert")
        if self._h5 is None:
            self._h5 = h5py.File(self.path, "r")
            ids = next((n for n in ("image_ids", "img_ids", "ids") if n in self._h5), None)
            if ids is not None and "features" in self._h5 and isinstance(self._h5["features"], h5py.Dataset):
                raw = self._h5[ids][()]
                self._h5_rows = {(v.decode() if isinstance(v, bytes) else str(v)): i for i, v in enumerate(raw)}
        f = self._h5
        where = f"{self.path}: image {key}"

        def size(group: Any, name: str, row: int | None) -> float | None:
            alt = name.replace("image_", "img_")
            for n in (name, alt):
                if n in group:
                    value = group[n][()] if row is None else group[n][row]
                    return float(np.asarray(value).reshape(-1)[0])
                if row is None and n in group.attrs:
                    return float(group.attrs[n])
            return None

        if self._h5_rows is not None:
            row = self._h5_rows.get(key)
            if row is None:
                return None
            boxes = normalise_boxes(f["boxes"][row], size(f, "image_w", row), size(f, "image_h", row), where)
            return _features_rows(f["features"][row], len(boxes)), boxes
        if "/" in key or key not in f or not isinstance(f[key], h5py.Group):
            return None
        g = f[key]
        feat = next((g[n][()] for n in ("features", "x", "feats") if n in g), None)
        box = next((g[n][()] for n in ("boxes", "bbox") if n in g), None)
        if feat is None or box is None:
            raise ItemError(f"{where}: expected datasets features and boxes")
        boxes = normalise_boxes(box, size(g, "image_w", None), size(g, "image_h", None), where)
        return _features_rows(feat, len(boxes)), boxes


def image_source(image: Image.Image) -> str | None:
    """Where a loaded image came from (``load_image`` records it), or None."""
    src = getattr(image, "info", {}).get(SOURCE_KEY) or getattr(image, "filename", None)
    return str(src) if src else None


class LxmertMatcher(TensorMatcher):
    """LXMERT: p(match) = softmax(cross_relationship_score)[1], on region features from a file."""

    backend = "hf-lxmert"
    default_weights = "unc-nlp/lxmert-base-uncased"

    def __init__(self, weights: str | None = None, *, features: str | None = None, revision: str | None = None,
                 max_length: int | str | None = None, **engine: Any) -> None:
        if not features:
            raise InputError("hf-lxmert needs region features: add ?features=FILE (a .tsv, .h5 file or a folder of "
                             ".npz files; see docs/explain.md)")
        self.features = RegionFeatures(features)
        super().__init__(**engine)
        transformers = require("transformers", "hf")
        self.weights = weights or self.default_weights
        self.revision = revision
        self.model = transformers.LxmertForPreTraining.from_pretrained(self.weights, revision=revision,
                                                                       dtype=self.dtype)
        self.model.to(self.device).eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.weights, revision=revision)
        self.max_length = int(max_length) if max_length else int(self.model.config.max_position_embeddings)
        self.feat_dim = int(self.model.config.visual_feat_dim)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> LxmertMatcher:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(weights_identity(self.weights, self.revision, self.model))
        d["features"] = self.features.describe()
        d["max_length"] = self.max_length
        return d

    # ---- the engine's hooks: an image's "pixels" are its regions ------------------------------
    def regions(self, image: Image.Image) -> tuple[np.ndarray, np.ndarray]:
        ref = image_source(image)
        if ref is None:
            raise ItemError("hf-lxmert: the image carries no file name to look its region features up by")
        feats, boxes = self.features.get(ref)
        if feats.shape[1] != self.feat_dim:
            raise ItemError(f"{ref}: region features of width {feats.shape[1]}; the model takes {self.feat_dim}")
        return feats, boxes

    def pixel_values(self, images: Sequence[Image.Image]) -> Any:
        """(n, R, D + 4 + 1): features, normalised boxes and a 1 per real region (0 pads a shorter image)."""
        found = [self.regions(im) for im in images]
        r = max(len(b) for _, b in found)
        out = np.zeros((len(found), r, self.feat_dim + 5), dtype=np.float32)
        for k, (f, b) in enumerate(found):
            out[k, :len(b), :self.feat_dim], out[k, :len(b), self.feat_dim:-1], out[k, :len(b), -1] = f, b, 1.0
        return self.torch.from_numpy(out).to(self.device)

    def encode_images(self, pixel_values: Any) -> Any:
        return pixel_values

    def image_state_bytes(self) -> int:
        return 36 * (self.feat_dim + 5) * 4

    def encoder_bytes_per_image(self) -> int:
        return self.image_state_bytes()

    def token_ids(self, captions: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(captions), add_special_tokens=True, truncation=True, max_length=self.max_length)
        return [list(x) for x in enc["input_ids"]]

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any, text_states: Any) -> Any:
        d = self.feat_dim
        feats, boxes, real = image_states[..., :d], image_states[..., d:d + 4], image_states[..., -1]
        vmask = None if bool((real > 0).all()) else real.long()
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=self.torch.zeros_like(input_ids), visual_feats=feats.to(self.dtype),
                         visual_pos=boxes.to(self.dtype), visual_attention_mask=vmask, return_dict=True)
        return out.cross_relationship_score.float().softmax(dim=-1)[:, 1]

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[Any]:
        """As the engine, with an image whose features are missing an error in each of its pairs' places."""
        missing: dict[int, ItemError] = {}
        for i in sorted({i for i, _ in pairs}):
            try:
                self.regions(images[i])
            except ItemError as exc:
                missing[i] = exc
        ok = [k for k, (i, _) in enumerate(pairs) if i not in missing]
        out: list[Any] = [missing.get(i) for i, _ in pairs]
        if ok:
            for k, p in zip(ok, super().match_probability(images, captions, [pairs[k] for k in ok])):
                out[k] = p
        return out

    # ---- MM-SHAP -------------------------------------------------------------------------
    def masking_game(self, image: Image.Image, caption: str, *, grid: int | None = None,
                     compat: str | None = None) -> MaskGame:
        """Text tokens and regions as players (see the module docstring); ``grid`` must be unset or sqrt(R)."""
        compat = check_compat(compat)
        torch = self.torch
        feats, boxes = self.regions(image)
        n_regions = len(boxes)
        side = math.isqrt(n_regions)
        if side * side != n_regions:
            raise ValueError(f"{n_regions} regions: MM-SHAP's image players must form a square (36 = 6 x 6)")
        if grid is not None and grid != side:
            raise ValueError(f"hf-lxmert's image players are its {n_regions} regions; --grid {grid} does not apply")
        enc = self.tokenizer(caption, add_special_tokens=True, truncation=True, max_length=self.max_length,
                             return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        offsets = enc.get("offset_mapping")
        special = set(int(i) for i in self.tokenizer.all_special_ids)
        if compat == "mmshap":
            positions, mask_id, restore = list(range(len(ids))), MMSHAP_MASKED_ID, [0, len(ids) - 1]
        else:
            positions, mask_id, restore = [k for k, t in enumerate(ids) if t not in special], \
                self.mask_token_id, []
        if not positions or all(ids[k] in special for k in positions):
            raise ValueError(f"caption {caption!r} has no maskable tokens")
        tokens = self.tokenizer.convert_ids_to_tokens([ids[k] for k in positions])
        spans = [None if ids[k] in special or offsets is None else _span(offsets[k]) for k in positions]
        n_text = len(positions)
        base_ids = np.asarray(ids, dtype=np.int64)
        pos = np.asarray(positions, dtype=np.int64)
        game = MaskGame(value_fn=lambda m: np.empty(0), n_text=n_text, n_patches=n_regions, tokens=list(tokens),
                        spans=spans, compat=compat)
        state = self.pixel_values([image])[0]  # (R, D + 5)

        def value_fn(masks: np.ndarray) -> np.ndarray:
            masks = np.asarray(masks, dtype=bool)
            game.calls[0] += len(masks)
            batch = np.repeat(base_ids[None, :], len(masks), axis=0)
            batch[:, pos] = np.where(masks[:, :n_text], base_ids[pos][None, :], mask_id)
            if restore:
                batch[:, restore] = base_ids[restore]
            keep = torch.from_numpy(masks[:, n_text:].astype(np.float32)).to(state.device)
            out = np.empty(len(masks), dtype=float)
            with torch.inference_mode(), self._autocast():
                for s in range(0, len(masks), self.batch_size):
                    rows = slice(s, s + self.batch_size)
                    states = state[None].repeat(len(batch[rows]), 1, 1)
                    states[..., :self.feat_dim] *= keep[rows, :, None]  # a masked region's features are zeroed
                    ids_t = torch.as_tensor(batch[rows], device=state.device)
                    p = self.score(states, ids_t, torch.ones_like(ids_t), None)
                    out[rows] = p.float().cpu().numpy()
            return out

        game.value_fn = value_fn
        return game
