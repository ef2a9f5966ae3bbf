"""Tiny randomly initialised GIT and causal-LM sources, saved like real checkpoints.

For offline smoke runs (``connote vmc train --sample``), tests and benchmarks: :func:`make_tiny_sources` writes a
video GIT (``GitForCausalLM`` + ``GitProcessor``) and a Llama-architecture causal LM with a word-level tokenizer
into a folder, loadable with ``from_pretrained`` exactly as hub checkpoints are. Their weights are random: a run
on them shows that the pipeline works, never how a model does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CHAT_WORDS = ("USER:", "ASSISTANT:", "what", "caption", "can", "best", "describe", "the", "metaphor",
              "in", "video?", "video", "is", "as")


def make_tiny_sources(folder: str | Path, words: Iterable[str] = (), *, hidden: int = 32, frames: int = 6,
                      image_size: int = 32, llm_layers: int = 2, seed: int = 0) -> tuple[Path, Path]:
    """Write ``<folder>/git`` and ``<folder>/llm``; returns both paths.

    ``words`` are added to both vocabularies (the LLM tokenizer splits on whitespace only).
    Dropout is 0 so that runs are deterministic across process counts.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        BertTokenizer,
        CLIPImageProcessor,
        GitConfig,
        GitForCausalLM,
        GitProcessor,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    folder = Path(folder)
    git_dir, llm_dir = folder / "git", folder / "llm"
    git_dir.mkdir(parents=True, exist_ok=True)
    llm_dir.mkdir(parents=True, exist_ok=True)
    vocab_words = list(dict.fromkeys([*CHAT_WORDS, *words]))
    bert_vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[w.lower() for w in vocab_words]]
    bert_vocab = list(dict.fromkeys(bert_vocab))
    (git_dir / "vocab.txt").write_text("\n".join(bert_vocab) + "\n")
    processor = GitProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": image_size},
                                           crop_size={"height": image_size, "width": image_size}),
        tokenizer=BertTokenizer(str(git_dir / "vocab.txt")))
    torch.manual_seed(seed)
    git = GitForCausalLM(GitConfig(
        vision_config={"hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": image_size, "patch_size": image_size // 2},
        hidden_size=hidden, num_hidden_layers=2, num_attention_heads=4, intermediate_size=2 * hidden,
        vocab_size=len(bert_vocab), num_image_with_embedding=frames, max_position_embeddings=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        bos_token_id=2, eos_token_id=3, pad_token_id=0))
    git.save_pretrained(git_dir)
    processor.save_pretrained(git_dir)

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {w: i for i, w in enumerate(list(dict.fromkeys([*specials, *vocab_words])))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", unk_token="<unk>")
    tokenizer.save_pretrained(llm_dir)
    llm = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=llm_layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=2, eos_token_id=3, pad_token_id=0, attention_dropout=0.0))
    llm.save_pretrained(llm_dir)
    return git_dir, llm_dir
