"""Tiny random Hugging Face models saved to disk, loaded back through the public code path.

Every builder writes a real model directory (config, safetensors weights, tokenizer, processor)
with ``save_pretrained``; backends then load it with ``from_pretrained`` exactly as they load a
hub checkpoint.
"""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "a an the man woman person child dog cat people street bench cup hand sits sitting begs begging "
    "stands standing prays praying holds holding on in at with of and is are photo picture rocket "
    "launch coffee astronaut motorcycle flower red blue green car outside inside to for by near "
    "yes no does this caption match image answer describe video metaphor as story"
).split()


def random_image(seed: int, size=(48, 40)):  # -> PIL.Image.Image
    """A random RGB image, the same for the same seed."""
    import numpy as np
    from PIL import Image

    rng = np.random.RandomState(seed)
    return Image.fromarray((rng.rand(size[1], size[0], 3) * 255).astype("uint8"))


def write_bert_vocab(folder: Path) -> Path:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path = folder / "vocab.txt"
    path.write_text("\n".join(specials + sorted(set(WORDS)) + list("abcdefghijklmnopqrstuvwxyz.,!?'")) + "\n")
    return path


def spread(model, std: float = 0.3, seed: int = 0):
    """Re-draw weights with a larger spread so random models give clearly different outputs."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model


def bert_tokenizer(folder: Path):
    from transformers import BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    return BertTokenizer(vocab=str(write_bert_vocab(folder)), do_lower_case=True)


def tiny_blip(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    torch.manual_seed(seed)
    tok = bert_tokenizer(folder / "_tok")
    cfg = BlipConfig(
        text_config=dict(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                         encoder_hidden_size=32, pad_token_id=tok.pad_token_id,
                         bos_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id),
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8),
        projection_dim=16, image_text_hidden_size=16)
    model = spread(BlipForImageTextRetrieval(cfg).eval(), seed=seed)
    proc = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def tiny_blip2(folder: Path, seed: int = 0, cross_attention_frequency: int = 2) -> Path:
    """A tiny random BLIP-2 ITM model; its Q-Former's 2 layers cross-attend every ``cross_attention_frequency``."""
    import torch
    from transformers import Blip2Config, Blip2ForImageTextRetrieval, Blip2Processor, BlipImageProcessor

    torch.manual_seed(seed)
    tok = bert_tokenizer(folder / "_tok")
    cfg = Blip2Config(
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8),
        qformer_config=dict(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64, encoder_hidden_size=32,
                            max_position_embeddings=64, pad_token_id=tok.pad_token_id,
                            use_qformer_text_input=True, cross_attention_frequency=cross_attention_frequency),
        text_config=dict(model_type="opt", vocab_size=50, hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, ffn_dim=64, word_embed_proj_dim=32),
        num_query_tokens=4, image_text_hidden_size=16)
    cfg.image_token_index = None
    model = spread(Blip2ForImageTextRetrieval(cfg).eval(), seed=seed)
    proc = Blip2Processor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
                          tokenizer=tok, num_query_tokens=None)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def tiny_flava(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import FlavaConfig, FlavaForPreTraining, FlavaImageProcessor, FlavaProcessor

    torch.manual_seed(seed)
    tok = bert_tokenizer(folder / "_tok")
    layer = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    cfg = FlavaConfig(
        image_config=dict(layer, image_size=32, patch_size=8),
        text_config=dict(layer, vocab_size=tok.vocab_size, max_position_embeddings=64),
        multimodal_config=dict(layer),
        image_codebook_config=dict(hidden_size=16, num_groups=1, num_blocks_per_group=1, vocab_size=32),
        hidden_size=32, projection_dim=16, init_codebook=False)
    model = spread(FlavaForPreTraining(cfg).eval(), seed=seed)
    ip = FlavaImageProcessor(size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32})
    proc = FlavaProcessor(image_processor=ip, tokenizer=tok)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def tiny_clip(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    torch.manual_seed(seed)
    tok = bert_tokenizer(folder / "_tok")
    cfg = CLIPConfig(
        text_config=dict(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                         pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                         eos_token_id=tok.sep_token_id),
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8),
        projection_dim=16)
    model = spread(CLIPModel(cfg).eval(), seed=seed)
    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    proc = CLIPProcessor(image_processor=ip, tokenizer=tok)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] | upper }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def word_tokenizer(folder: Path, extra: tuple[str, ...] = ()):
    """A word-level fast tokenizer with <s>, </s>, <pad>, <unk>, <image> and a chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "Yes", "No", "\"", ":"]
    words += [w for w in sorted(set(WORDS) | set(extra)) if w not in words]
    words += list("abcdefghijklmnopqrstuvwxyz.,!?'")
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>", unk_token="<unk>",
                                  extra_special_tokens={"image_token": "<image>"})
    tok.chat_template = CHAT_TEMPLATE
    folder.mkdir(parents=True, exist_ok=True)
    return tok


def tiny_llava(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    torch.manual_seed(seed)
    tok = word_tokenizer(folder / "_tok")
    image_token = tok.convert_tokens_to_ids("<image>")
    cfg = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8,
                           projection_dim=16),
        text_config=dict(model_type="llama", vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, intermediate_size=64,
                         max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id),
        image_token_index=image_token, vision_feature_layer=-1, vision_feature_select_strategy="default")
    model = spread(LlavaForConditionalGeneration(cfg).eval(), std=0.2, seed=seed)
    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    proc = LlavaProcessor(image_processor=ip, tokenizer=tok, patch_size=8,
                          vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
                          image_token="<image>", num_additional_image_tokens=1)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def tiny_chat_lm(folder: Path, seed: int = 0) -> Path:
    """A tiny random Llama chat LM (``LlamaForCausalLM`` + the word-level tokenizer with its chat template): what
    ``hf-chat:DIR`` loads as it loads a hub chat model."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    tok = word_tokenizer(folder)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=256,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = spread(LlamaForCausalLM(cfg).eval(), std=0.2, seed=seed)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


#: The image-text matching backends' tiny models, by backend name.
BUILDERS = {
    "hf-blip-itm": tiny_blip,
    "hf-blip2-itm": tiny_blip2,
    "hf-flava-itm": tiny_flava,
    "hf-clip": tiny_clip,
    "hf-vlm-yesno": tiny_llava,
}


def tiny_albef(folder: Path, seed: int = 0, *, layout: str = "pretrain", grid: int = 2) -> tuple[Path, Path]:
    """A tiny random ALBEF saved as the release saves it: ``{"model": state_dict, "optimizer", "config", "epoch"}``.

    ``layout="pretrain"``: the text encoder under ``text_encoder.bert.*`` with an MLM head and momentum copies
    (as ``ALBEF.pth``); ``"retrieval"``: ``text_encoder.*`` (as the COCO/Flickr fine-tunes). The position
    embeddings are stored for a ``grid x grid`` patch grid (the model runs at 32 px, patches of 8: 4 x 4),
    so loading resizes them as ALBEF does for its 256 px pre-trained files. Returns (checkpoint, tokenizer).
    """
    import torch

    from connote.models.albef import build_module
    from connote.models.albef_checkpoint import AlbefShape

    torch.manual_seed(seed)
    tok_dir = folder / "tokenizer"
    tok = bert_tokenizer(tok_dir)
    tok.save_pretrained(tok_dir)
    # widths of 128 in 2 heads: head size 64 as in ALBEF, so the loader's heads = width / 64 fits
    shape = AlbefShape(image_size=32, patch_size=8, vision_width=128, vision_depth=2, vision_heads=2, mlp_hidden=256,
                       vocab_size=tok.vocab_size, max_positions=64, type_vocab=2, text_width=128, text_layers=4,
                       text_heads=2, intermediate=256, fusion_layer=2)
    model = spread(build_module(shape).eval(), std=0.15, seed=seed)
    state = {}
    gen = torch.Generator().manual_seed(seed + 1)
    for key, value in model.state_dict().items():
        if key == "visual_encoder.pos_embed":
            value = torch.randn(1, grid * grid + 1, shape.vision_width, generator=gen) * 0.3
        if layout == "pretrain" and key.startswith("text_encoder."):
            key = "text_encoder.bert." + key[len("text_encoder."):]
        state[key] = value.clone()
    # the buffers ALBEF's modules register persistently (xbert's BertEmbeddings.position_ids; the pre-training
    # and retrieval models' queues, queue pointer, and for retrieval the idx queue), under the release's names
    bert = "text_encoder.bert" if layout == "pretrain" else "text_encoder"
    for encoder in (bert, bert.replace("text_encoder", "text_encoder_m")):
        state[f"{encoder}.embeddings.position_ids"] = torch.arange(shape.max_positions).expand((1, -1))
    state["image_queue"] = torch.randn(16, 8, generator=gen)
    state["text_queue"] = torch.randn(16, 8, generator=gen)
    state["queue_ptr"] = torch.zeros(1, dtype=torch.long)
    state["temp"] = torch.tensor(0.07)
    if layout == "retrieval":
        state["idx_queue"] = torch.full((1, 8), -100)
    if layout == "pretrain":
        state["text_encoder.cls.predictions.bias"] = torch.zeros(tok.vocab_size)
        state["visual_encoder_m.cls_token"] = torch.zeros(1, 1, shape.vision_width)
        state["vision_proj.weight"] = torch.randn(16, shape.vision_width, generator=gen)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"albef_{layout}.pth"
    torch.save({"model": state, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-4, "params": [0]}]},
                "lr_scheduler": {"t_initial": 30, "base_values": [1e-4]},
                "config": {"image_res": 32, "bert_config": "configs/config_bert.json"}, "epoch": 29}, path)
    return path, tok_dir


def tiny_lxmert(folder: Path, seed: int = 0, feat_dim: int = 16) -> Path:
    """A tiny random ``LxmertForPreTraining`` (regions of ``feat_dim`` features) and its BERT tokenizer."""
    import torch
    from transformers import LxmertConfig, LxmertForPreTraining

    torch.manual_seed(seed)
    tok = bert_tokenizer(folder)
    cfg = LxmertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                       l_layers=2, x_layers=1, r_layers=1, visual_feat_dim=feat_dim, max_position_embeddings=64,
                       num_qa_labels=4, num_object_labels=8, num_attr_labels=4, pad_token_id=tok.pad_token_id)
    model = spread(LxmertForPreTraining(cfg).eval(), std=0.3, seed=seed)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def region_features(ids: list[str], seed: int = 0, regions: int = 36, feat_dim: int = 16):
    """Random region features and pixel boxes per image id: {id: (features, boxes, width, height)}."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for k, key in enumerate(ids):
        w, h = 48 + 8 * k, 40
        x1, y1 = rng.uniform(0, w / 2, regions), rng.uniform(0, h / 2, regions)
        boxes = np.stack([x1, y1, x1 + rng.uniform(1, w / 2, regions), y1 + rng.uniform(1, h / 2, regions)], 1)
        out[key] = (rng.normal(size=(regions, feat_dim)).astype(np.float32), boxes.astype(np.float32), w, h)
    return out


def write_region_tsv(path: Path, feats: dict) -> Path:
    """LXMERT's 10-column .tsv (base64 float32/int64 fields)."""
    import base64

    import numpy as np

    def b64(a):
        return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()

    lines = []
    for key, (f, b, w, h) in feats.items():
        n = len(b)
        lines.append("\t".join([key, str(h), str(w), b64(np.zeros(n, np.int64)), b64(np.ones(n, np.float32)),
                                b64(np.zeros(n, np.int64)), b64(np.ones(n, np.float32)), str(n), b64(b), b64(f)]))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_region_h5(path: Path, feats: dict) -> Path:
    """HDF5, one group per image: datasets features, boxes; attributes image_w, image_h."""
    import h5py

    with h5py.File(path, "w") as f:
        for key, (feat, b, w, h) in feats.items():
            g = f.create_group(key)
            g["features"], g["boxes"] = feat, b
            g.attrs["image_w"], g.attrs["image_h"] = w, h
    return path


def write_region_npz(folder: Path, feats: dict) -> Path:
    """A folder of ``<image>.npz`` (x as (D, R), as bottom-up-attention's npz extractor writes it; bbox)."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    for key, (f, b, w, h) in feats.items():
        np.savez(folder / f"{key}.npz", x=f.T, bbox=b, image_w=w, image_h=h, num_bbox=len(b))
    return folder
