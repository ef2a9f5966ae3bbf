"""Text models of the CV-Probes probe-set builder: a text-only chat LM that rewords captions, and the
grammaticality scorers that choose the best of three.

Rewriter specs (``--rewriter``):

* ``none`` (default): the templated captions are kept as they are;
* ``hf-chat:ID_OR_DIR`` (options ``revision``, ``device``, ``dtype``, ``max_new_tokens``, ``batch_size``): any
  Hugging Face causal LM with a chat template, greedy decoding (also the registered ``hf-chat`` backend, which
  ``connote vmc synth`` takes);
* any registered ``generate`` backend (``openai:gpt-3.5-turbo`` as the paper, ``openai:MODEL?base_url=...`` for a
  local OpenAI-compatible server): the request carries the prompt and no image.

Scorer specs (``--scorer``), each a score in [0, 1], higher = more grammatical:

* ``gruen:COLA_DIR`` (option ``lm``, default ``bert-base-cased``) is the paper's: GRUEN's grammaticality on its
  released CoLA model, which connote does not bundle (``gruen`` alone is refused with the alternatives named);
* ``lm-perplexity:ID_OR_DIR``: any causal LM; the score is exp(mean log p(token | prefix)) over the
  caption's tokens after a BOS token, i.e. 1 / perplexity;
* ``cola:ID_OR_DIR`` (option ``label``): any sequence classifier fine-tuned on CoLA; the score is the
  softmax probability of the "acceptable" class (the label named ``acceptable``, else ``LABEL_1``/index 1);
* ``none``: not scored; the first candidate is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.core.errors import InputError
from connote.core.registry import require
from connote.models.engine import resolve_device, resolve_dtype
from connote.models.hub_identity import weights_identity
from connote.models.registry import parse_spec

SCORERS = ("lm-perplexity", "cola", "gruen", "none")


def _options(spec: str, allowed: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    parsed = parse_spec(spec)
    unknown = sorted(set(parsed.options) - set(allowed))
    if unknown:
        raise InputError(f"{spec!r}: unknown option(s) {', '.join(unknown)}; valid: {', '.join(allowed)}")
    return parsed.weights, parsed.options


class _HFText:
    """Loading shared by the text models: ``from_pretrained`` of ``kind`` and its tokenizer, eval mode."""

    kind = "AutoModelForCausalLM"

    def _load(self, weights: str, revision: str | None, device: str | None, dtype: str | None) -> None:
        self.torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.weights, self.revision = weights, revision
        try:
            self.model = getattr(transformers, self.kind).from_pretrained(
                weights, revision=revision, dtype=self.dtype).to(self.device).eval()
        except (OSError, ValueError, KeyError) as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise InputError(f"could not load {weights!r} as {self.kind}: {type(exc).__name__}: {first}") from None
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(weights, revision=revision)

    def _identity(self) -> dict[str, Any]:
        return {**weights_identity(self.weights, self.revision, self.model),
                "dtype": str(self.dtype).replace("torch.", "")}


class TextChat(_HFText):
    """A text-only chat LM (``hf-chat:ID``): the prompt as one user turn through the tokenizer's chat
    template (plain text when it has none); greedy decoding, or sampling where a request asks for a temperature
    (seeded by the request). Registered as the ``hf-chat`` backend (inputs: the prompt alone)."""

    backend = "hf-chat"

    def __init__(self, weights: str, *, revision: str | None = None, device: str | None = None,
                 dtype: str | None = None, max_new_tokens: int | str = 48, batch_size: int | str = 8) -> None:
        self._load(weights, revision, device, dtype)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), max(1, int(batch_size))

    @classmethod
    def from_spec(cls, spec: str) -> TextChat:
        weights, options = _options(spec, ("revision", "device", "dtype", "max_new_tokens", "batch_size"))
        if not weights:
            raise InputError("hf-chat needs weights: hf-chat:HUB_ID or hf-chat:LOCAL_DIR")
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, **self._identity(), "max_new_tokens": self.max_new_tokens,
                "decoding": "greedy unless the request asks for a temperature"}

    def _text(self, prompt: str) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
            try:
                return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            except Exception:  # noqa: BLE001 - templates that want plain string content
                messages = [{"role": "user", "content": prompt}]
                return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return prompt

    def _generate_batch(self, texts: Sequence[str], max_new_tokens: int, sampling: dict[str, Any]) -> list[str]:
        """One ``generate`` call for several prompts, left-padded to the longest (the attention mask skips the
        padding)."""
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        side = tok.padding_side
        tok.padding_side = "left"
        try:
            if len(texts) > 1 and tok.pad_token_id is None:
                tok.pad_token = tok.eos_token  # padding only: the mask hides it
            enc = tok(list(texts), return_tensors="pt", add_special_tokens=False, padding=len(texts) > 1)
        finally:
            tok.padding_side = side
        enc = enc.to(self.device)
        from connote.runs.speed import hf_generate

        with self.torch.inference_mode():
            ids = hf_generate(self.model, enc["input_ids"].shape[1], **enc, max_new_tokens=max_new_tokens,
                              pad_token_id=pad, **sampling)
        new = ids[:, enc["input_ids"].shape[1]:]
        return [tok.decode(row, skip_special_tokens=True).strip() for row in new]

    def generate(self, requests: Sequence[Any]) -> list[str]:
        """Greedy requests ``batch_size`` at a time (sorted by prompt length, split where the length limit
        changes); sampled ones one at a time, each seeded, so a sample does not depend on its batch."""
        import dataclasses

        from connote.models.protocols import greedy_batches

        requests = [dataclasses.replace(r, max_new_tokens=min(self.max_new_tokens, r.max_new_tokens))
                    for r in requests]
        texts = [self._text(r.prompt or "") for r in requests]
        out: list[Any] = [None] * len(requests)
        for i, req in enumerate(requests):
            if req.temperature > 0:
                out[i] = self._generate_batch([texts[i]], req.max_new_tokens, req.sampling())[0]
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        for chunk in greedy_batches(requests, lambda i: lengths[i], self.batch_size):
            answers = self._generate_batch([texts[i] for i in chunk], requests[chunk[0]].max_new_tokens,
                                           {"do_sample": False})
            for i, text in zip(chunk, answers):
                out[i] = text
        return out


def rewriter_from_spec(spec: str | None) -> Any | None:
    """None for ``none``; a ``TextChat`` for ``hf-chat:``; otherwise a registered ``generate`` backend."""
    if not spec or spec == "none":
        return None
    if parse_spec(spec).backend == "hf-chat":
        return TextChat.from_spec(spec)
    from connote.models.registry import MODELS, load_model

    backend = MODELS.get(parse_spec(spec).backend)
    if "generate" not in backend.capabilities:
        raise InputError(f"rewriter {spec!r}: backend {backend.name!r} cannot generate text; use hf-chat:ID, "
                         "openai:MODEL or another generate backend")
    return load_model(spec)


class LMPerplexityScorer(_HFText):
    """score = exp(mean_t log p(w_t | BOS, w_<t)) = 1 / perplexity, over the caption's tokens."""

    name = "lm-perplexity"

    def __init__(self, weights: str, *, revision: str | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int | str = 16) -> None:
        self._load(weights, revision, device, dtype)
        self.batch_size = int(batch_size)

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, **self._identity(), "score": "exp(mean token log-prob), BOS-prefixed"}

    def score(self, texts: Sequence[str]) -> list[float]:
        torch = self.torch
        tok = self.tokenizer
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        out: list[float] = []
        for i in range(0, len(texts), self.batch_size):
            seqs = [([bos] if bos is not None else []) + tok.encode(t, add_special_tokens=False)
                    for t in texts[i:i + self.batch_size]]
            if any(len(s) < 2 for s in seqs):
                raise ValueError("a caption with no tokens cannot be scored")
            width = max(len(s) for s in seqs)
            ids = torch.zeros((len(seqs), width), dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, s in enumerate(seqs):
                ids[r, :len(s)] = torch.tensor(s)
                mask[r, :len(s)] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            logp = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]
            keep = mask[:, 1:].float()
            mean = (logp * keep).sum(1) / keep.sum(1)
            out.extend(float(v) for v in mean.exp().cpu())
        return out


class ColaScorer(_HFText):
    """score = softmax(logits)[acceptable] of a CoLA-fine-tuned sequence classifier."""

    name = "cola"
    kind = "AutoModelForSequenceClassification"

    def __init__(self, weights: str, *, revision: str | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int | str = 16, label: str | None = None) -> None:
        self._load(weights, revision, device, dtype)
        self.batch_size = int(batch_size)
        names = {int(k): str(v) for k, v in (self.model.config.id2label or {}).items()}
        if label is not None:
            found = [i for i, n in names.items() if n == label or str(i) == str(label)]
            if not found:
                raise InputError(f"cola:{weights}: no label {label!r}; the model has {sorted(names.values())}")
            self.index = found[0]
        else:
            acceptable = [i for i, n in names.items() if n.lower() == "acceptable"]
            self.index = acceptable[0] if acceptable else 1
        if self.index >= self.model.config.num_labels:
            raise InputError(f"cola:{weights}: the model has {self.model.config.num_labels} label(s); "
                             "a CoLA classifier has two (unacceptable, acceptable)")

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, **self._identity(), "label_index": self.index}

    def score(self, texts: Sequence[str]) -> list[float]:
        out: list[float] = []
        for i in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(list(texts[i:i + self.batch_size]), padding=True, truncation=True,
                                 return_tensors="pt").to(self.device)
            with self.torch.inference_mode():
                probs = self.model(**enc).logits.float().softmax(-1)[:, self.index]
            out.extend(float(p) for p in probs.cpu())
        return out


def gruen_sentences(text: str) -> list[str]:
    """GRUEN's ``preprocess_candidates`` for one text: its whitespace and full-stop normalisation, then the
    sentences of more than one word. GRUEN splits with NLTK's punkt; connote splits after ``.``, ``!`` or ``?``
    followed by a space (the same on captions without abbreviations)."""
    import re
    import string

    t = text.strip()
    t = ". ".join(t.split("\n\n"))
    t = ". ".join(t.split("\n"))
    t = ".".join(t.split(".."))
    t = ". ".join(t.split("."))
    t = ". ".join(t.split(". . "))
    t = ". ".join(t.split(".  . "))
    while "  " in t:
        t = " ".join(t.split("  "))
    m = re.search(r"(\d+)\. (\d+)", t)
    while m:
        t = "UNK".join(t.split(m.group()))
        m = re.search(r"(\d+)\. (\d+)", t)
    t = t.strip()
    sentences = [x.strip() for x in re.split(r"(?<=[.!?])\s+", t) if x.strip()]
    return [x for x in sentences if len(x.translate(str.maketrans("", "", string.punctuation)).split()) > 1]


class GruenScorer(_HFText):
    """GRUEN's grammaticality (Zhu & Bhat 2020, the released ``main.py``), the paper's scorer, on the weights a
    user gives: ``gruen:COLA_DIR`` (GRUEN's fine-tuned ``cola_model/bert-base-cased``) with ``lm`` (default
    ``bert-base-cased``). Per sentence: lm = exp(BertForMaskedLM's loss with the unmasked input as labels),
    cola = the CoLA classifier's logit of class 1; each averaged over the sentences; grammaticality =
    max(0, (exp(-0.5 lm) + cola) / 8 + 0.5); GRUEN = min(1, that) for a one-sentence caption, whose redundancy
    and focus terms are 0. A caption of several sentences is refused (those terms need spaCy vectors and WMD)."""

    name = "gruen"
    kind = "BertForSequenceClassification"

    def __init__(self, weights: str, *, lm: str = "bert-base-cased", revision: str | None = None,
                 lm_revision: str | None = None, device: str | None = None, dtype: str | None = None) -> None:
        transformers = require("transformers", "hf")
        self._load(weights, revision, device, dtype)
        self.tokenizer = transformers.BertTokenizer.from_pretrained(weights, revision=revision, do_lower_case=False)
        self.lm_weights, self.lm_revision = lm, lm_revision
        try:
            self.lm = transformers.BertForMaskedLM.from_pretrained(lm, revision=lm_revision, dtype=self.dtype)
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"could not load GRUEN's LM {lm!r}: {type(exc).__name__}: {exc}") from None
        self.lm = self.lm.to(self.device).eval()
        self.lm_tokenizer = transformers.BertTokenizer.from_pretrained(lm, revision=lm_revision)

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "cola": self._identity(),
                "lm": weights_identity(self.lm_weights, self.lm_revision, self.lm),
                "score": "GRUEN grammaticality, one-sentence captions"}

    def _one(self, text: str) -> float:
        import math

        torch = self.torch
        sentences = gruen_sentences(text)
        if len(sentences) > 1:
            raise ValueError(f"GRUEN scores one-sentence captions here; {text!r} has {len(sentences)}")
        lm_scores, cola_scores = [0.0], [0.0]  # GRUEN's values for a text without a sentence of two words
        if sentences:
            lm_scores, cola_scores = [], []
        for sentence in sentences:
            tokens = self.lm_tokenizer.tokenize(sentence)[:510]
            tok = self.lm_tokenizer  # GRUEN's encode(tokens): [CLS] + the tokens' ids + [SEP]
            ids = torch.tensor([[tok.cls_token_id, *tok.convert_tokens_to_ids(tokens), tok.sep_token_id]],
                               device=self.device)
            with torch.inference_mode():
                lm_scores.append(math.exp(float(self.lm(ids, labels=ids).loss)))
            enc = self.tokenizer(sentence, max_length=128, truncation=True, return_tensors="pt").to(self.device)
            enc["token_type_ids"] = torch.zeros_like(enc["input_ids"])
            with torch.inference_mode():
                cola_scores.append(float(self.model(**enc).logits[0, 1]))
        lm_score, cola = sum(lm_scores) / len(lm_scores), sum(cola_scores) / len(cola_scores)
        grammar = max(0.0, (math.exp(-0.5 * lm_score) + cola) / 8.0 + 0.5)
        return min(1.0, max(0.0, grammar))

    def score(self, texts: Sequence[str]) -> list[float]:
        return [self._one(t) for t in texts]


def scorer_from_spec(spec: str | None) -> Any | None:
    """None for ``none``; otherwise an object with ``score(texts) -> list[float]`` and ``describe()``."""
    if not spec or spec == "none":
        return None
    parsed = parse_spec(spec)
    if parsed.backend == "gruen" and not parsed.weights:
        raise InputError("scorer 'gruen' (the paper's) needs GRUEN's released CoLA model: gruen:COLA_DIR"
                         "[?lm=bert-base-cased]; without it use lm-perplexity:CAUSAL_LM or cola:COLA_CLASSIFIER "
                         "(named alternatives) or none")
    if parsed.backend not in ("lm-perplexity", "cola", "gruen"):
        raise InputError(f"unknown scorer {parsed.backend!r}; valid: {', '.join(SCORERS)}")
    if not parsed.weights:
        raise InputError(f"scorer {parsed.backend} needs weights: {parsed.backend}:HUB_ID or {parsed.backend}:DIR")
    if parsed.backend == "gruen":
        _options(spec, ("lm", "revision", "lm_revision", "device", "dtype"))
        return GruenScorer(parsed.weights, **parsed.options)
    if parsed.backend == "lm-perplexity":
        _options(spec, ("revision", "device", "dtype", "batch_size"))
        return LMPerplexityScorer(parsed.weights, **parsed.options)
    _options(spec, ("revision", "device", "dtype", "batch_size", "label"))
    return ColaScorer(parsed.weights, **parsed.options)
