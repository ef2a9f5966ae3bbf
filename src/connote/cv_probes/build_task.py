"""The CV-Probes probe-set builder's steps, each through the one runner (``connote cv-probes build``).

verb list -> templated SG captions (``connote.cv_probes.build``) -> **reword** (a generation backend; the
paper's constraints checked on the reply) -> **score** (a grammaticality scorer) -> best of three per verb ->
**index** (the pool's images and the SG images through an image-text encoder; an on-disk memmap of unit
vectors) -> **retrieve** (top-k pool images per PG caption, exact chunked search; the SG images and
near-duplicates excluded, each with its reason) -> ``candidates.csv`` (a probe manifest) and the validation
study (``collect make probes-validation``); with ``validated=IMPORT.csv`` (that study's import) also
``final.csv``, the candidates whose triplets passed.

Each step's rows are stored under the step's fingerprint (its model's ``describe()`` and settings) and each
item's content key, so a rerun - after a kill, or with one more verb - computes only what is missing or
changed, and a second rerun calls no model. Bad items (a verb without roles, an unreadable pool image, a reply
with nothing in it, a PG caption with an empty pool) are recorded with their problem and the run goes on.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError, ItemError
from connote.core.files import file_sha256, resolved
from connote.cv_probes.build import (
    MANIFEST_COLUMNS,
    PoolImage,
    VerbEntry,
    check_caption,
    manifest_rows,
    read_pool,
    read_verb_list,
    reply_candidates,
    template_captions,
    write_manifest,
)
from connote.media.images import is_url, load_image
from connote.runs.runner import WorkItem, error_message, run_items
from connote.runs.store import content_key, write_json

VERSION = 1

#: The rewording request. The paper used ChatGPT 3.5 "to make the captions more fluent" and does not give its
#: prompt; this one states the paper's constraints.
REWORD_PROMPT = ("Rewrite this image caption so that it reads fluently. Keep the verb \"{verb}\", keep it in the "
                 "simple present tense, and use only indefinite articles (a, an), never \"the\". Answer with the "
                 "caption only, one sentence.\nCaption: {caption}")


@dataclass
class BuildSettings:
    """Everything that makes the builder's numbers (enters the steps' fingerprints)."""

    rewriter: str = "none"
    prompt: str = REWORD_PROMPT
    on_violation: str = "template"  # template: keep the template | next: the reply's next line, else template
    scorer: str = "none"
    candidates: int = 3
    encoder: str = "embedded"
    top_k: int = 3
    duplicate_threshold: float = 0.95
    allow_network: bool = False
    batch_size: int = 8
    chunk: int = 65536


def _rows_by_id(outcome: Any) -> dict[str, dict[str, Any]]:
    return {r["item_id"]: r for r in outcome.rows}


def _vec_encode(v: Any) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode()


def _vec_decode(s: str) -> Any:
    import numpy as np

    return np.frombuffer(base64.b64decode(s), dtype="<f4")


def _image_key(ref: str) -> str:
    if is_url(ref):
        return content_key({"url": ref})
    try:
        return content_key({"path": ref, "sha256": file_sha256(ref)})
    except OSError as exc:  # the load fails and is recorded; the row is never reused
        return content_key({"path": ref, "unreadable": type(exc).__name__})


def _std(xs: list[float]) -> float | None:
    return statistics.stdev(xs) if len(xs) > 1 else (0.0 if xs else None)


def _stats(xs: list[float]) -> dict[str, Any]:
    return {"n": len(xs), "mean": statistics.fmean(xs) if xs else None, "std": _std(xs),
            "min": min(xs) if xs else None, "max": max(xs) if xs else None}


# ---- the steps ---------------------------------------------------------------------------------

def reword_step(out: Path, entries: list[VerbEntry], settings: BuildSettings, *, progress: bool,
                load: Callable[[str], Any]) -> dict[str, dict[str, Any]]:
    """One row per template caption: the rewording kept, or the template with the violations recorded."""
    items = []
    for e in entries:
        for k, text in enumerate(template_captions(e, settings.candidates), start=1):
            items.append(WorkItem(f"{e.entry_id}#c{k}", content_key({"template": text, "verb": e.verb}),
                                  {"template": text, "verb": e.verb}))
    if settings.rewriter == "none" or not items:
        return {it.item_id: {"template": it.payload["template"], "caption": it.payload["template"],
                             "source": "template", "reply": None, "violations": [], "error": None} for it in items}
    model = load(settings.rewriter)
    from connote.models.protocols import GenerationRequest

    def compute(batch: list[WorkItem]) -> list[dict[str, Any]]:
        requests = [GenerationRequest(images=[], prompt=settings.prompt.format(caption=it.payload["template"],
                                                                               verb=it.payload["verb"]),
                                      max_new_tokens=64) for it in batch]
        replies = model.generate(requests)
        return [_reworded(it, reply, settings.on_violation) for it, reply in zip(batch, replies)]

    def on_error(item: WorkItem, message: str) -> dict[str, Any]:
        return {"template": item.payload["template"], "caption": item.payload["template"], "source": "template",
                "reply": None, "violations": [], "error": f"{item.item_id}: {message}"}

    description = {"task": "cv-probes-build/reword", "version": VERSION, "model": model.describe(),
                   "prompt": settings.prompt, "on_violation": settings.on_violation}
    outcome = run_items(out, description, items, compute, on_error=on_error, batch_size=settings.batch_size,
                        progress=progress, label="reword")
    return _rows_by_id(outcome)


def _reworded(item: WorkItem, reply: Any, policy: str) -> dict[str, Any]:
    template, verb = item.payload["template"], item.payload["verb"]
    if isinstance(reply, Exception):
        return {"template": template, "caption": template, "source": "template", "reply": None, "violations": [],
                "error": f"{item.item_id}: {error_message(reply)}"}
    lines = reply_candidates(str(reply or ""))
    violations: list[dict[str, Any]] = []
    if not lines:
        violations.append({"reply": str(reply or ""), "problems": ["the backend returned nothing"]})
    for line in lines if policy == "next" else lines[:1]:
        problems = check_caption(line, verb)
        if not problems:
            return {"template": template, "caption": line, "source": "reworded", "reply": reply,
                    "violations": violations}
        violations.append({"reply": line, "problems": problems})
    return {"template": template, "caption": template, "source": "template", "reply": reply,
            "violations": violations}


def score_step(out: Path, captions: dict[str, dict[str, Any]], settings: BuildSettings, *, progress: bool,
               load: Callable[[str], Any]) -> dict[str, dict[str, Any]]:
    """One grammaticality score per candidate caption (none: no scores)."""
    items = [WorkItem(cid, content_key({"text": row["caption"]}), row["caption"]) for cid, row in captions.items()]
    if settings.scorer == "none" or not items:
        return {it.item_id: {"score": None, "error": None} for it in items}
    scorer = load(settings.scorer)

    def compute(batch: list[WorkItem]) -> list[dict[str, Any]]:
        return [{"text": it.payload, "score": s} for it, s in zip(batch, scorer.score([it.payload for it in batch]))]

    outcome = run_items(out, {"task": "cv-probes-build/score", "version": VERSION, "scorer": scorer.describe()},
                        items, compute, on_error=lambda it, m: {"text": it.payload, "score": None,
                                                                "error": f"{it.item_id}: {m}"},
                        batch_size=settings.batch_size, progress=progress, label="grammaticality")
    return _rows_by_id(outcome)


def index_step(out: Path, refs: list[PoolImage], settings: BuildSettings, encoder: Any, *,
               progress: bool) -> dict[str, dict[str, Any]]:
    """One unit vector per image (pool and SG images); an image that cannot be read is recorded."""
    items = [WorkItem(p.ref, _image_key(p.ref), p) for p in refs]
    if not items:
        return {}

    def compute(batch: list[WorkItem]) -> list[dict[str, Any]]:
        import numpy as np

        rows: list[dict[str, Any] | None] = [None] * len(batch)
        good, images = [], []
        for i, it in enumerate(batch):
            try:
                images.append(load_image(it.payload.ref, allow_network=settings.allow_network))
                good.append(i)
            except ItemError as exc:
                rows[i] = {"vector": None, "error": f"{it.payload.where}: {exc}"}
        if images:
            vecs = np.asarray(encoder.embed_images(images), dtype=np.float32)
            vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True).clip(1e-12)
            for i, v in zip(good, vecs):
                rows[i] = {"vector": _vec_encode(v), "dim": int(v.shape[0])}
        return rows  # type: ignore[return-value]

    outcome = run_items(out, {"task": "cv-probes-build/index", "version": VERSION, "encoder": encoder.describe()},
                        items, compute, on_error=lambda it, m: {"vector": None, "error": f"{it.payload.where}: {m}"},
                        batch_size=max(settings.batch_size, 16), progress=progress, label="index")
    return _rows_by_id(outcome)


def write_index(folder: Path, refs: list[str], rows: dict[str, dict[str, Any]]) -> tuple[Path, list[str]]:
    """The pool's unit vectors as an on-disk ``.npy`` memmap (``numpy.load(..., mmap_mode='r')``, no pickle),
    with the image of each row in ``images.json``; images that failed are left out."""
    import numpy as np

    kept = [r for r in refs if rows.get(r, {}).get("vector")]
    dim = rows[kept[0]]["dim"] if kept else 0
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "embeddings.npy"
    tmp = folder / "embeddings.npy.tmp"
    mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(len(kept), dim))
    for i, ref in enumerate(kept):
        mm[i] = _vec_decode(rows[ref]["vector"])
    mm.flush()
    del mm
    tmp.replace(path)
    write_json(folder / "images.json", kept)
    return path, kept


def chunked_top(index: Any, queries: Any, m: int, chunk: int) -> tuple[Any, Any]:
    """Exact top-``m`` inner products of each query against the rows of ``index`` (a memmap), reading
    ``chunk`` rows at a time; (scores, row indices), best first."""
    import numpy as np

    n = index.shape[0]
    m = min(m, n)
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, n, chunk):
        block = np.asarray(index[start:start + chunk], dtype=np.float32)
        s = queries @ block.T
        idx = np.broadcast_to(np.arange(start, start + block.shape[0]), s.shape)
        s_all, i_all = np.concatenate([best_s, s], 1), np.concatenate([best_i, idx], 1)
        if s_all.shape[1] > m:
            part = np.argpartition(-s_all, m - 1, axis=1)[:, :m]
            s_all, i_all = np.take_along_axis(s_all, part, 1), np.take_along_axis(i_all, part, 1)
        best_s, best_i = s_all, i_all
    order = np.argsort(-best_s, axis=1, kind="stable")
    return np.take_along_axis(best_s, order, 1), np.take_along_axis(best_i, order, 1)


def _pick(scores: Any, rows: Any, images: list[str], index: Any, sg: dict[str, Any], sg_all: dict[str, str],
          k: int, threshold: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Walk the ranked images: skip SG images and near-duplicates (of this verb's SG images or of a kept
    candidate), keep ``k``; returns (kept, excluded-with-reason)."""
    import numpy as np

    kept: list[dict[str, Any]] = []
    kept_vecs: list[Any] = []
    excluded: list[dict[str, Any]] = []
    for s, r in zip(scores, rows):
        if len(kept) >= k:
            break
        image, vec = images[int(r)], np.asarray(index[int(r)], dtype=np.float32)
        why = None
        if image in sg_all:
            why = ("sg-image", f"an SG image (verb {sg_all[image]})")
        else:
            for name, v in sg.items():
                cos = float(vec @ v)
                if cos >= threshold:
                    why = ("near-duplicate-sg", f"near-duplicate of SG image {Path(name).name} (cosine {cos:.3f})")
                    break
            for cand, v in zip(kept, kept_vecs) if why is None else ():
                cos = float(vec @ v)
                if cos >= threshold:
                    why = ("near-duplicate-candidate",
                           f"near-duplicate of kept candidate {Path(cand['image']).name} (cosine {cos:.3f})")
                    break
        if why is None:
            kept.append({"image": image, "score": float(s), "rank": len(kept) + 1})
            kept_vecs.append(vec)
        else:
            excluded.append({"image": image, "score": float(s), "kind": why[0], "reason": why[1]})
    return kept, excluded


def retrieve_step(out: Path, entries: list[VerbEntry], index_path: Path | None, images: list[str],
                  vectors: dict[str, dict[str, Any]], settings: BuildSettings, encoder: Any, *, progress: bool,
                  pool_problem: str | None) -> dict[str, dict[str, Any]]:
    """Top-k candidates per PG caption, with the excluded ones and why."""
    import numpy as np

    sg_all = {ref: e.verb for e in entries for ref in e.sg_images}
    index_id = hashlib.sha256(json.dumps([[r, vectors[r]["item_key"]] for r in images]).encode()).hexdigest()[:24]
    items = []
    for e in entries:
        sg_keys = sorted(vectors.get(r, {}).get("item_key") or r for r in e.sg_images)
        for j, caption in enumerate(e.pg_captions, start=1):
            key = content_key({"caption": caption, "index": index_id, "sg": sg_keys, "sg_all": sorted(sg_all)})
            items.append(WorkItem(f"{e.entry_id}#pg{j}", key, (e, caption),
                                  error=f"{e.entry_id}#pg{j}: {pool_problem}" if pool_problem else None))
    if not items:
        return {}
    index = np.load(index_path, mmap_mode="r", allow_pickle=False) if index_path is not None and images else None

    def compute(batch: list[WorkItem]) -> list[dict[str, Any]]:
        q = np.asarray(encoder.embed_texts([it.payload[1] for it in batch]), dtype=np.float32)
        q = q / np.linalg.norm(q, axis=1, keepdims=True).clip(1e-12)
        out_rows = []
        for qi, it in enumerate(batch):
            e = it.payload[0]
            sg = {r: _vec_decode(vectors[r]["vector"]) for r in e.sg_images if vectors.get(r, {}).get("vector")}
            m = settings.top_k * 4 + len(sg_all)
            while True:
                s, r = chunked_top(index, q[qi:qi + 1], m, settings.chunk)
                kept, excluded = _pick(s[0], r[0], images, index, sg, sg_all, settings.top_k,
                                       settings.duplicate_threshold)
                if len(kept) >= settings.top_k or m >= len(images):
                    break
                m *= 2
            out_rows.append({"caption": it.payload[1], "candidates": kept, "excluded": excluded})
        return out_rows

    def on_error(it: WorkItem, message: str) -> dict[str, Any]:
        return {"caption": it.payload[1], "candidates": [], "excluded": [], "error": message}

    description = {"task": "cv-probes-build/retrieve", "version": VERSION, "encoder": encoder.describe(),
                   "top_k": settings.top_k, "duplicate_threshold": settings.duplicate_threshold,
                   "search": "exact inner product, chunked over an on-disk memmap"}
    outcome = run_items(out, description, items, compute, on_error=on_error, batch_size=settings.batch_size,
                        progress=progress, label="retrieve")
    return _rows_by_id(outcome)


# ---- the build ---------------------------------------------------------------------------------

def _load_rewriter(spec: str) -> Any:
    from connote.models.probe_text import rewriter_from_spec

    return rewriter_from_spec(spec)


def _load_scorer(spec: str) -> Any:
    from connote.models.probe_text import scorer_from_spec

    return scorer_from_spec(spec)


def _load_encoder(spec: str) -> Any:
    from connote.models.embedders import embedder_from_spec

    return embedder_from_spec(spec)


def check_settings(settings: BuildSettings) -> None:
    """Refuse bad settings before anything loads (exit 2)."""
    if settings.on_violation not in ("template", "next"):
        raise InputError(f"--on-violation must be template or next, got {settings.on_violation!r}")
    if settings.candidates < 1 or settings.top_k < 1:
        raise InputError("--candidates and --top-k must be at least 1")
    if not 0 < settings.duplicate_threshold <= 1:
        raise InputError(f"--duplicate-threshold must be in (0, 1], got {settings.duplicate_threshold}")
    for name in ("{caption}", "{verb}"):
        if name not in settings.prompt:
            raise InputError(f"the rewording prompt must contain {name}")
    try:
        settings.prompt.format(caption="", verb="")
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(f"the rewording prompt has a slot other than {{caption}} and {{verb}}: {exc}") from None


def settings_from_options(prompt_file: Path | None, **options: Any) -> BuildSettings:
    """``cv-probes build``'s settings from its options (``prompt_file``: the rewording prompt's file, else
    connote's prompt), checked before anything loads (exit 2)."""
    text = REWORD_PROMPT
    if prompt_file is not None:
        from connote.core.jsonio import read_text

        text = read_text(prompt_file, what="prompt file")
    settings = BuildSettings(prompt=text, **options)
    check_settings(settings)
    return settings


def build(verbs: str | Path, pool: str | Path, out: str | Path, settings: BuildSettings | None = None, *,
          validated: str | Path | None = None, progress: bool = True, log: Callable[[str], None] | None = None,
          loaders: dict[str, Callable[[str], Any]] | None = None,
          make_study: Callable[[Path, Path, list[dict[str, Any]], Callable[[str], None]], str | None] | None = None,
          ) -> dict[str, Any]:
    """Run every step into ``out``; returns (and writes to ``summary.json``) the paper's statistics.

    ``make_study(out, manifest, rows, log)`` writes the validation study of the candidates (the CLI passes
    ``collect``'s, a layer above this one) and returns its folder."""
    settings = settings or BuildSettings()
    check_settings(settings)
    log = log or (lambda msg: print(msg, file=sys.stderr))
    loaders = {"rewriter": _load_rewriter, "scorer": _load_scorer, "encoder": _load_encoder, **(loaders or {})}
    out = Path(out)
    entries = read_verb_list(verbs)
    pool_images = read_pool(pool)
    if validated is not None and not Path(validated).is_file():
        raise InputError("the validation import is not a file (expected `connote collect import`'s CSV)",
                         path=validated)
    problems: list[str] = [e.error for e in entries if e.error]
    good = [e for e in entries if not e.error]
    for e in good:
        if not e.sg_images:
            problems.append(f"{verbs}:{e.line}: verb {e.verb!r}: no sg_images (the SG pairs and the SG-image "
                            "exclusion need them)")
        if not e.pg_captions:
            problems.append(f"{verbs}:{e.line}: verb {e.verb!r}: no pg_captions (nothing to retrieve for)")
    for msg in problems:
        log(f"recorded: {msg}")

    reworded = reword_step(out, good, settings, progress=progress, load=loaders["rewriter"])
    scores = score_step(out, reworded, settings, progress=progress, load=loaders["scorer"])
    selected: dict[str, dict[str, Any]] = {}
    for e in good:
        cands = [(cid, row) for cid, row in reworded.items() if cid.split("#")[0] == e.entry_id]
        scored = [(cid, row, scores.get(cid, {}).get("score")) for cid, row in cands]
        usable = [c for c in scored if c[2] is not None] if settings.scorer != "none" else scored
        if not usable:
            problems.append(f"{e.entry_id}: no candidate caption could be scored")
            continue
        best = max(usable, key=lambda c: (c[2] if c[2] is not None else 0.0, -int(c[0].rsplit("c", 1)[1])))
        selected[e.entry_id] = {"candidate": best[0], "caption": best[1]["caption"], "score": best[2],
                                "source": best[1]["source"]}

    encoder = loaders["encoder"](settings.encoder)
    sg_refs = [PoolImage(r, f"{verbs}:{e.line}") for e in good for r in e.sg_images]
    seen: set[str] = set()
    all_refs = []
    for p in sg_refs + pool_images:
        if p.ref not in seen:
            seen.add(p.ref)
            all_refs.append(p)
    vectors = index_step(out, all_refs, settings, encoder, progress=progress)
    # an SG image that is also in the pool stays in the index: retrieval names it and leaves it out
    index_path, index_images = write_index(out / "index", [p.ref for p in pool_images], vectors)
    pool_problem = None
    if not pool_images:
        pool_problem = f"the image pool {pool} has no images"
    elif not index_images:
        pool_problem = f"no image of the pool {pool} could be read"
    retrieved = retrieve_step(out, [e for e in good if e.entry_id in selected], index_path, index_images, vectors,
                              settings, encoder, progress=progress, pool_problem=pool_problem)

    rows = []
    for e in good:
        if e.entry_id not in selected:
            continue
        cands = {r["caption"]: r.get("candidates") or [] for cid, r in retrieved.items()
                 if cid.split("#")[0] == e.entry_id}
        rows += manifest_rows(e, selected[e.entry_id]["caption"], selected[e.entry_id]["score"], cands)
    manifest = write_manifest(out / "candidates.csv", rows)
    study = make_study(out, manifest, rows, log) if make_study is not None else None
    final = None
    if validated is not None:
        final = write_final(out / "final.csv", rows, Path(validated))

    summary = _summary(entries, good, reworded, scores, selected, vectors, pool_images, retrieved, rows,
                       problems, settings)
    summary.update({"manifest": str(manifest), "validation_study": study,
                    "final": final, "settings": {k: v for k, v in asdict(settings).items() if k != "prompt"},
                    "prompt_sha": hashlib.sha256(settings.prompt.encode()).hexdigest()[:12]})
    write_json(out / "summary.json", summary)
    return summary


def write_final(path: Path, rows: list[dict[str, Any]], validated: Path) -> str:
    """The final manifest: the SG pairs, and each retrieved PG image whose every triplet passed validation
    (``needs_repair`` 0); a caption in a flagged triplet is marked ``needs_repair`` = 1 for repair by hand."""
    from connote.core.jsonio import read_text, text_lines

    text = read_text(validated, what="validation import")
    reader = csv.DictReader(text_lines(text))
    need = {"pg_image", "caption", "needs_repair"}
    if not need <= set(reader.fieldnames or []):
        raise InputError(f"not a probes-validation import: needs columns {', '.join(sorted(need))}", path=validated,
                         line=1)
    status: dict[str, list[str]] = {}
    flagged_captions: set[str] = set()
    for row in reader:
        status.setdefault(resolved(row["pg_image"]), []).append(row["needs_repair"])
        if row["needs_repair"] == "1":
            flagged_captions.add(row["caption"])
    final = []
    for r in rows:
        if r.get("retrieved_for"):
            flags = status.get(resolved(r["image"]), [])
            if not flags or any(f != "0" for f in flags):
                continue  # not validated yet, or rejected by the annotators
        final.append({**r, "needs_repair": "1" if r["caption"] in flagged_captions else "0"})
    write_manifest(path, final, columns=[*MANIFEST_COLUMNS, "needs_repair"])
    return str(path)


def _summary(entries: list[VerbEntry], good: list[VerbEntry], reworded: dict[str, dict[str, Any]],
             scores: dict[str, dict[str, Any]], selected: dict[str, dict[str, Any]], vectors: dict[str, dict[str, Any]],
             pool_images: list[PoolImage], retrieved: dict[str, dict[str, Any]], rows: list[dict[str, Any]],
             problems: list[str], settings: BuildSettings) -> dict[str, Any]:
    all_scores = [r["score"] for r in scores.values() if r.get("score") is not None]
    best = [s["score"] for s in selected.values() if s["score"] is not None]
    kept = [c for r in retrieved.values() for c in r.get("candidates") or []]
    excluded = [c for r in retrieved.values() for c in r.get("excluded") or []]
    why: dict[str, int] = {}
    for c in excluded:
        why[c["kind"]] = why.get(c["kind"], 0) + 1
    violations = [{"candidate": cid, **v} for cid, r in reworded.items() for v in r.get("violations") or []]
    errors = ([{"item": cid, "error": r["error"]} for cid, r in reworded.items() if r.get("error")]
              + [{"item": cid, "error": r["error"]} for cid, r in scores.items() if r.get("error")]
              + [{"item": ref, "error": r["error"]} for ref, r in vectors.items() if r.get("error")]
              + [{"item": cid, "error": r["error"]} for cid, r in retrieved.items() if r.get("error")])
    return {
        "verbs": len(entries), "verbs_built": len(selected), "problems": problems,
        "captions": {"candidates": len(reworded), "reworded": sum(r["source"] == "reworded" for r in reworded.values()),
                     "template_kept": sum(r["source"] == "template" for r in reworded.values()),
                     "violations": violations},
        "grammaticality": {"scorer": settings.scorer, "all": _stats(all_scores), "selected": _stats(best)},
        "pool": {"images": len(pool_images),
                 "indexed": sum(1 for p in pool_images if vectors.get(p.ref, {}).get("vector")),
                 "unreadable": sum(1 for p in pool_images if vectors.get(p.ref, {}).get("error"))},
        "retrieval": {"pg_captions": len(retrieved), "top_k": settings.top_k, "kept": len(kept),
                      "excluded": len(excluded), "excluded_by_reason": why,
                      "score_kept": _stats([c["score"] for c in kept]),
                      "score_excluded": _stats([c["score"] for c in excluded])},
        "manifest_rows": len(rows), "errors": errors,
    }


def _fmt(st: dict[str, Any]) -> str:
    if not st["n"]:
        return "n = 0"
    return f"{st['mean']:.3f} ± {st['std']:.3f} (n = {st['n']}, min {st['min']:.3f}, max {st['max']:.3f})"


def render_summary(summary: dict[str, Any]) -> str:
    """The paper's statistics as text: grammaticality over all and selected captions, retrieval, candidates."""
    g, r, c, p = summary["grammaticality"], summary["retrieval"], summary["captions"], summary["pool"]
    lines = [f"verbs: {summary['verbs_built']} of {summary['verbs']} built; problems recorded: "
             f"{len(summary['problems'])}, item errors: {len(summary['errors'])}",
             f"captions: {c['candidates']} candidates, {c['reworded']} reworded, {c['template_kept']} templates "
             f"kept, {len(c['violations'])} rewording(s) refused by the constraints"]
    if g["scorer"] == "none":
        lines.append("grammaticality: not scored (--scorer none); the first candidate is kept")
    else:
        lines.append(f"grammaticality ({g['scorer']}), all captions: {_fmt(g['all'])}")
        lines.append(f"grammaticality ({g['scorer']}), selected captions: {_fmt(g['selected'])}")
    lines.append(f"pool: {p['images']} images, {p['indexed']} indexed, {p['unreadable']} unreadable")
    lines.append(f"retrieval: {r['pg_captions']} PG captions, top-{r['top_k']}: {r['kept']} candidates kept, "
                 f"{r['excluded']} excluded" + ("" if not r["excluded_by_reason"] else " (" + ", ".join(
                     f"{k}: {v}" for k, v in sorted(r["excluded_by_reason"].items())) + ")"))
    lines.append(f"retrieval score of kept candidates: {_fmt(r['score_kept'])}")
    lines.append(f"manifest: {summary['manifest']} ({summary['manifest_rows']} pairs)")
    lines.append(f"validation study: {summary['validation_study'] or '(none)'}")
    if summary.get("final"):
        lines.append(f"final manifest: {summary['final']}")
    return "\n".join(lines)
