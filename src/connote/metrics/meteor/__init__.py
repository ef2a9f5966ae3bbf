"""METEOR 1.5 without Java.

A re-implementation of the ``meteor-1.5.jar`` scorer as pycocoevalcap and the VIST challenge run
it: normalization (``-norm``), the exact / stem / synonym / paraphrase matching modules, the
alignment beam search, the fragmentation penalty, the per-task parameters, the choice of the best
reference per segment and the corpus aggregate (sums of sufficient statistics, not the mean of
segment scores).

>>> m = Meteor(task="hter")                                   # doctest: +SKIP
>>> m.score("the cat sat on the mat", ["a cat sat on the mat"])  # doctest: +SKIP
0.83...

Resources: function words, non-breaking prefixes and the paraphrase table are read from the
``meteor-1.5.jar``/``paraphrase-en.gz`` of an installed ``pycocoevalcap`` (or ``meteor_data=``);
synonyms from the jar's own tables (``synonym_source="auto"``, the default: the jar's numbers exactly),
or WordNet 3.0 files when asked (``"wordnet"``) or when the jar is absent (see
:mod:`connote.metrics.wordnet`). A missing resource disables its module with a warning and is
written into :meth:`Meteor.signature` - never silently.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from connote.metrics._gc import gc_paused
from connote.metrics._inputs import check_aligned
from connote.metrics.meteor import _resources
from connote.metrics.meteor._align import (
    MODULE_NAMES,
    PARAPHRASE,
    STEM,
    SYNONYM,
    Aligner,
    SynonymIndex,
)
from connote.metrics.meteor._align import _calign as _compiled
from connote.metrics.meteor._normalize import java_tokens, java_trim, normalize_line, parse_nonbreaking_prefixes
from connote.metrics.meteor._stem import stem as snowball_stem

# the jar's -norm of printable ASCII text, compiled (None where the extension is older or not built)
_norm_tokens = getattr(_compiled, "norm_tokens", None)

__all__ = ["Meteor", "MeteorStats", "TASKS", "PRESETS", "MeteorResourceWarning"]

# (alpha, beta, gamma, delta) and module weights (exact, stem, synonym, paraphrase) for English.
TASKS: dict[str, tuple[tuple[float, float, float, float], tuple[float, float, float, float]]] = {
    "rank": ((0.85, 0.2, 0.6, 0.75), (1.0, 0.6, 0.8, 0.6)),
    "adq": ((0.75, 1.4, 0.45, 0.7), (1.0, 1.0, 0.6, 0.8)),
    "hter": ((0.4, 1.5, 0.35, 0.55), (1.0, 0.2, 0.6, 0.8)),
    "util": ((0.65, 0.1, 0.55, 0.65), (1.0, 0.0, 0.0, 0.8)),
    "li": ((0.75, 1.4, 0.7, 0.5), (1.0, 0.5, 0.5, 0.5)),
    "tune": ((0.5, 1.0, 0.5, 0.5), (1.0, 0.5, 0.5, 0.5)),
}
TASKS["default"] = TASKS["rank"]
_LANGUAGES = {"en": "english", "english": "english"}


class MeteorResourceWarning(UserWarning):
    """A METEOR resource (paraphrases, synonyms, ...) is missing: scores differ from the jar's."""


def _jdiv(a: float, b: float) -> float:
    """Java double division (x/0 -> inf or NaN instead of an exception)."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * (math.copysign(1.0, b))
    return a / b


@dataclass
class MeteorStats:
    """Sufficient statistics of one segment (or of a corpus, once added up)."""

    test_length: float = 0.0
    ref_length: float = 0.0
    test_function_words: float = 0.0
    ref_function_words: float = 0.0
    test_content: list[float] = field(default_factory=lambda: [0.0] * 4)
    ref_content: list[float] = field(default_factory=lambda: [0.0] * 4)
    test_function: list[float] = field(default_factory=lambda: [0.0] * 4)
    ref_function: list[float] = field(default_factory=lambda: [0.0] * 4)
    chunks: float = 0.0
    test_word_matches: float = 0.0
    ref_word_matches: float = 0.0
    precision: float = 0.0
    recall: float = 0.0
    fmean: float = 0.0
    frag_penalty: float = 0.0
    score: float = 0.0

    @property
    def test_total_matches(self) -> float:
        return sum(self.test_content) + sum(self.test_function)

    @property
    def ref_total_matches(self) -> float:
        return sum(self.ref_content) + sum(self.ref_function)

    def is_perfect(self) -> bool:
        return (self.test_total_matches == self.test_length and self.ref_total_matches == self.ref_length
                and self.chunks == 1.0)

    def add(self, other: MeteorStats) -> None:
        """Add another segment's statistics (the jar skips the chunks of perfect segments)."""
        self.test_length += other.test_length
        self.ref_length += other.ref_length
        self.test_function_words += other.test_function_words
        self.ref_function_words += other.ref_function_words
        for mine, theirs in ((self.test_content, other.test_content), (self.ref_content, other.ref_content),
                             (self.test_function, other.test_function),
                             (self.ref_function, other.ref_function)):
            for k in range(4):
                mine[k] += theirs[k]
        if not other.is_perfect():
            self.chunks += other.chunks
        self.test_word_matches += other.test_word_matches
        self.ref_word_matches += other.ref_word_matches

    def to_jar_string(self) -> str:
        """The 23 numbers the jar prints for a ``SCORE`` request."""
        vals = [self.test_length, self.ref_length, self.test_function_words, self.ref_function_words]
        for k in range(4):
            vals += [self.test_content[k], self.ref_content[k], self.test_function[k], self.ref_function[k]]
        vals += [self.chunks, self.test_word_matches, self.ref_word_matches]
        return " ".join(repr(float(v)) for v in vals)


def compute_metrics(stats: MeteorStats, parameters: Sequence[float], weights: Sequence[float]) -> MeteorStats:
    """Precision, recall, Fmean, fragmentation penalty and score, in the jar's arithmetic."""
    alpha, beta, gamma, delta = parameters
    t_len = delta * (stats.test_length - stats.test_function_words) + (1.0 - delta) * stats.test_function_words
    r_len = delta * (stats.ref_length - stats.ref_function_words) + (1.0 - delta) * stats.ref_function_words
    t_match = 0.0
    r_match = 0.0
    for k, w in enumerate(weights):
        t_match += stats.test_content[k] * w * delta
    for k, w in enumerate(weights):
        r_match += stats.ref_content[k] * w * delta
    for k, w in enumerate(weights):
        t_match += stats.test_function[k] * w * (1.0 - delta)
    for k, w in enumerate(weights):
        r_match += stats.ref_function[k] * w * (1.0 - delta)
    p = _jdiv(t_match, t_len)
    r = _jdiv(r_match, r_len)
    denom = _jdiv(1.0 - alpha, p) + _jdiv(alpha, r)
    fmean = _jdiv(1.0, denom)
    if stats.is_perfect():
        frag = 0.0
    else:
        frag = _jdiv(stats.chunks, (stats.test_word_matches + stats.ref_word_matches) / 2.0)
    try:
        pen = gamma * math.pow(frag, beta) if not math.isnan(frag) else math.nan
    except (OverflowError, ValueError):
        pen = math.nan
    score = fmean * (1.0 - pen)
    stats.precision, stats.recall, stats.fmean, stats.frag_penalty = p, r, fmean, pen
    stats.score = 0.0 if math.isnan(score) else max(score, 0.0)
    return stats


PRESETS: dict[str, dict[str, object]] = {
    # pycocoevalcap: java -jar meteor-1.5.jar - - -stdio -l en -norm
    "pycocoevalcap": {"task": "rank", "norm": True},
    # VIST challenge evaluation: java -jar meteor-1.5.jar - - -stdio -t hter (no -norm, no lower-casing)
    "vist": {"task": "hter", "norm": False},
}


class Meteor:
    """METEOR 1.5 scorer (the jar's algorithm, no Java).

    Presets: ``Meteor.from_preset("pycocoevalcap")`` (= ``Meteor()``) and ``Meteor.from_preset("vist")``
    (task ``hter`` without ``-norm``, as the VIST challenge scorer runs the jar; its protocol scores
    each single reference with :meth:`score_pairs` and keeps the maximum).

    Args:
        language: ``"en"`` (the languages pycocoevalcap and VIST use).
        task: parameter set of the jar: ``"rank"`` (= ``"default"``, what ``-l en -norm`` in
            pycocoevalcap uses), ``"hter"`` (VIST challenge), ``"adq"``, ``"util"``, ``"li"``, ``"tune"``.
        norm: apply the jar's ``-norm`` tokenization/normalization and lower-casing.
        lowercase: lower-case only (the jar's ``-lower``); without ``norm`` and ``lowercase`` the text
            is compared as it is (the jar's behaviour without either option).
        modules: subset/order of ``("exact", "stem", "synonym", "paraphrase")``.
        parameters: override (alpha, beta, gamma, delta); weights: override module weights.
        beam_size: alignment beam (jar default 40).
        meteor_data: directory holding ``meteor-1.5.jar`` and ``data/paraphrase-en.gz`` (default: the
            installed pycocoevalcap); paraphrase_file: explicit paraphrase table.
        wordnet: WordNet 3.0 directory; synonym_source: ``"auto"`` (the jar's own tables - its numbers
            exactly - and WordNet 3.0 files only where the jar is absent), ``"jar"`` or ``"wordnet"``.
        strict: raise instead of warning when a resource is missing.
    """

    def __init__(self, language: str = "en", task: str = "rank", norm: bool = True, *,
                 lowercase: bool = False, modules: Sequence[str] | None = None,
                 parameters: Sequence[float] | None = None, weights: Sequence[float] | None = None,
                 beam_size: int = 40, meteor_data: str | os.PathLike[str] | None = None,
                 paraphrase_file: str | os.PathLike[str] | None = None,
                 wordnet: str | os.PathLike[str] | None = None, synonym_source: str = "auto",
                 strict: bool = False) -> None:
        lang = _LANGUAGES.get(language.lower())
        if lang is None:
            raise ValueError(f"METEOR language {language!r} is not supported yet; supported: en")
        task = task.lower()
        if task not in TASKS:
            raise ValueError(f"unknown METEOR task {task!r}; valid tasks: {', '.join(sorted(TASKS))}")
        if synonym_source not in ("auto", "wordnet", "jar"):
            raise ValueError("synonym_source must be 'auto', 'wordnet' or 'jar'")
        if wordnet and synonym_source == "auto":  # a WordNet folder given is asking for WordNet
            synonym_source = "wordnet"
        self.language, self.task, self.norm = "en", task, norm
        self.lowercase = lowercase or norm
        names = tuple(m.lower() for m in (modules or MODULE_NAMES))
        for m in names:
            if m not in MODULE_NAMES:
                raise ValueError(f"unknown METEOR module {m!r}; valid modules: {', '.join(MODULE_NAMES)}")
        self.module_names = names
        params, task_weights = TASKS[task]
        self.parameters = tuple(float(x) for x in (parameters or params))
        if weights is None:
            weights = [task_weights[MODULE_NAMES.index(m)] for m in names]
        self.weights = tuple(float(w) for w in weights)
        if len(self.parameters) != 4 or len(self.weights) != len(names):
            raise ValueError("parameters need 4 values (alpha beta gamma delta) and one weight per module")
        self.beam_size = beam_size
        self.strict = strict
        self.missing: list[str] = []
        self._meteor_dir = _resources.find_meteor_dir(meteor_data)
        fw = _resources.function_words(self._meteor_dir, lang)
        if fw is None:
            self._missing("function words (meteor-1.5.jar not found: install pycocoevalcap or pass meteor_data)")
            fw = frozenset()
        self.function_words = fw
        prefixes_text = _resources.nonbreaking_prefixes_text(self._meteor_dir, lang)
        if prefixes_text is None and norm:
            self._missing("non-breaking prefixes for -norm (meteor-1.5.jar not found)")
        self._prefixes = parse_nonbreaking_prefixes(prefixes_text or "")
        module_ids = tuple(MODULE_NAMES.index(m) for m in names)
        self.synonym_source = "none"
        synonyms = None
        if SYNONYM in module_ids:
            tables = _resources.synonym_tables(synonym_source, self._meteor_dir,
                                               str(wordnet) if wordnet else None)
            if tables is None:
                self._missing("synonym module disabled: no meteor-1.5.jar synonym tables"
                              + ("" if synonym_source == "jar" else
                                 " and no WordNet 3.0 files (apt-get install wordnet-base)"))
            else:
                synonyms = SynonymIndex(tables)
                self.synonym_source = tables.source.split(":", 1)[0]
        stem = None
        if STEM in module_ids:
            stem = snowball_stem
        self._table = None
        self.paraphrase_digest = "none"
        if PARAPHRASE in module_ids:
            path = _resources.find_paraphrase_file(self._meteor_dir, "en", paraphrase_file)
            if path is None:
                self._missing("paraphrase module disabled: paraphrase-en.gz not found (install pycocoevalcap "
                              "or pass paraphrase_file)")
            else:
                self._table = _resources.load_paraphrase_table(path)
                self.paraphrase_digest = self._table.digest[:12]
        self._aligner = Aligner(module_ids, fw, stem, synonyms, None, beam_size, paraphrase_table=self._table)
        self._token_cache: dict[str, tuple[str, ...]] = {}

    @classmethod
    def from_preset(cls, name: str, **overrides: object) -> Meteor:
        """A scorer configured as a known tool runs the jar (see :data:`PRESETS`)."""
        if name not in PRESETS:
            raise ValueError(f"unknown METEOR preset {name!r}; valid presets: {', '.join(sorted(PRESETS))}")
        return cls(**{**PRESETS[name], **overrides})  # type: ignore[arg-type]

    # ----------------------------------------------------------------------------------------
    def _missing(self, what: str) -> None:
        if self.strict:
            raise FileNotFoundError(f"METEOR: {what}")
        self.missing.append(what)
        warnings.warn(f"METEOR scores will differ from meteor-1.5.jar: {what}", MeteorResourceWarning,
                      stacklevel=3)

    def signature(self) -> str:
        """Every setting that changes a METEOR number, sacrebleu-style."""
        from connote import __version__

        a, b, g, d = self.parameters
        parts = [
            "meteor:1.5", f"lang:{self.language}", f"task:{self.task}", f"norm:{'yes' if self.norm else 'no'}",
            f"lc:{'yes' if self.lowercase else 'no'}", f"modules:{'+'.join(self.module_names)}",
            f"params:{a:g},{b:g},{g:g},{d:g}", f"weights:{','.join(f'{w:g}' for w in self.weights)}",
            f"beam:{self.beam_size}", f"syn:{self.synonym_source}", f"para:{self.paraphrase_digest}",
        ]
        if self.missing:
            parts.append("MISSING:" + ";".join(m.split(" ")[0] for m in self.missing))
        parts.append(f"version:connote-{__version__}")
        return "|".join(parts)

    def tokenize(self, text: str) -> list[str]:
        """Normalize (``-norm``) and lower-case one sentence as the jar does, then split."""
        got = self._token_cache.get(text)
        if got is not None:
            return list(got)
        raw = text
        toks = _norm_tokens(text, self._prefixes, self.lowercase) if self.norm and self._compiled_norm() else None
        if toks is None:  # the reference of the compiled -norm, and what it leaves to Python (non-ASCII text)
            if self.norm:
                text = normalize_line(text, self._prefixes, keep_punctuation=True)
            if self.lowercase:
                text = text.lower()
            toks = java_tokens(text)
        if len(self._token_cache) > 200000:
            self._token_cache.clear()
        self._token_cache[raw] = tuple(toks)
        return toks

    def _compiled_norm(self) -> bool:
        return _norm_tokens is not None and self._aligner.compiled

    def prepare(self, texts: Iterable[str | Sequence[str]]) -> None:
        """Load the paraphrase entries relevant to these texts (raw strings or token lists) for the
        pure-Python search (the compiled aligner reads the table directly and needs no preparing).

        Scoring does this by itself where needed; a pair is covered when its two sentences were
        prepared in the same call.
        """
        self._aligner.prepare([list(t) if not isinstance(t, str) else self.tokenize(t) for t in texts])

    def _stats(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[MeteorStats]:
        """Statistics and scores of many (hypothesis, reference) token pairs."""
        rows = self._aligner.batch_counts(pairs).tolist()
        params = self.parameters
        weights = list(self.weights) + [0.0] * (4 - len(self.weights))
        out = []
        for r in rows:
            st = MeteorStats(float(r[0]), float(r[1]), float(r[2]), float(r[3]), [float(x) for x in r[4:8]],
                             [float(x) for x in r[8:12]], [float(x) for x in r[12:16]],
                             [float(x) for x in r[16:20]], float(r[20]), float(r[21]), float(r[22]))
            out.append(compute_metrics(st, params, weights))
        return out

    def segment_stats(self, hypothesis: str, references: Sequence[str]) -> MeteorStats:
        """Statistics of the best reference (highest score, first on ties), as the jar's ``SCORE``."""
        hyp = self.tokenize(java_trim(hypothesis))
        refs = [self.tokenize(java_trim(r)) for r in references]
        return self._best(self._stats([(hyp, r) for r in refs]))

    def score(self, hypothesis: str, references: str | Sequence[str]) -> float:
        """Segment score of one hypothesis against one reference or the best of several."""
        refs = [references] if isinstance(references, str) else list(references)
        return self.segment_stats(hypothesis, refs).score

    def score_pairs(self, pairs: Iterable[tuple[str, str]]) -> list[float]:
        """Segment scores of many (hypothesis, single reference) pairs; shares all set-up work.

        This is what VIST's challenge protocol needs (score each reference, take the max).
        """
        with gc_paused():
            return self._score_pairs(list(pairs))

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        toks = [(tuple(self.tokenize(java_trim(h))), tuple(self.tokenize(java_trim(r)))) for h, r in pairs]
        distinct = list(dict.fromkeys(toks))
        scores = dict(zip(distinct, (st.score for st in self._stats(distinct))))
        return [scores[k] for k in toks]

    def _chunk_stats(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[MeteorStats]:
        hyps = [self.tokenize(java_trim(h)) for h in hypotheses]
        refs = [[self.tokenize(java_trim(r)) for r in rs] for rs in references]
        stats = self._stats([(h, r) for h, rs in zip(hyps, refs) for r in rs])
        out, at = [], 0
        for rs in refs:
            out.append(self._best(stats[at:at + len(rs)]))
            at += len(rs)
        return out

    @staticmethod
    def _best(stats: Sequence[MeteorStats]) -> MeteorStats:
        best: MeteorStats | None = None
        for st in stats:
            if best is None or st.score > best.score:
                best = st
        if best is None:
            raise ValueError("METEOR needs at least one reference per segment")
        return best

    def corpus(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], *,
               n_jobs: int | None = 1) -> tuple[float, list[float]]:
        """Corpus score (aggregated statistics, as pycocoevalcap reports) and segment scores.

        ``n_jobs`` > 1 (or ``0``/``None`` = all cores) aligns segments in forked worker processes
        (Linux/macOS); results are identical to ``n_jobs=1``.
        """
        return self._corpus_start(hypotheses, references, n_jobs).result()

    def _corpus_start(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                      n_jobs: int | None = 1) -> _PendingCorpus:
        """Start :meth:`corpus`; with worker processes the caller can work while they align."""
        check_aligned(hypotheses, references)
        jobs = _resolve_jobs(n_jobs, len(hypotheses))
        if jobs > 1:  # workers tokenize, select paraphrases and align their own share
            return _PendingCorpus(self, _ParallelRun(self, list(hypotheses), [list(r) for r in references], jobs))
        with gc_paused():
            stats = self._chunk_stats(hypotheses, references)
        return _PendingCorpus(self, stats)

    def _aggregate(self, stats: list[MeteorStats]) -> tuple[float, list[float]]:
        total = MeteorStats()
        for st in stats:
            total.add(st)
        compute_metrics(total, self.parameters, list(self.weights) + [0.0] * (4 - len(self.weights)))
        return total.score, [st.score for st in stats]


def _resolve_jobs(n_jobs: int | None, n_items: int) -> int:
    import multiprocessing as mp

    if n_jobs is None or n_jobs <= 0:
        from connote.core.prefetch import usable_cores

        n_jobs = usable_cores()
    if n_items < 64 or "fork" not in mp.get_all_start_methods():
        return 1
    return max(1, min(n_jobs, n_items // 32))


def _guided_chunks(n: int, jobs: int, least: int = 32) -> list[tuple[int, int]]:
    """Item ranges, each a share of what is left (the largest first): processes that start at different times
    (the caller computes other metrics first) still finish together."""
    out, a = [], 0
    while a < n:
        b = min(n, a + max(least, -(-(n - a) // (2 * jobs))))
        out.append((a, b))
        a = b
    return out


def _worker_loop(meteor: Meteor, hyps: list[str], refs: list[list[str]], chunks: list[tuple[int, int]],
                 counter: Any, conn: Any) -> None:
    """A forked worker: claims the next chunk until none is left, then sends ``{chunk: stats}`` back at once
    (a send while the parent aligns would wait on the pipe). A chunk it fails on is left out: the parent
    aligns it again, and so raises the error itself."""
    done: dict[int, list[MeteorStats]] = {}
    try:
        while True:
            k = _claim(counter, len(chunks))
            if k is None:
                break
            a, b = chunks[k]
            done[k] = meteor._chunk_stats(hyps[a:b], refs[a:b])
    except BaseException:  # noqa: BLE001,S110 - the parent aligns the chunks missing from ``done``
        pass
    try:
        conn.send(done)
    finally:
        conn.close()


def _claim(counter: Any, n: int) -> int | None:
    with counter.get_lock():
        k = counter.value
        if k >= n:
            return None
        counter.value = k + 1
    return k


class _ParallelRun:
    """Forked workers aligning chunks of a corpus while the caller does other work; :meth:`stats` then aligns
    the chunks still unclaimed in this process (``jobs - 1`` workers + the caller: one process fewer to start,
    and no core idles while the caller finishes its own work) and gathers the workers' results."""

    def __init__(self, meteor: Meteor, hyps: list[str], refs: list[list[str]], jobs: int) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self._meteor, self._hyps, self._refs = meteor, hyps, refs
        self._chunks = _guided_chunks(len(hyps), jobs)
        self._counter = ctx.Value("l", 0)
        self._procs: list[Any] = []
        self._conns: list[Any] = []
        try:
            for _ in range(jobs - 1):
                recv, send = ctx.Pipe(duplex=False)
                with gc_paused():  # the workers inherit the paused collector
                    proc = ctx.Process(target=_worker_loop, args=(meteor, hyps, refs, self._chunks, self._counter,
                                                                  send), daemon=True)
                    proc.start()
                send.close()
                self._procs.append(proc)
                self._conns.append(recv)
        except BaseException:
            self.cancel()
            raise

    def stats(self) -> list[MeteorStats]:
        done: dict[int, list[MeteorStats]] = {}
        try:
            with gc_paused():
                while True:
                    k = _claim(self._counter, len(self._chunks))
                    if k is None:
                        break
                    a, b = self._chunks[k]
                    done[k] = self._meteor._chunk_stats(self._hyps[a:b], self._refs[a:b])
                for conn in self._conns:
                    try:
                        done.update(conn.recv())
                    except EOFError:  # the worker died: its chunks are aligned here below
                        pass
                for k, (a, b) in enumerate(self._chunks):
                    if k not in done:
                        done[k] = self._meteor._chunk_stats(self._hyps[a:b], self._refs[a:b])
            self._close(terminate=False)
        finally:
            self.cancel()
        return [st for k in range(len(self._chunks)) for st in done[k]]

    def _close(self, terminate: bool) -> None:
        for proc in self._procs:
            if terminate and proc.is_alive():
                proc.terminate()
            proc.join()
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []

    def cancel(self) -> None:
        self._close(terminate=True)


class _PendingCorpus:
    """A corpus METEOR computation that may still be running in worker processes."""

    def __init__(self, meteor: Meteor, work: list[MeteorStats] | _ParallelRun) -> None:
        self._meteor = meteor
        self._work = work

    def result(self) -> tuple[float, list[float]]:
        stats = self._work.stats() if isinstance(self._work, _ParallelRun) else self._work
        return self._meteor._aggregate(stats)

    def cancel(self) -> None:
        if isinstance(self._work, _ParallelRun):
            self._work.cancel()


