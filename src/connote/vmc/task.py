"""Video metaphor captioning (VMC): one caption per video with any ``generate`` backend.

Frames are sampled with PyAV as the backend asks (``frame_spec``; default the paper's two frames from
each third of the video) and sent in one request with the metaphor prompt (GIT-LLaVA: the instruction
it was trained with). A video's row — ``{item_id, caption, frames, error}`` — is reused only when the
run fingerprint (model, sampling, prompt, length limit) and the video file's bytes are unchanged. The run
folder gets ``captions.jsonl`` (the public answer format: ``question_id, video_id, text``), ``results.json``
(``run.json`` in folders written before; still read) and ``store.sqlite``. Scoring is ``connote vmc score``
(:mod:`connote.vmc.scoring`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from connote.core.errors import InputError, ItemError
from connote.metrics.options import opt
from connote.models.protocols import GenerationRequest
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl
from connote.tasks.api import Sample, Task

VIDEO_PROMPT = ("Describe the metaphor in this video in one sentence of the form "
                "'<primary concept> is as <property> as <secondary concept>'.")


@dataclass(frozen=True)
class CaptionOptions:
    """The options of ``vmc-captioning`` (``connote vmc caption``'s flags; ``connote run --set``)."""

    strategy: str | None = opt(None, "frame sampling (default: the model's)")
    k: int | None = opt(None, "frames (uniform) or clips (clips)", ge=1)
    prompt: str | None = opt(None, "override the prompt")
    batch_size: int = opt(16, "videos per generate call", ge=1)
    max_new_tokens: int = opt(48, "caption length limit in tokens", ge=1)
    limit: int | None = opt(None, "only the first N videos", ge=1)
    samples: int = opt(1, "captions per video (several need temperature > 0)", ge=1)
    temperature: float = opt(0.0, "sampling temperature (0: greedy)", ge=0)
    frames: Literal["fixed", "random"] | None = opt(None, "fixed | random (default: the model's, else fixed)")
    frame_seed: int | None = opt(None, "seed of frames=random")


def write_sample(folder: Path) -> Sample:
    """The sample VMC set made from the packaged photos, with the nearest-caption generator over its training
    clips."""
    from connote.vmc.sample import sample_caption_spec, write_sample_vmc

    paths = write_sample_vmc(folder)
    return Sample(paths["test_videos"], "sample VMC set",
                  f"test clips {paths['test_videos']}; references {paths['captions']}",
                  model=sample_caption_spec(paths))


class MetaphorCaptionTask(Task):
    """A metaphor caption per video (VMC; scored by ``connote vmc score``)."""

    name = "vmc-captioning"
    #: 2: several samples per video at a temperature (the public evaluation's setting) are an option
    version = 2
    capability = "generate"
    reads = "videos: a folder, a question JSONL or a CSV manifest (video id, path)"
    title = "Video metaphor captioning: one '<primary> is as <property> as <secondary>' caption per video."
    label = "videos"
    report_kind = "vmc-captioning"  # connote.vmc.report: Table 1 from the stored scores
    inputs = ("images", "video")  # frames; they have no photo ids
    invariance_field = "caption"
    options = CaptionOptions
    sample_data = staticmethod(write_sample)

    def print_result(self, result: Any, *, as_json: bool = False) -> int:
        """One JSON line (the summary) whether or not ``as_json``; exit status 1 when a video failed."""
        import json

        summary = self.summary(result)
        print(json.dumps(summary))
        return 1 if summary["errors"] else 0

    def __init__(self, videos: str | Path, *, strategy: str | None = None, k: int | None = None,
                 per_clip: int | None = None, prompt: str | None = None, batch_size: int = 16,
                 max_new_tokens: int = 48, limit: int | None = None, progress: bool = True,
                 samples: int = 1, temperature: float = 0.0, frames: str | None = None,
                 frame_seed: int | None = None) -> None:
        """``samples`` > 1 draws that many captions per video at ``temperature`` (the public VMC evaluation
        scores 3 per video at 0.2 and averages the scores over samples); the default is one greedy caption."""
        if samples < 1:
            raise InputError(f"--samples must be at least 1, got {samples}")
        if temperature < 0 or (samples > 1 and temperature == 0):
            raise InputError("several samples need a temperature above 0 (greedy decoding repeats itself)"
                             if temperature == 0 else f"--temperature must be >= 0, got {temperature}")
        self.samples, self.temperature = int(samples), float(temperature)
        # frames: "fixed" positions or "random" (the public VMC encoder's draw, seeded, one draw per run);
        # default: what the model asks for (GIT-LLaVA models trained on random frames), else fixed
        self.frames, self.frame_seed = frames, frame_seed
        from connote.vmc.data import read_video_list

        self.source = videos
        items = read_video_list(videos)
        if limit is not None:
            items = items[:limit]
        if not items:
            raise InputError("no videos to caption", path=videos)
        self.videos = items
        self.strategy, self.k, self.per_clip, self.prompt = strategy, k, per_clip, prompt
        self.batch_size, self.max_new_tokens, self.progress = int(batch_size), int(max_new_tokens), progress

    def bind(self, model: Any) -> None:
        """The capability check, then the sampling and prompt the model asks for (the command line overrides them)."""
        from connote.media.frames import STRATEGIES
        from connote.models.registry import needs_of

        super().bind(model)
        needs = needs_of(model)  # from the registration and the spec: nothing is built here
        m_strategy, m_k, m_per_clip = needs.frames
        self.strategy = self.strategy or m_strategy
        if self.strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {self.strategy!r}; valid: {', '.join(STRATEGIES)}")
        self.k = self.k or m_k
        self.per_clip = self.per_clip or m_per_clip
        self.prompt = self.prompt or needs.prompt or VIDEO_PROMPT
        m_frames, m_seed = needs.frame_sampling
        self.frames = self.frames or m_frames
        if self.frames not in ("fixed", "random"):
            raise InputError(f"unknown --frames {self.frames!r}; valid: fixed, random")
        self.frame_seed = m_seed if self.frame_seed is None else int(self.frame_seed)

    def settings(self) -> dict[str, Any]:
        random = {"frames": "random", "frame_seed": self.frame_seed} if self.frames == "random" else {}
        return {"strategy": self.strategy, "k": self.k, "per_clip": self.per_clip, "prompt": self.prompt,
                "max_new_tokens": self.max_new_tokens, "samples": self.samples, "temperature": self.temperature,
                **random}

    def config(self) -> dict[str, Any]:
        return {**self.settings(), "videos": str(self.source), "batch_size": self.batch_size}

    def work_items(self) -> list[WorkItem]:
        from connote.core.files import file_sha256

        items = []
        for vid, path in self.videos:
            try:
                ident: Any = file_sha256(path)
            except (OSError, TypeError) as exc:
                ident = f"unreadable: {type(exc).__name__}"
            items.append(WorkItem(vid, content_key({"video": ident}), path))
        return items

    def prepare(self, batch: list[WorkItem]) -> list[Any]:
        """Each video's frames decoded and sampled (on a few threads) while the model captions the batch before:
        the sampled frames, or the ItemError of a video that could not be read."""
        from connote.media.frames import read_frames
        from connote.media.images import load_each

        return load_each(lambda w: read_frames(w.payload, self.strategy, k=self.k, per_clip=self.per_clip,
                                               sampling=self.frames or "fixed", seed=self.frame_seed or 0), batch)

    def compute(self, model: Any, batch: list[WorkItem], ready: Any = None) -> list[dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        sampled_items: list[tuple[WorkItem, list[int]]] = []
        requests: list[GenerationRequest] = []
        for w, sampled in zip(batch, ready if ready is not None else self.prepare(batch), strict=True):
            if isinstance(sampled, ItemError):
                rows[w.item_id] = {"caption": None, "frames": None, "error": str(sampled)}
                continue
            for s in range(self.samples):  # sample s of every video has seed s: runs are repeatable
                requests.append(GenerationRequest(images=sampled.frames, prompt=self.prompt,
                                                  max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                                  seed=s if self.temperature > 0 else None))
            sampled_items.append((w, sampled.indices))
        if requests:
            texts = list(model.generate(requests))
            for j, (w, idx) in enumerate(sampled_items):
                mine = texts[j * self.samples:(j + 1) * self.samples]
                failed = next((t for t in mine if isinstance(t, BaseException)), None)
                if failed is not None:
                    rows[w.item_id] = {"caption": None, "frames": idx,
                                       "error": f"generation failed: {type(failed).__name__}: {failed}"}
                else:
                    rows[w.item_id] = {"caption": str(mine[0]), "frames": idx, "error": None}
                    if self.samples > 1:
                        rows[w.item_id]["samples"] = [str(t) for t in mine]
        return [rows[w.item_id] for w in batch]

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        return {"caption": None, "frames": None, "error": message}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        errors = {r["item_id"]: r["error"] for r in rows if r.get("error")}
        return {"videos": len(rows), "captioned": len(rows) - len(errors), "errors": errors}

    @classmethod
    def score(cls, out: str | Path, references: str | Path, *, split: str | Path | None = None,
              metrics: Sequence[str] = ("bleu", "rouge_l", "cider"), n_boot: int = 1000, seed: int = 0,
              samples: str = "pooled", text: str = "first-line") -> Any:
        """Score the run's captions against the VMC caption table ``references`` (optionally one split) as
        Table 1 with the text metrics (:func:`connote.vmc.scoring.score_runs`, the defaults of ``connote vmc
        score``) and store them in ``out/scores/`` as that command does; returns (scores, stored path, note)."""
        from connote.vmc.scoring import score_runs, store_scored

        (scores,) = score_runs([str(out)], references, split=split, metrics=metrics, n_boot=n_boot, seed=seed,
                               samples=samples, text=text)
        encoders = {"bertscore_model": None, "bertscore_layer": None, "concept_encoder": None, "concept_split": None}
        path, note = store_scored(scores, references, split=split, metrics=list(metrics), n_boot=n_boot, seed=seed,
                                  samples=samples, text=text, encoders=encoders)
        return scores, path, note

    def summary(self, result: Any) -> dict[str, Any]:
        """What ``connote vmc caption`` prints."""
        outcome = result.outcome
        return {"run": str(result.out), "fingerprint": outcome.fingerprint, "videos": outcome.total,
                "captioned": outcome.total - outcome.failed, "errors": outcome.failed,
                "resumed": outcome.resumed, "computed": outcome.computed}

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_jsonl(out / "captions.jsonl", ({"question_id": r["item_id"], "video_id": r["item_id"],
                                              "text": r["caption"], **({"samples": r["samples"]}
                                                                       if "samples" in r else {})}
                                             for r in rows if r.get("error") is None))
        write_json(out / self.results_file, results)


def caption_videos(videos: str | Path, model: str | Any, out: str | Path, *, strategy: str | None = None,
                   k: int | None = None, per_clip: int | None = None, prompt: str | None = None,
                   batch_size: int = 16, max_new_tokens: int = 48, limit: int | None = None,
                   progress: bool = True, samples: int = 1, temperature: float = 0.0, frames: str | None = None,
                   frame_seed: int | None = None) -> dict[str, Any]:
    """Caption every listed video with ``model`` (a spec or a generator); returns a summary (a compatibility
    name for library callers: the command is :func:`connote.tasks.api.run_task` with a :class:`MetaphorCaptionTask`)."""
    from connote.tasks.api import run_task

    task = MetaphorCaptionTask(videos, strategy=strategy, k=k, per_clip=per_clip, prompt=prompt,
                               batch_size=batch_size, max_new_tokens=max_new_tokens, limit=limit, progress=progress,
                               samples=samples, temperature=temperature, frames=frames, frame_seed=frame_seed)
    return task.summary(run_task(task, model, out))
