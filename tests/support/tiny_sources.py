"""Tiny randomly initialised sources saved like real checkpoints: GIT + causal LM (connote's own
:mod:`connote.vmc.train.tiny`, which ``vmc train --sample`` uses) and a multi-image chat VLM (tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from connote.vmc.train.tiny import CHAT_WORDS, make_tiny_sources

__all__ = ["CHAT_WORDS", "make_tiny_llava", "make_tiny_sources"]


def make_tiny_llava(folder: str | Path, words: Iterable[str] = (), *, hidden: int = 32, image_size: int = 32,
                    seed: int = 0, patch_size: int | None = None, vision: dict | None = None,
                    text: dict | None = None, feature_layer: int = -1, device: str = "cpu",
                    dtype: str | None = None) -> Path:
    """Write a tiny random LLaVA (``LlavaForConditionalGeneration`` + ``LlavaProcessor`` with a chat
    template) to ``folder``: a multi-image chat VLM loadable with ``AutoModelForImageTextToText``.
    ``vision`` and ``text`` override the CLIP vision and Llama config fields (benchmarks build larger ones, on
    ``device`` and saved in ``dtype``, e.g. bfloat16: half the bytes to write and read back)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<unk>", "<s>", "</s>", "<image>"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys([*specials, *CHAT_WORDS, *words]))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                        unk_token="<unk>", extra_special_tokens={"image_token": "<image>"})
    template = ("{% for m in messages %}USER: {% for c in m['content'] %}{% if c['type'] == 'image' %}<image> "
                "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endfor %}"
                "{% if add_generation_prompt %} ASSISTANT:{% endif %}")
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": image_size},
                                           crop_size={"height": image_size, "width": image_size}),
        tokenizer=tokenizer, patch_size=patch_size or image_size // 2, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=template, image_token="<image>")
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**{"hidden_size": hidden, "intermediate_size": 2 * hidden,
                                          "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": image_size,
                                          "patch_size": patch_size or image_size // 2, **(vision or {})}),
        text_config=LlamaConfig(**{"vocab_size": len(vocab), "hidden_size": hidden, "intermediate_size": 2 * hidden,
                                   "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                   "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3, **(text or {})}),
        image_token_index=vocab["<image>"], vision_feature_layer=feature_layer,
        vision_feature_select_strategy="default")
    with torch.device(device):  # random init on an accelerator takes seconds where a CPU takes a minute
        model = LlavaForConditionalGeneration(config)
    if dtype is not None:
        model.to(getattr(torch, dtype))
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
