"""Story generators for photo sequences, and the resumable ``generate`` run.

Backends (``STORY_GENERATORS``; named on the command line by a spec ``backend[:weights][?k=v&...]``):

``retrieval`` (default, offline)
    nearest-neighbour baseline: returns the training story whose photos are closest to the query
    photos in the embedded encoders' space (EfficientNet-Lite0 + MiniLM, ``connote.models.embedded``,
    or any ``Embedder``). Training stories are indexed by their storylets' text embeddings (the
    encoders share MiniLM space, so no training images are needed) or, with training images, by the
    photos' image embeddings. Similarity = mean over positions of the cosine between the i-th query
    photo and the i-th indexed item; ties go to the earliest story.
``hf-vlm``
    a Hugging Face multi-image chat VLM (``AutoModelForImageTextToText`` + ``AutoProcessor``): all
    photos of the sequence in one user turn, then the story prompt.
``caption-llm``
    two stages: a captioner (``AutoModelForImageTextToText``, else ``AutoModelForCausalLM`` for GIT)
    captions each photo, then a causal LM (option ``llm``) writes the story from the numbered captions.
``openai``
    an OpenAI-compatible chat API (``OPENAI_API_KEY``/``OPENAI_BASE_URL``), the photos as data URLs.
``seq2seq``
    the paper's baseline (``connote.vist.seq2seq``) from a folder written by ``connote story train``,
    with a ``features`` .npz and a ``decode`` option; ``+Grounded`` licenses the content words of the
    description-in-isolation texts of the same photos (``grounding=DII.json``) or of a grounding model
    (``grounding=objects``: the embedded classifier's top ImageNet labels of each photo).

A generation run stores every sequence's story (or its error, e.g. a missing or unreadable photo)
in a :class:`connote.runs.RunStore` keyed by a fingerprint of the generator's ``describe()`` and the
prompt, so rerunning resumes and a different model never reuses another's rows; it then writes
``stories.jsonl`` and the challenge-format ``submission.json`` (an errored sequence appears there with
an empty story and an ``error`` key, and is skipped by ``connote vist score``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from connote.errors import InputError, ItemError
from connote.registry import Registry, require
from connote.vist.data import seq_id

STORY_PROMPT_VERSION = 1
STORY_PROMPT = ("These photos are in order. Write a short story about them, one sentence per photo, "
                "as if sharing the experience with friends.")
CAPTION_STORY_PROMPT = ("Photo captions, in order:\n{captions}\nWrite a short story about these photos, "
                        "one sentence per photo, as if sharing the experience with friends.\nStory:")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", "")


@dataclass
class SequenceInput:
    """One photo sequence to write a story for."""

    album_id: str
    photo_ids: tuple[str, ...]
    images: list[Image.Image] | None = None

    @property
    def id(self) -> str:
        return seq_id(self.photo_ids)


class StoryGenerator(Protocol):
    """Writes one story per photo sequence."""

    def describe(self) -> dict[str, Any]: ...

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]: ...

    needs_images: bool


def normalize_story(text: str) -> str:
    """Lower-case and split punctuation off words, like the challenge's ``story_text_normalized``.

    >>> normalize_story("We went to the Beach! It was fun, really.")
    'we went to the beach ! it was fun , really .'
    """
    import re

    text = text.replace("\n", " ").strip().lower()
    text = re.sub(r"([.,!?;:\"()])", r" \1 ", text)
    return " ".join(text.split())


# --------------------------------------------------------------------------- image loading


def find_image(image_dir: str | Path, photo_id: str) -> Path:
    """The file of a photo in ``image_dir`` (``<id>.<ext>``, any common extension, or a subfolder)."""
    d = Path(image_dir)
    for ext in IMAGE_EXTENSIONS:
        p = d / f"{photo_id}{ext}"
        if p.is_file():
            return p
    hits = sorted(d.glob(f"**/{photo_id}.*"))
    if hits:
        return hits[0]
    raise ItemError(f"photo {photo_id}: no image file in {d}")


def load_sequence_images(image_dir: str | Path, photo_ids: Sequence[str]) -> list[Image.Image]:
    """Load a sequence's photos; the first missing/unreadable one raises ``ItemError`` naming it."""
    from connote.data.images import load_image

    return [load_image(find_image(image_dir, p)) for p in photo_ids]


# --------------------------------------------------------------------------- retrieval


class RetrievalStoryGenerator:
    """Nearest training story in the embedded encoders' space (see module docstring)."""

    backend = "retrieval"
    needs_images = True

    def __init__(self, embedder: Any, stories: Sequence[tuple[Sequence[str], Sequence[str]]], *,
                 index_by: str = "text", train_images: Callable[[str], Image.Image] | None = None,
                 batch_size: int = 256, cache: str | Path | None = None) -> None:
        """``stories``: (photo ids, storylet texts) of the training stories, in order.

        ``cache``: a folder where the index is kept (``<key>.npz``, the key hashing the embedder's
        description, ``index_by`` and the stories) and reused (embedding a training split takes a while
        on a CPU).
        """
        if not stories:
            raise ValueError("the retrieval baseline needs at least one training story")
        if index_by not in ("text", "image"):
            raise ValueError("index_by must be 'text' or 'image'")
        if index_by == "image" and train_images is None:
            raise ValueError("index_by='image' needs train_images (photo id -> image)")
        self.embedder, self.index_by = embedder, index_by
        self.stories = [(tuple(p), [str(t) for t in ts]) for p, ts in stories]
        self.length = min(len(ts) for _, ts in self.stories)
        self._sha = hashlib.sha256(json.dumps(self.stories).encode()).hexdigest()[:12]
        key = hashlib.sha256(json.dumps([self.describe_embedder(), index_by, self._sha],
                                        sort_keys=True, default=str).encode()).hexdigest()[:16]
        cached = Path(cache) / f"{key}.npz" if cache else None
        if cached is not None and cached.is_file():
            with np.load(cached) as z:
                self.index = z["index"]
            return
        items: list[Any] = []
        for photos, texts in self.stories:
            items.extend(texts[: self.length] if index_by == "text" else photos[: self.length])
        chunks = []
        for i in range(0, len(items), batch_size):
            part = items[i:i + batch_size]
            if index_by == "text":
                chunks.append(np.asarray(embedder.embed_texts(part), dtype=np.float32))
            else:
                chunks.append(np.asarray(embedder.embed_images([train_images(p) for p in part]), dtype=np.float32))
        emb = np.concatenate(chunks)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True).clip(1e-12)
        self.index = emb.reshape(len(self.stories), self.length, -1)
        if cached is not None:
            try:  # best effort: an unwritable cache only costs time
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(cached.stem + ".tmp.npz")
                np.savez(tmp, index=self.index)
                tmp.replace(cached)
            except OSError:
                pass

    def describe_embedder(self) -> Any:
        describe = getattr(self.embedder, "describe", None)
        return describe() if callable(describe) else repr(self.embedder)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "embedder": self.describe_embedder(),
                "index_by": self.index_by, "n_stories": len(self.stories), "stories_sha": self._sha}

    def nearest(self, images: Sequence[Image.Image]) -> tuple[int, float]:
        q = np.asarray(self.embedder.embed_images(list(images)), dtype=np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True).clip(1e-12)
        n = min(len(q), self.length)
        sims = np.einsum("sid,id->si", self.index[:, :n], q[:n]).mean(axis=1)
        best = int(np.argmax(sims))
        return best, float(sims[best])

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]:
        out = []
        for s in sequences:
            if not s.images:
                raise ItemError(f"sequence {s.id}: no images")
            best, _ = self.nearest(s.images)
            out.append(" ".join(self.stories[best][1]))
        return out


# --------------------------------------------------------------------------- Hugging Face backends


def _hf_identity(weights: str, revision: str | None, model: Any) -> dict[str, Any]:
    from connote.models.hf_itm import weights_identity

    return weights_identity(weights, revision, model)


def _resolve(device: str | None, dtype: str | None) -> tuple[str, Any]:
    from connote.models.engine import resolve_device, resolve_dtype

    dev = resolve_device(device)
    return dev, resolve_dtype(dtype, dev)


class HfVlmStoryGenerator:
    """A multi-image chat VLM: all photos in one user turn, then the story prompt; greedy decoding."""

    backend = "hf-vlm"
    needs_images = True

    def __init__(self, weights: str | None = None, *, revision: str | None = None, prompt: str = STORY_PROMPT,
                 max_new_tokens: int | str = 120, device: str | None = None, dtype: str | None = None) -> None:
        if not weights:
            raise ValueError("hf-vlm needs weights: a hub id or a local directory")
        self.torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        self.device, self.dtype = _resolve(device, dtype)
        self.weights, self.revision, self.prompt = weights, revision, prompt
        self.max_new_tokens = int(max_new_tokens)
        self.model = transformers.AutoModelForImageTextToText.from_pretrained(
            weights, revision=revision, dtype=self.dtype).to(self.device).eval()
        self.processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> HfVlmStoryGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, **_hf_identity(self.weights, self.revision, self.model),
                "dtype": str(self.dtype).replace("torch.", ""), "prompt_version": STORY_PROMPT_VERSION,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "max_new_tokens": self.max_new_tokens, "decoding": "greedy"}

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]:
        out = []
        for s in sequences:
            if not s.images:
                raise ItemError(f"sequence {s.id}: no images")
            conversation = [{"role": "user", "content": [*({"type": "image"} for _ in s.images),
                                                         {"type": "text", "text": self.prompt}]}]
            text = self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
            inputs = self.processor(images=[list(s.images)], text=[text], return_tensors="pt").to(self.device)
            if "pixel_values" in inputs and self.dtype != self.torch.float32:
                inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
            with self.torch.inference_mode():
                ids = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
            new = ids[0, inputs["input_ids"].shape[1]:]
            out.append(normalize_story(self.processor.decode(new, skip_special_tokens=True)))
        return out


class CaptionLlmStoryGenerator:
    """Caption each photo, then let a causal LM write the story from the numbered captions."""

    backend = "caption-llm"
    needs_images = True

    def __init__(self, weights: str | None = None, *, llm: str | None = None, revision: str | None = None,
                 prompt: str = CAPTION_STORY_PROMPT, caption_tokens: int | str = 20,
                 max_new_tokens: int | str = 120, device: str | None = None, dtype: str | None = None) -> None:
        if not weights or not llm:
            raise ValueError("caption-llm needs a captioner (weights) and an llm option: "
                             "caption-llm:CAPTIONER?llm=LLM")
        self.torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        self.device, self.dtype = _resolve(device, dtype)
        self.weights, self.llm_weights, self.revision, self.prompt = weights, llm, revision, prompt
        self.caption_tokens, self.max_new_tokens = int(caption_tokens), int(max_new_tokens)
        try:
            cap = transformers.AutoModelForImageTextToText.from_pretrained(weights, revision=revision, dtype=self.dtype)
        except ValueError:  # captioners registered only as causal LMs (GIT)
            cap = transformers.AutoModelForCausalLM.from_pretrained(weights, revision=revision, dtype=self.dtype)
        self.captioner = cap.to(self.device).eval()
        self.cap_processor = transformers.AutoProcessor.from_pretrained(weights, revision=revision)
        self.llm = transformers.AutoModelForCausalLM.from_pretrained(llm, dtype=self.dtype).to(self.device).eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(llm)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> CaptionLlmStoryGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "captioner": _hf_identity(self.weights, self.revision, self.captioner),
                "llm": _hf_identity(self.llm_weights, None, self.llm),
                "dtype": str(self.dtype).replace("torch.", ""), "prompt_version": STORY_PROMPT_VERSION,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12],
                "caption_tokens": self.caption_tokens, "max_new_tokens": self.max_new_tokens,
                "decoding": "greedy"}

    def captions(self, images: Sequence[Image.Image]) -> list[str]:
        inputs = self.cap_processor(images=list(images), return_tensors="pt").to(self.device)
        pv = inputs["pixel_values"].to(self.dtype)
        with self.torch.inference_mode():
            ids = self.captioner.generate(pixel_values=pv, max_new_tokens=self.caption_tokens, do_sample=False)
        return [t.strip() for t in self.cap_processor.batch_decode(ids, skip_special_tokens=True)]

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]:
        out = []
        for s in sequences:
            if not s.images:
                raise ItemError(f"sequence {s.id}: no images")
            caps = self.captions(s.images)
            prompt = self.prompt.format(captions="\n".join(f"{i + 1}. {c}" for i, c in enumerate(caps)))
            enc = self.tokenizer(prompt, return_tensors="pt").to(self.device)
            with self.torch.inference_mode():
                ids = self.llm.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                        pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
            new = ids[0, enc["input_ids"].shape[1]:]
            out.append(normalize_story(self.tokenizer.decode(new, skip_special_tokens=True)))
        return out


# --------------------------------------------------------------------------- OpenAI-compatible API


class OpenAIStoryGenerator:
    """An OpenAI-compatible chat API; failures after retries become the sequence's error."""

    backend = "openai"
    needs_images = True

    def __init__(self, model: str | None = None, *, prompt: str = STORY_PROMPT, base_url: str | None = None,
                 max_tokens: int | str = 200, timeout: float | str = 60.0, max_retries: int | str = 5,
                 backoff: float | str = 1.0) -> None:
        from connote.models.openai_api import ChatClient

        self.client = ChatClient(model or "gpt-4o", base_url=base_url, timeout=float(timeout),
                                 max_retries=int(max_retries), backoff=float(backoff))
        self.prompt, self.max_tokens = prompt, int(max_tokens)

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> OpenAIStoryGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.client.model, "base_url": self.client.base_url,
                "prompt_version": STORY_PROMPT_VERSION, "max_tokens": self.max_tokens,
                "prompt_sha": hashlib.sha256(self.prompt.encode()).hexdigest()[:12], "temperature": 0}

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]:
        from connote.models.openai_api import ApiError, image_data_url

        out = []
        for s in sequences:
            if not s.images:
                raise ItemError(f"sequence {s.id}: no images")
            content = [{"type": "image_url", "image_url": {"url": image_data_url(im)}} for im in s.images]
            content.append({"type": "text", "text": self.prompt})
            try:
                resp = self.client.chat([{"role": "user", "content": content}], max_tokens=self.max_tokens,
                                        temperature=0)
                text = resp["choices"][0]["message"]["content"] or ""
            except (ApiError, KeyError, IndexError, TypeError) as exc:
                raise ItemError(f"sequence {s.id}: API error: {exc}") from exc
            out.append(normalize_story(text))
        return out


# --------------------------------------------------------------------------- seq2seq


class Seq2SeqStoryGenerator:
    """The paper's GRU baseline over precomputed photo features."""

    backend = "seq2seq"
    needs_images = False

    def __init__(self, weights: str | None = None, *, features: str | None = None, decode: str = "greedy",
                 beam_size: int | str = 10, grounding: str | None = None, top_k: int | str = 5) -> None:
        from connote.vist.seq2seq import DECODERS, StoryModel, load_features

        if not weights or not features:
            raise ValueError("seq2seq needs a model folder and features: seq2seq:MODEL_DIR?features=F.npz")
        if decode not in DECODERS:
            raise ValueError(f"unknown decode {decode!r}; valid: {', '.join(DECODERS)}")
        self.weights, self.features_path, self.decode, self.beam_size = weights, features, decode, int(beam_size)
        self.model = StoryModel.load(weights)
        self.features = load_features(features)
        self.grounding: dict[str, list[str]] | None = None
        self.grounding_path = grounding
        self.grounder: Any = None
        if grounding == "objects":  # a grounding model: the embedded classifier's top labels per photo
            from connote.models.embedded import EmbeddedEncoder

            self.grounder = EmbeddedEncoder(top_k=int(top_k))
            self.needs_images = True
        elif grounding:
            from connote.vist.data import read_official

            vf = read_official(grounding)
            self.grounding = {p: [d.text for d in ds] for p, ds in vf.descriptions.items()}
        elif decode == "greedy-dups-grounded":
            raise ValueError("greedy-dups-grounded needs grounding=DII_FILE (descriptions of the same photos)")

    @classmethod
    def from_spec(cls, weights: str | None = None, **options: Any) -> Seq2SeqStoryGenerator:
        return cls(weights, **options)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, **_hf_identity(self.weights, None, None), "decode": self.decode,
                "beam_size": self.beam_size, "features": str(Path(self.features_path).resolve()),
                "grounding": self.grounding_path}

    def generate_stories(self, sequences: Sequence[SequenceInput]) -> list[str]:
        from connote.vist.seq2seq import grounding_vocabulary, sequence_features

        out = []
        for s in sequences:
            feats = sequence_features(s.photo_ids, self.features)
            licensed = grounding_vocabulary(s.photo_ids, self.grounding) if self.grounding is not None else None
            if self.grounder is not None:
                if not s.images:
                    raise ItemError(f"sequence {s.id}: grounding=objects needs the photos")
                licensed = {w.lower() for labels in self.grounder.top_labels(s.images)
                            for label, _ in labels for w in label.replace(",", " ").split()}
            out.append(self.model.generate(feats, method=self.decode, beam_size=self.beam_size, grounded=licensed))
        return out


# --------------------------------------------------------------------------- registry and the run


STORY_GENERATORS: Registry[Any] = Registry("story generator")
STORY_GENERATORS.register("retrieval", "connote.vist.generators:retrieval_from_spec",
                          help="Offline default: nearest training story in the embedded encoders' space.")
STORY_GENERATORS.register("hf-vlm", "connote.vist.generators:HfVlmStoryGenerator.from_spec",
                          help="Hugging Face multi-image chat VLM (AutoModelForImageTextToText).")
STORY_GENERATORS.register("caption-llm", "connote.vist.generators:CaptionLlmStoryGenerator.from_spec",
                          help="Captioner per photo, then a causal LM writes the story (option llm=...).")
STORY_GENERATORS.register("openai", "connote.vist.generators:OpenAIStoryGenerator.from_spec",
                          help="OpenAI-compatible chat API; key/base URL from the environment.")
STORY_GENERATORS.register("seq2seq", "connote.vist.generators:Seq2SeqStoryGenerator.from_spec",
                          help="The paper's GRU baseline (connote story train), option features=F.npz.")


def retrieval_from_spec(weights: str | None = None, *, train: str | None = None, index_by: str = "text",
                        images: str | None = None, embedder: Any = None, cache: str | None = None,
                        **options: Any) -> RetrievalStoryGenerator:
    """``retrieval?train=SIS.json[&index_by=image&images=DIR][&cache=INDEX.npz]``.

    The embedder defaults to the embedded one (EfficientNet-Lite0 + MiniLM). The index is cached in
    ``cache`` (a folder; default ``$CONNOTE_CACHE/vist-retrieval`` or ``~/.cache/connote/vist-retrieval``;
    ``cache=none`` turns it off).
    """
    train = train or weights
    if not train:
        raise ValueError("retrieval needs training stories: retrieval?train=TRAIN.story-in-sequence.json")
    from connote.vist.data import read_official

    vf = read_official(train)
    stories = [(s.photo_ids, [sl.text for sl in s.storylets]) for s in vf.stories if s.storylets]
    if embedder is None:
        from connote.models.embedded import EmbeddedEncoder

        embedder = EmbeddedEncoder(**options)
    loader = None
    if index_by == "image":
        if not images:
            raise ValueError("index_by=image needs images=DIR with the training photos")
        from connote.data.images import load_image

        def loader(pid: str) -> Image.Image:
            return load_image(find_image(images, pid))

    if cache is None:
        import os

        cache = str(Path(os.environ.get("CONNOTE_CACHE") or Path.home() / ".cache" / "connote") / "vist-retrieval")
    elif cache.lower() in ("none", "off", ""):
        cache = None
    return RetrievalStoryGenerator(embedder, stories, index_by=index_by, train_images=loader, cache=cache)


def load_generator(spec: str, **overrides: Any) -> Any:
    """Build a story generator from ``backend[:weights][?k=v]``."""
    from connote.models.registry import load_model

    return load_model(spec, STORY_GENERATORS, **overrides)


def load_sequences(path: str | Path) -> list[SequenceInput]:
    """Photo sequences to generate for: a challenge template/submission or an official SIS/DIS file."""
    from connote.vist.data import load_json, parse_submission, read_official

    obj, _ = load_json(path)
    seen: dict[tuple[str, ...], SequenceInput] = {}
    if isinstance(obj, dict) and "output_stories" in obj:
        for e in parse_submission(obj, path).entries:
            seen.setdefault(e.key, SequenceInput(e.album_id, e.key))
    else:
        vf = read_official(path)
        if not vf.stories:
            raise InputError("no photo sequences (stories) in this file", path=path)
        for st in vf.stories:
            seen.setdefault(st.photo_ids, SequenceInput(st.album_id, st.photo_ids))
    return list(seen.values())


@dataclass
class GenerationSummary:
    n_sequences: int
    n_generated_now: int
    n_done_before: int
    n_errors: int
    n_empty: int
    fingerprint: str
    stories_path: str
    submission_path: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_generation(generator: Any, sequences: Sequence[SequenceInput], out_dir: str | Path, *,
                   image_dir: str | Path | None = None, batch_size: int = 8, limit: int | None = None,
                   team_name: str = "connote", extra: dict[str, Any] | None = None,
                   meta: dict[str, Any] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> GenerationSummary:
    """Generate a story for every sequence, resumably, then write ``stories.jsonl`` and ``submission.json``.

    The store fingerprint hashes the generator's ``describe()`` and ``extra`` (settings that change a
    story); ``meta`` (e.g. the input file) is only written to ``run.json``.
    """
    from connote.runs import RunStore, run_metadata, write_json
    from connote.vist.data import submission_dict

    out = Path(out_dir)
    description = {"task": "vist-story", "generator": generator.describe(), **(extra or {})}
    seqs = list(sequences)[:limit] if limit else list(sequences)
    with RunStore(out) as store:
        fp = store.register(description)
        done = store.done_ids(fp)
        pending = [s for s in seqs if s.id not in done]
        n_before = len(seqs) - len(pending)
        for start in range(0, len(pending), batch_size):
            batch = pending[start:start + batch_size]
            rows: list[dict[str, Any]] = []
            ready: list[SequenceInput] = []
            for s in batch:
                try:
                    if getattr(generator, "needs_images", True):
                        if image_dir is None:
                            raise ItemError("this generator needs photos: pass an image folder")
                        s = SequenceInput(s.album_id, s.photo_ids, load_sequence_images(image_dir, s.photo_ids))
                    ready.append(s)
                except ItemError as exc:
                    rows.append(_row(s, "", str(exc)))
            if ready:
                try:
                    texts = generator.generate_stories(ready)
                    rows.extend(_row(s, t, None) for s, t in zip(ready, texts, strict=True))
                except Exception:  # noqa: BLE001 - find the failing sequence(s) one by one, record each error
                    for s in ready:
                        try:
                            rows.append(_row(s, generator.generate_stories([s])[0], None))
                        except ItemError as exc:
                            rows.append(_row(s, "", str(exc)))
                        except Exception as exc:  # noqa: BLE001 - recorded with the sequence, retried on rerun
                            rows.append(_row(s, "", f"{type(exc).__name__}: {exc}"))
            store.put(fp, rows)
            if progress:
                progress(n_before + start + len(batch), len(seqs))
        results = store.rows(fp)
    records = [results.get(s.id) or _row(s, "", "not generated") for s in seqs]
    stories_path, submission_path = out / "stories.jsonl", out / "submission.json"
    tmp = stories_path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    tmp.replace(stories_path)
    sub = submission_dict(((r["album_id"], r["photo_sequence"], r["story"]) for r in records), team_name=team_name,
                          description=f"connote story generate, {generator.describe().get('backend')}")
    for entry, r in zip(sub["output_stories"], records, strict=True):
        if r.get("error"):
            entry["error"] = r["error"]
    write_json(submission_path, sub)
    write_json(out / "run.json", {**run_metadata({**description, **(meta or {})}), "fingerprint": fp})
    n_err = sum(1 for r in records if r.get("error"))
    return GenerationSummary(n_sequences=len(seqs), n_generated_now=len(seqs) - n_before, n_done_before=n_before,
                             n_errors=n_err, n_empty=sum(1 for r in records if not r.get("error") and not r["story"]),
                             fingerprint=fp, stories_path=str(stories_path), submission_path=str(submission_path))


def _row(s: SequenceInput, story: str, error: str | None) -> dict[str, Any]:
    return {"item_id": s.id, "album_id": s.album_id, "photo_sequence": list(s.photo_ids), "story": story,
            "error": error}


def generator_names() -> Iterable[tuple[str, str]]:
    return STORY_GENERATORS.items()
