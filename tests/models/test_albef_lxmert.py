"""ALBEF (``albef-itm``) and LXMERT (``hf-lxmert``): p(match) and MM-SHAP games against references written here.

ALBEF: a tiny random model saved in the release's checkpoint layout is loaded through the public spec path and
compared with a forward pass written below from the architecture (ViT with fused qkv, BERT whose last layers
cross-attend, ITM head on [CLS]) on the checkpoint's raw tensors, with the release's preprocessing. LXMERT:
features files of each layout, compared with a plain ``LxmertForPreTraining`` call. The MM-SHAP games are
compared, by exact enumeration, with value functions written from the public MM-SHAP scripts' maskers.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
F = torch.nn.functional

from connote.cli import main  # noqa: E402
from connote.core.errors import InputError, ItemError  # noqa: E402
from connote.explain.shapley import estimate  # noqa: E402
from connote.media.images import load_image  # noqa: E402
from connote.models.albef import pre_caption, pre_caption_map  # noqa: E402
from connote.models.registry import load_model  # noqa: E402
from tests.support import tiny_models  # noqa: E402

CAPTIONS = ["A man begs on the street!", "a dog (sits) in/at the car-park", "people"]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _images(root: Path) -> list[Path]:
    paths = []
    rng = np.random.default_rng(3)
    for k in range(3):
        path = root / f"p{k}.png"
        Image.fromarray(rng.integers(0, 255, (40 + 4 * k, 48, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


# ------------------------------------------------------------------------------ ALBEF reference


def public_pre_caption(caption: str, max_words: int = 30) -> str:
    """ALBEF's ``pre_caption`` as its release writes it (regex steps)."""
    caption = re.sub(r"([,.'!?\"()*#:;~])", "", caption.lower()).replace("-", " ").replace("/", " ")
    caption = re.sub(r"\s{2,}", " ", caption).rstrip("\n").strip(" ")
    words = caption.split(" ")
    return " ".join(words[:max_words]) if len(words) > max_words else caption


def albef_pixels(image: Image.Image, size: int) -> torch.Tensor:
    """Resize (size, size) bicubic, to [0, 1], CLIP mean/std: (1, 3, size, size)."""
    x = torch.tensor(np.asarray(image.convert("RGB").resize((size, size), Image.BICUBIC)), dtype=torch.float32) / 255
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073])
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711])
    return ((x - mean) / std).permute(2, 0, 1)[None]


def _heads_attention(q, k, v, heads, add=None):
    b, n, d = q.shape
    split = [t.reshape(b, t.shape[1], heads, d // heads).permute(0, 2, 1, 3) for t in (q, k, v)]
    scores = split[0] @ split[1].transpose(-1, -2) / math.sqrt(d // heads)
    if add is not None:
        scores = scores + add
    return (scores.softmax(-1) @ split[2]).permute(0, 2, 1, 3).reshape(b, n, d)


@functools.lru_cache(maxsize=4)
def _albef_tensors(ckpt: str) -> dict:
    sd = torch.load(ckpt, weights_only=True)["model"]
    return {k.replace("text_encoder.bert.", "text_encoder."): v for k, v in sd.items()}


def albef_reference(ckpt: Path, pixels: torch.Tensor, ids: list[int], heads: int = 2, size: int = 32) -> float:
    """p(match) from the checkpoint's raw tensors, written from ALBEF's model definition."""
    sd = _albef_tensors(str(ckpt))

    def lin(x, name):
        return F.linear(x, sd[name + ".weight"], sd[name + ".bias"])

    def ln(x, name, eps):
        return F.layer_norm(x, x.shape[-1:], sd[name + ".weight"], sd[name + ".bias"], eps)

    # vision: patches, [CLS], position embeddings resized bicubic (ALBEF's interpolate_pos_embed), pre-norm blocks
    v = "visual_encoder"
    x = F.conv2d(pixels, sd[f"{v}.patch_embed.proj.weight"], sd[f"{v}.patch_embed.proj.bias"], stride=8)
    x = x.flatten(2).transpose(1, 2)
    pos = sd[f"{v}.pos_embed"]
    old, new, dim = int(math.sqrt(pos.shape[1] - 1)), size // 8, pos.shape[-1]
    grid = pos[:, 1:].reshape(1, old, old, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", align_corners=False).permute(0, 2, 3, 1)
    x = torch.cat([sd[f"{v}.cls_token"], x], 1) + torch.cat([pos[:, :1], grid.reshape(1, new * new, dim)], 1)
    for i in range(2):
        b = f"{v}.blocks.{i}"
        h = ln(x, f"{b}.norm1", 1e-6)
        q, k, val = lin(h, f"{b}.attn.qkv").chunk(3, -1)
        x = x + lin(_heads_attention(q, k, val, heads), f"{b}.attn.proj")
        x = x + lin(F.gelu(lin(ln(x, f"{b}.norm2", 1e-6), f"{b}.mlp.fc1")), f"{b}.mlp.fc2")
    image = ln(x, f"{v}.norm", 1e-6)
    # text: BERT embeddings, 4 layers, cross-attention to every image token from layer 2 (fusion_layer)
    t = "text_encoder"
    idt = torch.tensor([ids])
    e = sd[f"{t}.embeddings.word_embeddings.weight"][idt] + sd[f"{t}.embeddings.position_embeddings.weight"][
        torch.arange(len(ids))][None] + sd[f"{t}.embeddings.token_type_embeddings.weight"][0]
    x = ln(e, f"{t}.embeddings.LayerNorm", 1e-12)
    for i in range(4):
        b = f"{t}.encoder.layer.{i}"
        for part, src in (("attention", None), ("crossattention", image)):
            if part == "crossattention" and i < 2:
                continue
            s = x if src is None else src
            ctx = _heads_attention(lin(x, f"{b}.{part}.self.query"), lin(s, f"{b}.{part}.self.key"),
                                   lin(s, f"{b}.{part}.self.value"), heads)
            x = ln(lin(ctx, f"{b}.{part}.output.dense") + x, f"{b}.{part}.output.LayerNorm", 1e-12)
        x = ln(lin(F.gelu(lin(x, f"{b}.intermediate.dense")), f"{b}.output.dense") + x, f"{b}.output.LayerNorm",
               1e-12)
    logits = lin(x[:, 0], "itm_head")
    return float(logits.softmax(-1)[0, 1])


@pytest.fixture(scope="module")
def albef(tmp_path_factory):
    root = tmp_path_factory.mktemp("albef")
    ckpt, tok = tiny_models.tiny_albef(root / "pre", layout="pretrain", grid=2)
    ckpt_ft, _ = tiny_models.tiny_albef(root / "ft", seed=1, layout="retrieval", grid=4)
    return {"pretrain": ckpt, "retrieval": ckpt_ft, "tokenizer": tok, "images": _images(root)}


def test_pre_caption_equals_the_release_and_maps_back_to_the_caption() -> None:
    cases = CAPTIONS + ["  Two--men,  at the  'park'.\n", "x/y - z", " ".join(f"w{k}" for k in range(40)),
                        "Ünïcode İstanbul ~ #tag", ""]
    for caption in cases:
        text, index = pre_caption_map(caption)
        assert text == public_pre_caption(caption) == pre_caption(caption)
        assert len(index) == len(text)
        for ch, i in zip(text, index):  # each kept character comes from its place in the caption
            assert ch == " " or ch in caption[i].lower()
    assert pre_caption("A man-begs, on the street!") == "a man begs on the street"


@pytest.mark.parametrize("layout", ["pretrain", "retrieval"])
def test_albef_p_match_equals_a_forward_pass_from_the_architecture(albef, layout: str) -> None:
    spec = f"albef-itm:{albef[layout]}?tokenizer={albef['tokenizer']}&image_size=32"
    model = load_model(spec)
    images = [load_image(p) for p in albef["images"]]
    pairs = [(0, 0), (0, 1), (0, 2), (1, 0), (2, 1)]
    got = model.match_probability(images, CAPTIONS, pairs)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(albef["tokenizer"])
    want = [albef_reference(albef[layout], albef_pixels(images[i], 32), tok(public_pre_caption(CAPTIONS[c]))
                            ["input_ids"]) for i, c in pairs]
    assert got == pytest.approx(want, abs=2e-6)
    assert len({round(p, 4) for p in got}) == len(got)  # the pairs get different probabilities
    d = model.describe()
    assert d["backend"] == "albef-itm" and len(d["sha256"]) == 64 and d["image_size"] == 32
    assert "vocab.txt" in d["tokenizer"]["files"]


def test_albef_reads_the_image_once_for_all_its_captions(albef) -> None:
    model = load_model(f"albef-itm:{albef['retrieval']}?tokenizer={albef['tokenizer']}&image_size=32")
    model.image_state_bytes()  # the engine's one-off measure of a state (a blank image) is not counted
    calls = []
    encode = model.encode_images
    model.encode_images = lambda pv: (calls.append(pv.shape[0]), encode(pv))[1]
    images = [load_image(p) for p in albef["images"][:2]]
    model.match_probability(images, CAPTIONS, [(i, c) for i in range(2) for c in range(3)])
    assert sum(calls) == 2


def test_albef_file_with_objects_is_refused_then_converted_without_running_them(albef, tmp_path, capsys) -> None:
    obj = torch.load(albef["retrieval"], weights_only=True)
    obj["args"] = argparse.Namespace(checkpoint="x.pth", distributed=True)  # what weights_only refuses
    bad = tmp_path / "with_args.pth"
    torch.save(obj, bad)
    with pytest.raises(InputError, match="connote models convert albef"):
        load_model(f"albef-itm:{bad}?tokenizer={albef['tokenizer']}&image_size=32")
    out = tmp_path / "converted.safetensors"
    assert main(["models", "convert", "albef", str(bad), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dropped entries: args, config, epoch, lr_scheduler, optimizer" in printed
    assert "argparse.Namespace" in printed
    images = [load_image(p) for p in albef["images"][:1]]
    a = load_model(f"albef-itm:{out}?tokenizer={albef['tokenizer']}&image_size=32")
    b = load_model(f"albef-itm:{albef['retrieval']}?tokenizer={albef['tokenizer']}&image_size=32")
    assert a.match_probability(images, CAPTIONS[:1], [(0, 0)]) == b.match_probability(images, CAPTIONS[:1], [(0, 0)])
    assert main(["models", "convert", "albef", str(tmp_path / "none.pth")]) == 2


def test_albef_loads_the_buffers_its_scripts_save(albef, tmp_path) -> None:
    """ALBEF's xbert registers ``position_ids`` persistently: its scripts' files carry it under both layouts'
    names (and queues beside), and the public spec loads them (the forward pass is compared with the one written
    from the release in test_albef_p_match_equals_a_forward_pass_from_the_architecture, on these very files)."""
    for layout, name in (("pretrain", "text_encoder.bert.embeddings.position_ids"),
                         ("retrieval", "text_encoder.embeddings.position_ids")):
        sd = torch.load(albef[layout], weights_only=True)["model"]
        assert torch.equal(sd[name], torch.arange(64)[None]) and "queue_ptr" in sd
        load_model(f"albef-itm:{albef[layout]}?tokenizer={albef['tokenizer']}&image_size=32")
    # positions other than the buffer ALBEF registers would embed differently: refused, not silently changed
    obj = torch.load(albef["retrieval"], weights_only=True)
    obj["model"]["text_encoder.embeddings.position_ids"] = torch.arange(64).flip(0)[None]
    odd = tmp_path / "odd_positions.pth"
    torch.save(obj, odd)
    with pytest.raises(InputError, match="position_ids is not 0, 1, ..., 63"):
        load_model(f"albef-itm:{odd}?tokenizer={albef['tokenizer']}&image_size=32")


def test_albef_checkpoint_without_an_itm_head_is_refused(albef, tmp_path) -> None:
    obj = torch.load(albef["retrieval"], weights_only=True)
    obj["model"] = {k: v for k, v in obj["model"].items() if not k.startswith("itm_head.")}
    path = tmp_path / "vqa_like.pth"
    torch.save(obj, path)
    with pytest.raises(InputError, match="no itm_head.weight"):
        load_model(f"albef-itm:{path}?tokenizer={albef['tokenizer']}&image_size=32")
    with pytest.raises(InputError, match="no such local file"):
        load_model(f"albef-itm:{tmp_path / 'missing.pth'}")


def _exact(value_fn, n: int) -> np.ndarray:
    return estimate(value_fn, n, estimator="exact").values


def test_albef_mmshap_game_equals_the_public_scripts_masking(albef) -> None:
    """``--compat mmshap``: ids -> 0 with [CLS] written back, 384//p-pixel patches zeroed after normalisation."""
    from transformers import AutoTokenizer

    model = load_model(f"albef-itm:{albef['pretrain']}?tokenizer={albef['tokenizer']}&image_size=32")
    image = load_image(albef["images"][0])
    caption = "Man, begs!"
    game = model.masking_game(image, caption, compat="mmshap")
    tok = AutoTokenizer.from_pretrained(albef["tokenizer"])
    ids = tok(public_pre_caption(caption))["input_ids"]
    p = int(math.ceil(np.sqrt(len(ids))))
    assert (game.n_text, game.n_patches) == (len(ids), p * p) == (4, 4)
    pixels = albef_pixels(image, 32)
    patch = 32 // p
    row_cols = 32 // patch

    def public_value(masks: np.ndarray) -> np.ndarray:
        out = []
        for m in masks:
            masked = np.where(m[:len(ids)], ids, 0)
            masked[0] = tok.cls_token_id
            img = pixels.clone()
            for k in range(p * p):
                if not m[len(ids) + k]:
                    r, c = k // row_cols, k % row_cols
                    img[:, :, r * patch:(r + 1) * patch, c * patch:(c + 1) * patch] = 0
            out.append(albef_reference(albef["pretrain"], img, [int(i) for i in masked]))
        return np.asarray(out)

    ours, public = _exact(game.value_fn, 8), _exact(public_value, 8)
    assert ours == pytest.approx(public, abs=2e-6)
    assert np.abs(public).sum() > 1e-3
    assert game.tokens == ["[CLS]", "man", "begs", "[SEP]"]
    assert [caption[s[0]:s[1]] if s else None for s in game.spans] == [None, "Man", "begs", None]


# ------------------------------------------------------------------------------------- LXMERT


@pytest.fixture(scope="module")
def lxmert(tmp_path_factory):
    root = tmp_path_factory.mktemp("lxmert")
    folder = tiny_models.tiny_lxmert(root / "m")
    images = _images(root)
    feats = tiny_models.region_features(["p0", "p1"], regions=36)
    files = {"tsv": tiny_models.write_region_tsv(root / "f.tsv", feats),
             "h5": tiny_models.write_region_h5(root / "f.h5", feats),
             "npz": tiny_models.write_region_npz(root / "npz", feats)}
    import h5py

    with h5py.File(root / "flat.h5", "w") as f:  # the flat HDF5 layout, boxes already normalised
        f["image_ids"] = np.array([b"p0", b"p1"])
        f["features"] = np.stack([feats[k][0] for k in ("p0", "p1")])
        f["boxes"] = np.stack([feats[k][1] / np.array([feats[k][2], feats[k][3]] * 2, np.float32)
                               for k in ("p0", "p1")])
    files["flat-h5"] = root / "flat.h5"
    return {"folder": folder, "images": images, "feats": feats, "files": files, "root": root}


@functools.lru_cache(maxsize=2)
def _lxmert(folder: str):
    from transformers import AutoTokenizer, LxmertForPreTraining

    return LxmertForPreTraining.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def lxmert_reference(folder: Path, feats, boxes, w, h, caption: str | None = None, ids=None) -> float:
    model, tok = _lxmert(str(folder))
    enc = tok(caption, return_tensors="pt", return_token_type_ids=True) if ids is None else \
        {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
         "token_type_ids": torch.zeros(1, len(ids), dtype=torch.long)}
    norm = boxes / np.array([w, h, w, h], np.float32)  # LXMERT's loaders: x by width, y by height
    with torch.no_grad():
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                    token_type_ids=enc["token_type_ids"], visual_feats=torch.tensor(feats)[None],
                    visual_pos=torch.tensor(norm)[None])
    return float(out.cross_relationship_score.softmax(-1)[0, 1])


@pytest.mark.parametrize("layout", ["tsv", "h5", "npz", "flat-h5"])
def test_lxmert_p_match_equals_a_plain_transformers_call(lxmert, layout: str) -> None:
    model = load_model(f"hf-lxmert:{lxmert['folder']}?features={lxmert['files'][layout]}")
    images = [load_image(p) for p in lxmert["images"]]
    pairs = [(0, 0), (0, 1), (1, 2), (2, 0), (1, 0)]
    got = model.match_probability(images, CAPTIONS, pairs)
    for (i, c), p in zip(pairs, got):
        if i == 2:  # p2 has no features: an error in its place, naming the image
            assert isinstance(p, ItemError) and "p2.png: no region features" in str(p)
            continue
        f, b, w, h = lxmert["feats"][f"p{i}"]
        assert p == pytest.approx(lxmert_reference(lxmert["folder"], f, b, w, h, CAPTIONS[c]), abs=2e-6)
    assert model.describe()["features"]["layout"] == ("hdf5" if "h5" in layout else layout)


def test_lxmert_missing_features_are_per_item_errors_of_a_probe_run(lxmert, tmp_path) -> None:
    root = lxmert["root"]
    manifest = tmp_path / "probes.csv"
    manifest.write_text("item_id,image,image_kind,caption,caption_kind\n"
                        f"a,{root / 'p0.png'},SG,a man begs on the street,SG\n"
                        f"b,{root / 'p2.png'},SG,a man sits on the street,PG\n"
                        f"c,{root / 'p1.png'},PG,a man begs on the street,SG\n")
    out = tmp_path / "run"
    assert main(["probe", "--data", str(manifest), "--model",
                 f"hf-lxmert:{lxmert['folder']}?features={lxmert['files']['tsv']}", "--out", str(out), "-q"]) == 0
    rows = {r["item_id"]: r for r in map(json.loads, (out / "items.jsonl").read_text().splitlines())}
    assert rows["a"]["error"] is None and rows["c"]["error"] is None
    assert rows["b"]["p_match"] is None and "p2.png: no region features for this image" in rows["b"]["error"]
    assert main(["probe", "--data", str(manifest), "--model", f"hf-lxmert:{lxmert['folder']}", "--out",
                 str(tmp_path / "r2"), "-q"]) == 2  # no features file: refused before anything runs


def test_region_feature_files_other_layouts_and_errors(lxmert, tmp_path) -> None:
    import base64

    from connote.models.lxmert import RegionFeatures

    f, b, w, h = lxmert["feats"]["p0"]
    # the original bottom-up-attention 6 columns: image_id, image_w, image_h, num_boxes, boxes, features
    (tmp_path / "butd.tsv").write_text("\t".join(["p0", str(w), str(h), str(len(b)), base64.b64encode(
        b.tobytes()).decode(), base64.b64encode(f.tobytes()).decode()]) + "\n")
    feats, boxes = RegionFeatures(tmp_path / "butd.tsv").get(str(tmp_path / "p0.jpg"))
    assert np.array_equal(feats, f) and np.allclose(boxes, b / np.array([w, h, w, h]))
    np.savez(tmp_path / "p5.npz", x=f, bbox=b)  # pixel boxes without the image size
    with pytest.raises(ItemError, match="boxes are in pixels"):
        RegionFeatures(tmp_path).get("p5.jpg")
    with pytest.raises(InputError, match="expected a .tsv file"):
        RegionFeatures(tmp_path / "p5.npz")
    with pytest.raises(InputError, match="no such file"):
        RegionFeatures(tmp_path / "none.h5")


@pytest.mark.slow
def test_lxmert_mmshap_game_equals_the_public_scripts_text_masking_over_regions(lxmert) -> None:
    """Under ``mmshap``: ids -> 0 with [CLS] and the last [SEP] written back (the public LXMERT script's
    custom_masker); the image players are the regions, a masked one's features zeroed (box kept)."""
    feats = tiny_models.region_features(["p0"], regions=4)
    path = tiny_models.write_region_h5(lxmert["root"] / "four.h5", feats)
    model = load_model(f"hf-lxmert:{lxmert['folder']}?features={path}")
    image = load_image(lxmert["root"] / "p0.png")
    caption = "a man begs"
    game = model.masking_game(image, caption, compat="mmshap")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lxmert["folder"])
    ids = tok(caption)["input_ids"]
    assert (game.n_text, game.n_patches) == (len(ids), 4) == (5, 4)
    f, b, w, h = feats["p0"]

    def public_value(masks: np.ndarray) -> np.ndarray:
        out = []
        for m in masks:
            masked = np.where(m[:len(ids)], ids, 0)
            masked[0], masked[len(ids) - 1] = tok.cls_token_id, tok.sep_token_id  # the script's 101, 102
            kept = f * m[len(ids):, None]
            out.append(lxmert_reference(lxmert["folder"], kept, b, w, h, ids=[int(i) for i in masked]))
        return np.asarray(out)

    ours, public = _exact(game.value_fn, 9), _exact(public_value, 9)
    assert ours == pytest.approx(public, abs=2e-6)
    assert np.abs(public[5:]).sum() > 1e-4  # the regions matter
    assert [caption[s[0]:s[1]] if s else None for s in game.spans] == [None, "a", "man", "begs", None]
    with pytest.raises(ValueError, match="regions"):
        model.masking_game(image, caption, grid=3)


@pytest.mark.slow
def test_probe_and_explain_commands_run_both_backends(albef, lxmert, tmp_path, capsys) -> None:
    """``connote probe`` and ``connote explain`` with ``albef-itm:FILE`` and ``hf-lxmert:DIR?features=FILE``."""
    root = lxmert["root"]
    manifest = tmp_path / "probes.csv"
    manifest.write_text("item_id,image,image_kind,caption,caption_kind\n"
                        f"a,{root / 'p0.png'},SG,a man begs on the street,SG\n"
                        f"b,{root / 'p0.png'},SG,a man sits on the street,PG\n"
                        f"c,{root / 'p1.png'},PG,a man begs on the street,SG\n"
                        f"d,{root / 'p1.png'},PG,a man sits on the street,PG\n")
    four = tiny_models.write_region_npz(tmp_path / "four", tiny_models.region_features(["p0", "p1"], regions=4))
    specs = {"albef": f"albef-itm:{albef['retrieval']}?tokenizer={albef['tokenizer']}&image_size=32",
             "lxmert": f"hf-lxmert:{lxmert['folder']}?features={four}"}
    for name, spec in specs.items():
        assert main(["probe", "--data", str(manifest), "--model", spec, "--out", str(tmp_path / f"p-{name}"), "-q",
                     "--json"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["n_scored"] == 4 and res["model"] == spec
        assert main(["explain", "--data", str(manifest), "--model", spec, "--out", str(tmp_path / f"e-{name}"),
                     "--captions", "original", "--sample", "1", "--figures", "0", "-q", "--json"]) == 0
        capsys.readouterr()
        row = json.loads((tmp_path / f"e-{name}" / "explanations.jsonl").read_text().splitlines()[0])
        assert row["error"] is None and 0.0 <= row["t_shap"] <= 1.0 and row["compat"] == "mmshap"
        assert row["verb"] in ("begs", "sits") and row["patch_grid"] == (3 if name == "albef" else 2)


def test_albef_url_is_read_from_torchs_hub_cache(albef, tmp_path, monkeypatch) -> None:
    import shutil

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    url = "https://storage.googleapis.com/sfr-pcl-data-research/ALBEF/mscoco.pth"
    with pytest.raises(InputError, match="not in torch's hub cache"):
        load_model(f"albef-itm:{url}?tokenizer={albef['tokenizer']}&image_size=32")
    cached = Path(torch.hub.get_dir()) / "checkpoints" / "mscoco.pth"
    cached.parent.mkdir(parents=True)
    shutil.copy(albef["retrieval"], cached)
    model = load_model(f"albef-itm:{url}?tokenizer={albef['tokenizer']}&image_size=32")
    assert model.describe()["weights"] == str(cached.resolve())


def test_the_fingerprint_covers_the_checkpoint_and_features_bytes(albef, lxmert, tmp_path) -> None:
    """Rewriting a file's bytes (same size) changes what the run fingerprint holds."""
    import shutil

    ckpt = tmp_path / "a.pth"
    shutil.copy(albef["retrieval"], ckpt)
    spec = f"albef-itm:{ckpt}?tokenizer={albef['tokenizer']}&image_size=32"
    before = load_model(spec).describe()["sha256"]
    sd = torch.load(ckpt, weights_only=True)
    sd["model"]["itm_head.bias"] = sd["model"]["itm_head.bias"] + 1.0
    torch.save(sd, ckpt)
    assert load_model(spec).describe()["sha256"] != before
    feats = tiny_models.region_features(["p0"], regions=4)
    path = tiny_models.write_region_tsv(tmp_path / "f.tsv", feats)
    spec = f"hf-lxmert:{lxmert['folder']}?features={path}"
    first = load_model(spec).describe()
    f, b, w, h = feats["p0"]
    tiny_models.write_region_tsv(path, {"p0": (f + 1.0, b, w, h)})
    second = load_model(spec).describe()
    assert first["features"]["files"]["f.tsv"] != second["features"]["files"]["f.tsv"]
    assert "config.json" in first["files"]  # the local model folder's files are hashed too


def test_npz_features_that_are_links_outside_the_folder_are_read_and_fingerprinted(lxmert, tmp_path) -> None:
    """Issue 39, item 8: a features folder whose ``.npz`` files are links to files elsewhere (a shared store of
    extracted features) stopped with ``ValueError: ... is not in the subpath``; they are read through the links,
    named by their names in the folder, and a change behind a link changes the fingerprint."""
    store = tiny_models.write_region_npz(tmp_path / "store", tiny_models.region_features(["p0", "p1"], regions=4))
    folder = tmp_path / "features"
    folder.mkdir()
    for name in ("p0.npz", "p1.npz"):
        (folder / name).symlink_to(store / name)
    spec = f"hf-lxmert:{lxmert['folder']}?features={folder}"
    model = load_model(spec)
    first = model.describe()["features"]
    assert sorted(first["files"]) == ["p0.npz", "p1.npz"]
    images = [load_image(p) for p in lxmert["images"][:2]]
    assert all(0.0 <= p <= 1.0 for p in model.match_probability(images, CAPTIONS[:1], [(0, 0), (1, 0)]))
    f, b = tiny_models.region_features(["p0"], regions=4)["p0"][:2]
    np.savez(store / "p0.npz", x=f + 1.0, bbox=b)  # rewritten behind the link
    assert load_model(spec).describe()["features"]["files"]["p0.npz"] != first["files"]["p0.npz"]
