"""Resumable video captioning into a run folder (``connote metaphor caption``).

Per video the run store keeps ``{item_id, caption, frames, error}`` under a fingerprint of the
generator's ``describe()`` plus the frame sampling and prompt, so reruns skip finished videos and a
different model or setting never reuses another's captions. After each run the folder holds
``captions.jsonl`` (the public answer format: ``question_id, video_id, text``), ``run.json``
(settings, versions) and ``store.sqlite``. Unreadable videos are recorded with their error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from connote.errors import InputError, ItemError
from connote.models.protocols import GenerationRequest


def caption_videos(videos: str | Path, model: str | Any, out: str | Path, *, strategy: str | None = None,
                   k: int | None = None, per_clip: int | None = None, prompt: str | None = None,
                   batch_size: int = 4, max_new_tokens: int = 48, limit: int | None = None,
                   log: Callable[[str], None] = print) -> dict[str, Any]:
    """Caption every listed video with ``model`` (a spec or a generator); returns a summary."""
    from connote.metaphor.data import read_video_list, write_jsonl
    from connote.metaphor.generators import default_prompt, load_generator
    from connote.runs import RunStore, run_metadata, write_json
    from connote.video.frames import STRATEGIES, read_frames

    items = read_video_list(videos)
    if limit is not None:
        items = items[:limit]
    if not items:
        raise InputError("no videos to caption", path=videos)
    gen = load_generator(model) if isinstance(model, str) else model
    m_strategy, m_k, m_per_clip = getattr(gen, "frame_spec", ("segments", 6, 6))
    strategy = strategy or m_strategy
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    k = k or m_k
    per_clip = per_clip or m_per_clip
    prompt = prompt or default_prompt(gen)
    settings = {"generator": gen.describe(), "strategy": strategy, "k": k, "per_clip": per_clip,
                "prompt": prompt, "max_new_tokens": max_new_tokens, "task": "vmc-caption/1"}
    out = Path(out)
    store = RunStore(out)
    fp = store.register(settings)
    done = store.done_ids(fp)
    todo = [(vid, path) for vid, path in items if vid not in done]
    log(f"{len(items)} video(s), {len(items) - len(todo)} already captioned, {len(todo)} to go")
    for i in range(0, len(todo), batch_size):
        rows: list[dict[str, Any]] = []
        reqs: list[GenerationRequest] = []
        ok: list[tuple[str, list[int]]] = []
        for vid, path in todo[i:i + batch_size]:
            try:
                sampled = read_frames(path, strategy, k=k, per_clip=per_clip)
            except ItemError as exc:
                rows.append({"item_id": vid, "caption": None, "frames": None, "error": str(exc)})
                continue
            reqs.append(GenerationRequest(images=sampled.frames, prompt=prompt, max_new_tokens=max_new_tokens))
            ok.append((vid, sampled.indices))
        if reqs:
            rows += _generate_rows(gen, reqs, ok)
        store.put(fp, rows)
        log(f"captioned {min(i + batch_size, len(todo))}/{len(todo)}")
    results = store.rows(fp)
    order = [vid for vid, _ in items]
    write_jsonl(out / "captions.jsonl", [{"question_id": vid, "video_id": vid, "text": results[vid]["caption"]}
                                         for vid in order if vid in results and results[vid].get("error") is None])
    errors = {vid: results[vid]["error"] for vid in order if vid in results and results[vid].get("error")}
    write_json(out / "run.json", {**run_metadata(settings), "fingerprint": fp, "videos": len(order),
                                  "errors": errors})
    store.close()
    return {"run": str(out), "fingerprint": fp, "videos": len(order), "captioned": len(order) - len(errors),
            "errors": len(errors)}


def _generate_rows(gen: Any, reqs: list[GenerationRequest], ok: list[tuple[str, list[int]]]) -> list[dict[str, Any]]:
    """Generate a batch; when it fails, retry one by one and record the failing videos' errors."""
    try:
        texts = gen.generate(reqs)
        return [{"item_id": vid, "caption": text, "frames": idx, "error": None} for (vid, idx), text in zip(ok, texts)]
    except Exception as exc:  # a model/API failure must not lose the rest of the run
        if len(reqs) == 1:
            vid, idx = ok[0]
            return [{"item_id": vid, "caption": None, "frames": idx,
                     "error": f"generation failed: {type(exc).__name__}: {exc}"}]
    rows: list[dict[str, Any]] = []
    for req, item in zip(reqs, ok):
        rows += _generate_rows(gen, [req], [item])
    return rows


def read_run_captions(run: str | Path) -> dict[str, str | None]:
    """``video_id -> caption`` (None for errored videos) of the newest fingerprint in a run folder."""
    import json

    run = Path(run)
    meta_path = run / "run.json"
    if not meta_path.exists():
        raise InputError("not a caption run folder (run.json missing)", path=run)
    meta = json.loads(meta_path.read_text())
    from connote.runs import RunStore

    with RunStore(run) as store:
        rows = store.rows(meta["fingerprint"])
    return {vid: (row.get("caption") if not row.get("error") else None) for vid, row in rows.items()}
