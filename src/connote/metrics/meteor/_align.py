"""METEOR 1.5 word alignment: matching stages and the beam search over partial alignments.

Conventions follow the jar: ``words1`` is the hypothesis, ``words2`` the reference; a match is
``(start, length, match_start, match_length, module)`` with ``start``/``length`` on the reference
and ``match_*`` on the hypothesis. Candidate matches are collected per reference position by each
module in order (exact, stem, synonym, paraphrase); matches that are the only candidate for every
word they cover are fixed up front; the rest is resolved by a beam search (beam 40) that prefers
more (weighted) matched words, then fewer chunks, then a smaller distance term, keeping the jar's
stable ordering of equal candidates (and the way it accumulates the distance term) so that the
chosen alignment is the same.

``Aligner.batch_counts`` aligns and counts many pairs at once: with the compiled extension
(``_calign.c``, built at install; the same steps on integer arrays, one call for the whole batch) or,
where it is not built or ``CONNOTE_METEOR_COMPILED=0``, with the pure-Python methods here, which are
the reference the compiled code is tested against.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from connote.metrics import _arrays
from connote.metrics.meteor._stem import stem as snowball_stem
from connote.metrics.wordnet import SynonymTables

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3
MODULE_NAMES = ("exact", "stem", "synonym", "paraphrase")

_MORPH_RULES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                ("men", "man"), ("ies", "y"), ("s", ""), ("ies", "y"), ("es", "e"), ("es", ""),
                ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("er", ""), ("est", ""),
                ("er", "e"), ("est", "e"))

Match = tuple[int, int, int, int, int]
_MASK32 = 0xFFFFFFFF


def java_hash(word: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units, as an unsigned 32-bit value).

    The jar compares words (and stems) by this hash, so distinct words with equal hashes match
    exactly there - and such pairs occur in real text (``"n't"`` and ``"let"``).
    """
    h = 0
    for ch in word:
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            h = (31 * h + (0xD800 + (o >> 10))) & _MASK32
            h = (31 * h + (0xDC00 + (o & 0x3FF))) & _MASK32
        else:
            h = (31 * h + o) & _MASK32
    return h


class SynonymIndex:
    """Synset sets per word form, including the base forms of inflected words (cached)."""

    def __init__(self, tables: SynonymTables) -> None:
        self.tables = tables
        self._cache: dict[str, frozenset[int]] = {}

    def _morph(self, word: str) -> str:
        if word.endswith("ss") or len(word) <= 2:
            return word
        synsets = self.tables.synsets
        for suffix, addition in _MORPH_RULES:
            if word.endswith(suffix):
                cand = word[: len(word) - len(suffix)] + addition
                if cand in synsets:
                    return cand
        return ""

    def synsets(self, word: str) -> frozenset[int]:
        got = self._cache.get(word)
        if got is not None:
            return got
        syn = self.tables.synsets
        out = set(syn.get(word, ()))
        bases = self.tables.bases.get(word)
        if bases is not None:
            for b in bases:
                out.update(syn.get(b, ()))
        else:
            out.update(syn.get(self._morph(word), ()))
        got = frozenset(out)
        self._cache[word] = got
        return got


class ParaphraseIndex:
    """Phrase -> paraphrases (table order) for the table entries relevant to the texts seen so far."""

    def __init__(self) -> None:
        # phrase -> [(entry number, paraphrase)], kept in table order across incremental additions
        self.entries: dict[tuple[str, ...], list[tuple[int, tuple[str, ...]]]] = {}
        self.prefixes: set[tuple[str, ...]] = set()
        self._seen: set[int] = set()
        self.paras: set[tuple[str, ...]] = set()
        self.para_prefixes: set[tuple[str, ...]] = set()
        self._paths: dict[tuple[str, ...], list[list[tuple[int, tuple[str, ...]]]]] = {}
        self._ngrams: dict[tuple[str, ...], dict[tuple[str, ...], list[int]]] = {}
        self._phrases: dict[tuple[str, ...], dict[tuple[str, ...], list[tuple[int, int, int]]]] = {}

    def add(self, entries: list[tuple[int, tuple[str, ...], tuple[str, ...]]]) -> None:
        """Add ``(entry number, phrase, paraphrase)`` rows; rows already present are skipped."""
        grew = False
        for number, key, para in sorted(entries):
            if number in self._seen:
                continue
            self._seen.add(number)
            bisect.insort(self.entries.setdefault(key, []), (number, para))
            for n in range(1, len(para) + 1):
                self.para_prefixes.add(para[:n])
            self.paras.add(para)
            for n in range(1, len(key) + 1):
                self.prefixes.add(key[:n])
            grew = True
        if grew:
            self._paths.clear()
            self._ngrams.clear()
            self._phrases.clear()

    def ngram_positions(self, words: tuple[str, ...]) -> dict[tuple[str, ...], list[int]]:
        """Start positions (ascending) of the sentence's n-grams that are paraphrases in the index (cached)."""
        got = self._ngrams.get(words)
        if got is not None:
            return got
        out: dict[tuple[str, ...], list[int]] = {}
        prefixes, paras = self.para_prefixes, self.paras
        n = len(words)
        for start in range(n):
            for end in range(start + 1, n + 1):
                key = words[start:end]
                if key not in prefixes:
                    break
                if key in paras:
                    out.setdefault(key, []).append(start)
        if len(self._ngrams) > 50000:
            self._ngrams.clear()
        self._ngrams[words] = out
        return out

    def phrase_index(self, words: tuple[str, ...]) -> dict[tuple[str, ...], list[tuple[int, int, int]]]:
        """Paraphrase -> (start, phrase length, entry number) of every table phrase of the sentence (cached)."""
        got = self._phrases.get(words)
        if got is not None:
            return got
        prefixes, entries = self.prefixes, self.entries
        out: dict[tuple[str, ...], list[tuple[int, int, int]]] = {}
        n = len(words)
        for start in range(n):
            for end in range(start + 1, n + 1):
                key = words[start:end]
                if key not in prefixes:
                    break
                got_e = entries.get(key)
                if got_e:
                    length = end - start
                    for number, para in got_e:
                        row = out.get(para)
                        if row is None:
                            out[para] = [(start, length, number)]
                        else:
                            row.append((start, length, number))
        if len(self._phrases) > 50000:
            self._phrases.clear()
        self._phrases[words] = out
        return out

    def sentence_paths(self, words: tuple[str, ...]) -> list[list[tuple[int, tuple[str, ...]]]]:
        """For each start position: (phrase length, paraphrase) of every table phrase starting there."""
        got = self._paths.get(words)
        if got is not None:
            return got
        prefixes, entries = self.prefixes, self.entries
        out = []
        n = len(words)
        for start in range(n):
            row: list[tuple[int, tuple[str, ...]]] = []
            for end in range(start + 1, n + 1):
                key = words[start:end]
                if key not in prefixes:
                    break
                for _number, para in entries.get(key, ()):
                    row.append((end - start, para))
            out.append(row)
        if len(self._paths) > 50000:
            self._paths.clear()
        self._paths[words] = out
        return out


try:  # the compiled batch aligner (setup.py builds it; optional)
    from connote.metrics.meteor import _calign
except ImportError:  # pragma: no cover - installs without a C compiler
    _calign = None

# Used by default where built; CONNOTE_METEOR_COMPILED=0 forces the pure-Python search.
COMPILED = _calign is not None and os.environ.get("CONNOTE_METEOR_COMPILED", "1").strip().lower() not in (
    "0", "false", "no", "off")

# Columns of ``Aligner.batch_counts``: per module index (up to 4) the content/function matches of
# each side, then chunks and matched words; STATUS 1 = left to the Python search (handled inside).
STATS = ("test_length", "ref_length", "test_function_words", "ref_function_words",
         *(f"{name}_{k}" for name in ("test_content", "ref_content", "test_function", "ref_function")
           for k in range(4)),
         "chunks", "test_word_matches", "ref_word_matches", "status")
STATUS = len(STATS) - 1


@dataclass
class Aligner:
    """Everything the alignment needs; one instance serves many sentence pairs."""

    modules: tuple[int, ...]
    function_words: frozenset[str]
    stem: Callable[[str], str] | None = None
    synonyms: SynonymIndex | None = None
    paraphrases: ParaphraseIndex | None = None  # the Python search's entries (filled by ``prepare``)
    beam_size: int = 40
    prune: bool = True  # skip children that provably cannot enter the beam (same result; tests compare)
    # align batches with the compiled extension (``_calign``) where it is built; False: pure Python
    compiled: bool = field(default_factory=lambda: COMPILED)
    # the paraphrase table (``_resources.ParaphraseTable``): the compiled path reads it directly, the
    # Python search through ``paraphrases`` (entries selected by ``prepare``)
    paraphrase_table: Any = None
    _prepared: set = field(default_factory=set, repr=False)
    _stem_cache: dict[str, int] = field(default_factory=dict, repr=False)
    _hash_cache: dict[str, int] = field(default_factory=dict, repr=False)
    _feature_cache: dict[tuple[str, ...], list] = field(default_factory=dict, repr=False)

    def _hashes(self, words: Sequence[str]) -> list[int]:
        cache = self._hash_cache
        out = []
        for w in words:
            h = cache.get(w)
            if h is None:
                h = cache[w] = java_hash(w)
            out.append(h)
        return out

    def _stems(self, words: Sequence[str]) -> list[int]:
        """Java hashes of the stems (the jar compares stems by hash too)."""
        cache, stem = self._stem_cache, self.stem
        out = []
        for w in words:
            s = cache.get(w)
            if s is None:
                s = java_hash(stem(w) if stem is not None else w)
                cache[w] = s
            out.append(s)
        return out

    def _features(self, words: Sequence[str]) -> list:
        """Per-sentence data shared by all pairs the sentence is in (cached):
        [word hashes, hash -> positions, stem hashes, stem hash -> positions, synsets per word,
        synset -> positions, all synsets]; the stem and synonym parts are filled on first use."""
        key = words if isinstance(words, tuple) else tuple(words)
        f = self._feature_cache.get(key)
        if f is None:
            k = self._hashes(key)
            pos: dict[int, list[int]] = {}
            for j, w in enumerate(k):
                got = pos.get(w)
                if got is None:
                    pos[w] = [j]
                else:
                    got.append(j)
            f = [k, pos, None, None, None, None, None]
            if len(self._feature_cache) > 50000:
                self._feature_cache.clear()
            self._feature_cache[key] = f
        return f

    def _stem_features(self, f: list, words: Sequence[str]) -> None:
        s = self._stems(words)
        spos: dict[int, list[int]] = {}
        for j, x in enumerate(s):
            spos.setdefault(x, []).append(j)
        f[2], f[3] = s, spos

    def _synonym_features(self, f: list, words: Sequence[str]) -> None:
        assert self.synonyms is not None
        syn = self.synonyms.synsets
        f[4] = [syn(w) for w in words]

    @staticmethod
    def _synonym_positions(f: list) -> None:
        by_set: dict[int, list[int]] = {}
        for j, ss in enumerate(f[4]):
            for sid in ss:
                got = by_set.get(sid)
                if got is None:
                    by_set[sid] = [j]
                else:
                    got.append(j)
        f[5], f[6] = by_set, frozenset(by_set)

    def candidates(self, hyp: Sequence[str], ref: Sequence[str]) -> tuple[list[list[Match]], list[int], list[int]]:
        """Candidate matches per reference position and coverage counts (hyp, ref)."""
        n1, n2 = len(hyp), len(ref)
        stage: list[list[Match]] = [[] for _ in range(n2)]
        cov1, cov2 = [0] * n1, [0] * n2
        modules = self.modules
        f1, f2 = self._features(hyp), self._features(ref)
        k1, k2 = f1[0], f2[0]
        if n1 == n2 and k1 == k2:
            modules = modules[:1]
        pos1: dict[int, list[int]] = f1[1]
        for mi, module in enumerate(modules):
            if module == EXACT:
                for i, w in enumerate(k2):
                    got = pos1.get(w)
                    if got:
                        row = stage[i]
                        for j in got:
                            row.append((i, 1, j, 1, mi))
                            cov1[j] += 1
                        cov2[i] += len(got)
            elif module == STEM:
                if f1[2] is None:
                    self._stem_features(f1, hyp)
                if f2[2] is None:
                    self._stem_features(f2, ref)
                spos = f1[3]
                for i, s in enumerate(f2[2]):
                    got = spos.get(s)
                    if got:
                        w = k2[i]
                        for j in got:
                            if k1[j] != w:
                                stage[i].append((i, 1, j, 1, mi))
                                cov1[j] += 1
                                cov2[i] += 1
            elif module == SYNONYM:
                if self.synonyms is None:
                    continue
                if f1[4] is None:
                    self._synonym_features(f1, hyp)
                if f1[5] is None:
                    self._synonym_positions(f1)
                if f2[4] is None:
                    self._synonym_features(f2, ref)
                by_set, all1 = f1[5], f1[6]
                for i, ss in enumerate(f2[4]):
                    common = all1 & ss
                    if not common:
                        continue
                    hits: set[int] = set()
                    for sid in common:
                        hits.update(by_set[sid])
                    wk = k2[i]
                    for j in sorted(hits):
                        if k1[j] != wk:
                            stage[i].append((i, 1, j, 1, mi))
                            cov1[j] += 1
                            cov2[i] += 1
            elif module == PARAPHRASE:
                if self.paraphrases is None:
                    continue
                self._paraphrase_matches(hyp, ref, mi, stage, cov1, cov2)
        return stage, cov1, cov2

    def _paraphrase_matches(self, hyp: Sequence[str], ref: Sequence[str], mi: int,
                            stage: list[list[Match]], cov1: list[int], cov2: list[int]) -> None:
        # Matches in the jar's order: first every table phrase of the reference (by start, length,
        # table order) against the hypothesis' occurrences of its paraphrase (by position), then every
        # table phrase of the hypothesis against the reference likewise. Only the paraphrases found
        # on both sides are visited (a set intersection of the cached per-sentence indexes).
        idx = self.paraphrases
        assert idx is not None
        t1, t2 = tuple(hyp), tuple(ref)
        src2 = idx.phrase_index(t2)
        if src2:
            where1 = idx.ngram_positions(t1)
            common = src2.keys() & where1.keys()
            if common:
                found = sorted([(k, length, number, para) for para in common for k, length, number in src2[para]])
                for k, length, _number, para in found:
                    plen = len(para)
                    for ms in where1[para]:
                        stage[k].append((k, length, ms, plen, mi))
                        for x in range(ms, ms + plen):
                            cov1[x] += 1
                        for x in range(k, k + length):
                            cov2[x] += 1
        src1 = idx.phrase_index(t1)
        if src1:
            where2 = idx.ngram_positions(t2)
            common = src1.keys() & where2.keys()
            if common:
                found = sorted([(ms, mlen, number, para) for para in common for ms, mlen, number in src1[para]])
                for ms, mlen, _number, para in found:
                    plen = len(para)
                    for st in where2[para]:
                        stage[st].append((st, plen, ms, mlen, mi))
                        for x in range(ms, ms + mlen):
                            cov1[x] += 1
                        for x in range(st, st + plen):
                            cov2[x] += 1

    def align(self, hyp: Sequence[str], ref: Sequence[str]) -> list[Match]:
        """The jar's alignment of ``hyp`` to ``ref``: the chosen matches, by reference position."""
        n2 = len(ref)
        stage, cov1, cov2 = self.candidates(hyp, ref)
        fixed: list[Match | None] = [None] * n2
        used2 = [False] * n2
        used1_mask = 0
        for j in range(n2):
            if len(stage[j]) == 1:
                m = stage[j][0]
                if m[1] == 1 and m[3] == 1:
                    ok = cov2[j] == 1 and cov1[m[2]] == 1
                else:
                    ok = (all(cov2[j + k] == 1 for k in range(m[1]))
                          and all(cov1[m[2] + k] == 1 for k in range(m[3])))
                if ok:
                    fixed[j] = m
                    for k in range(m[1]):
                        used2[j + k] = True
                    for k in range(m[3]):
                        used1_mask |= 1 << (m[2] + k)
        # Weighted match count used to rank partial alignments: (int)(len * w), w = 1 exact, 0.5 else.
        modules = self.modules

        def weight(m: Match) -> int:
            w = 1.0 if modules[m[4]] == EXACT else 0.5
            return int(m[3] * w) + int(m[1] * w)

        # The jar ranks partial alignments by (more weighted matches, fewer chunks, smaller distance),
        # stable among equals. The three are packed into one integer key (fields sized from the input
        # so they cannot overflow into each other), so ranking is one integer compare.
        n_opts = max((len(x) for x in stage), default=0)
        dist_bits = max(26, (n2 * (n_opts + 1) * max(len(hyp), n2, 1)).bit_length() + 1)
        wc = 1 << dist_bits
        wm = wc << max(20, (n2 + 2).bit_length())
        exact_mod = [mod == EXACT for mod in modules]
        options: list[list[tuple]] = []
        maxw = []  # the largest weight a child can gain at each position
        for i in range(n2):
            opts = []
            best_w = 0
            if not used2[i]:
                for m in stage[i]:
                    ln, ms, ml = m[1], m[2], m[3]
                    if ln > 1 and any(used2[i + k] for k in range(1, ln)):
                        continue
                    # = weight(m) * wm; int(x * 0.5) == x // 2 for these small non-negative ints
                    w = ((ml + ln) if exact_mod[m[4]] else (ml // 2 + ln // 2)) * wm
                    if w > best_w:
                        best_w = w
                    # the hypothesis words as a small bit run tested against the partial's mask at ``ms``
                    # (a mask per option would cost memory in proportion to the text's length)
                    opts.append((m, (1 << ml) - 1, abs(i - ms), w, ms, ms + ml, i + ln))
            options.append(opts)
            maxw.append(best_w)
        no_limit = 1 << 4096  # above every key

        key = itemgetter(0)
        beam_size = self.beam_size
        prune = self.prune
        # partial: (packed key, idx, last match end, hyp-used mask, chain of chosen matches)
        beam: list[tuple] = [(0, 0, -1, used1_mask, None)]
        i = 0
        while i <= n2:
            beam.sort(key=key)
            prev = beam[:beam_size]
            beam = []
            append = beam.append
            if i < n2 and (used2[i] or not options[i]):
                # When every partial is in the same state (position, end of last match), the steps up
                # to the next position with a choice change all of them alike: their order (and so
                # every re-sort of the jar) stays as it is, and the steps are taken at once.
                idx0, last0 = prev[0][1], prev[0][2]
                if all(p[1] == idx0 and p[2] == last0 for p in prev):
                    idx, last, pos, delta, ok = idx0, last0, i, 0, True
                    while pos < n2:
                        if pos < idx:
                            pos += 1
                        elif used2[pos]:
                            m = fixed[pos]
                            if m is None:
                                ok = False
                                break
                            if last != -1 and m[2] != last:
                                delta += wc
                            delta += abs(m[0] - m[2]) - weight(m) * wm
                            idx, last = m[0] + m[1], m[2] + m[3]
                            pos += 1
                        elif not options[pos]:
                            if last != -1:
                                delta += wc
                            idx, last = pos + 1, -1
                            pos += 1
                        else:
                            break
                    if ok:
                        beam = [(p[0] + delta, idx, last, p[3], p[4]) for p in prev]
                        i = pos
                        continue
            if i == n2:
                for p in prev:
                    if p[2] != -1:
                        p = (p[0] + wc,) + p[1:]
                    append(p)
                break
            opts = options[i]
            if not opts and not used2[i]:
                # A run of reference words without candidates: every partial at this position just
                # closes its chunk and moves on. The jar's per-position re-sorts are no-ops here
                # (keys do not change again), so the run is taken in one step.
                j = i + 1
                while j < n2 and not used2[j] and not options[j]:
                    j += 1
                for p in prev:
                    if i < p[1] < j:
                        j = p[1]
                for p in prev:
                    if p[1] > i:
                        append(p)
                    else:
                        append((p[0] + wc if p[2] != -1 else p[0], j, -1, p[3], p[4]))
                i = j
                continue
            if used2[i]:
                for p in prev:
                    k, idx, last, used1, chain = p
                    if i < idx:
                        append(p)
                        continue
                    m = fixed[idx]
                    if m is None:
                        continue
                    if last != -1 and m[2] != last:
                        k += wc
                    append((k - weight(m) * wm + abs(m[0] - m[2]), m[0] + m[1], m[2] + m[3], used1, chain))
            else:
                # Children are appended parent by parent (parents in ascending key order), then
                # stable-sorted and cut to ``beam_size``. Once ``beam_size`` children with keys <= thr
                # exist, a later child with key >= thr can never enter the beam (equal keys keep
                # insertion order), so it is not built; and a parent whose smallest possible child key
                # (its key minus the largest option weight here) is >= thr ends the step, since the
                # parents' bounds only grow. The beam that survives the cut is exactly the same.
                thr = no_limit
                check_at = beam_size if prune else no_limit
                bound_w = maxw[i]
                for p in prev:
                    k, idx, last, used1, chain = p
                    if len(beam) >= check_at:  # (re)computed as the children accumulate: only tightens
                        thr = sorted([b[0] for b in beam])[beam_size - 1]
                        check_at = len(beam) + (beam_size + 1) // 2
                    if k - bound_w >= thr:
                        break
                    if i < idx:
                        append(p)
                        continue
                    if last == -1:
                        for m, bits, off, w, ms, mend, nidx in opts:
                            if (used1 >> ms) & bits:
                                continue
                            c = k - w
                            if c < thr:
                                append((c, nidx, mend, used1 | (bits << ms), (m, chain)))
                            k += off  # the jar adds the child's distance to the parent
                    else:
                        for m, bits, off, w, ms, mend, nidx in opts:
                            if (used1 >> ms) & bits:
                                continue
                            c = k - w if ms == last else k - w + wc  # a jump starts a new chunk
                            if c < thr:
                                append((c, nidx, mend, used1 | (bits << ms), (m, chain)))
                            k += off
                        k += wc
                    if k < thr:
                        append((k, idx + 1, -1, used1, chain))
            if not beam:
                beam = [prev[0]]
            i += 1
        beam.sort(key=key)
        best = beam[0]
        chosen: list[Match] = [m for m in fixed if m is not None]
        chain = best[4]
        while chain is not None:
            chosen.append(chain[0])
            chain = chain[1]
        chosen.sort(key=itemgetter(0))
        return chosen

    def prepare(self, sents: Sequence[Sequence[str]]) -> None:
        """Select the paraphrase table's entries relevant to these token lists for the Python search.

        Entries are selected per call (both phrases must occur among the call's sentences), so a pair
        is covered when its two sentences were prepared in the same call; a call is skipped when the
        very same group of sentences was prepared before.
        """
        if self.paraphrase_table is None:
            return
        group = frozenset(tuple(s) for s in sents)
        if group in self._prepared:
            return
        if len(self._prepared) > 100000:
            self._prepared.clear()
        self._prepared.add(group)
        if self.paraphrases is None:
            self.paraphrases = ParaphraseIndex()
        self.paraphrases.add(self.paraphrase_table.select([list(s) for s in sents]))

    # ------------------------------------------------------------------ many pairs at once
    def batch_counts(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> np.ndarray:
        """Align and count many (hypothesis, reference) token pairs: an int64 array, one row per
        pair, with the columns of :data:`STATS` (what :func:`count_alignment` returns, flattened).

        One compiled call does the whole batch where the extension is built (each distinct sentence's
        features are prepared once); pairs it leaves to Python (packed keys too wide for 64 bits)
        and every pair without the extension go through :meth:`align` and :func:`count_alignment`.
        """
        out = np.zeros((len(pairs), len(STATS)), dtype=np.int64)
        if not pairs:
            return out
        redo: Sequence[int] = range(len(pairs))
        # the compiled path reads paraphrases from the table (an Aligner given only a Python index
        # aligns in Python)
        table_ok = self.paraphrases is None or self.paraphrase_table is not None or PARAPHRASE not in self.modules
        if self.compiled and _calign is not None and table_ok:
            index: dict[tuple[str, ...], int] = {}
            ph = np.empty(len(pairs), dtype=np.int64)
            pr = np.empty(len(pairs), dtype=np.int64)
            for p, (h, r) in enumerate(pairs):
                h, r = tuple(h), tuple(r)
                ph[p] = index.setdefault(h, len(index))
                pr[p] = index.setdefault(r, len(index))
            arrays = self._batch_arrays(list(index))
            if arrays is not None:
                _calign.align_batch(*arrays, ph, pr, out, np.array(self._module_flags(), dtype=np.int64),
                                    int(self.beam_size), bool(self.prune))
                redo = np.flatnonzero(out[:, STATUS]).tolist()
        if redo:
            self.prepare([s for p in redo for s in pairs[p]])
        n_mod = len(self.modules)
        for p in redo:
            h, r = pairs[p]
            c = count_alignment(h, r, self.align(h, r), n_mod, self.function_words)
            pad = [0] * (4 - n_mod)
            out[p] = [c.test_length, c.ref_length, c.test_function_words, c.ref_function_words,
                      *c.test_content, *pad, *c.ref_content, *pad, *c.test_function, *pad, *c.ref_function, *pad,
                      c.chunks, c.test_word_matches, c.ref_word_matches, 0]
        return out

    def _module_flags(self) -> tuple[int, int]:
        return int(self.synonyms is not None), int(self.paraphrase_table is not None)

    def _word_hashes(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Java hashes of the words and of their stems (the compiled twins of ``java_hash`` and the Snowball
        stemmer where the extension has them and the stemmer is connote's; else :meth:`_hashes`/:meth:`_stems`)."""
        i64 = np.int64
        fast = getattr(_calign, "word_hashes", None)
        if fast is not None:
            whash = np.empty(len(words), dtype=i64)
            fast(words, False, whash)
        else:
            whash = np.array(self._hashes(words), dtype=i64)
        if STEM not in self.modules:
            return whash, whash
        if fast is not None and self.stem is snowball_stem:
            shash = np.empty(len(words), dtype=i64)
            fast(words, True, shash)
            return whash, shash
        return whash, np.array(self._stems(words), dtype=i64)

    def _synset_rows(self, words: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Each word's sorted synsets (CSR) from the compiled lookup where the tables are the jar's sorted
        synset table (``_resources._SortedSynsets``) and a dict of base forms; ``None``: the Python lookup."""
        fast = getattr(_calign, "synset_rows", None)
        tables = self.synonyms.tables if self.synonyms is not None else None
        table = getattr(tables, "synsets", None)
        data, starts = getattr(table, "data", None), getattr(table, "starts", None)
        if fast is None or not isinstance(data, bytes) or not isinstance(starts, np.ndarray) or not isinstance(
                tables.bases, dict):
            return None
        got = fast(words, data, np.ascontiguousarray(starts, dtype=np.int64), tables.bases)
        if got is None:  # a word UTF-8 cannot encode, or a table line that is not integers
            return None
        return np.frombuffer(got[0], dtype=np.int64), np.frombuffer(got[1], dtype=np.int64)

    def _batch_arrays(self, sents: list[tuple[str, ...]]) -> tuple[np.ndarray, ...] | None:
        """The compiled aligner's inputs for these sentences (int64 arrays, see ``_calign.c``)."""
        i64 = np.int64
        flat = [w for s in sents for w in s]
        vocab: dict[str, int] = dict.fromkeys(flat)  # word ids in order of first occurrence
        for i, w in enumerate(vocab):
            vocab[w] = i
        toks = np.fromiter(map(vocab.__getitem__, flat), dtype=i64, count=len(flat))
        tok_ptr = _arrays.offsets([len(s) for s in sents])
        words = list(vocab)
        whash, shash = self._word_hashes(words)
        fw = self.function_words
        func = np.array([w.lower() in fw for w in words], dtype=i64)
        rows = self._synset_rows(words) if SYNONYM in self.modules and self.synonyms is not None else None
        if rows is not None:
            syn_ptr, syn_ids = rows
        elif SYNONYM in self.modules and self.synonyms is not None:
            syn = self.synonyms.synsets
            sets = [sorted(syn(w)) for w in words]
            syn_ptr = _arrays.offsets([len(x) for x in sets])
            syn_ids = np.fromiter((x for row in sets for x in row), dtype=i64, count=int(syn_ptr[-1]))
        else:
            syn_ptr, syn_ids = np.zeros(len(words) + 1, dtype=i64), np.zeros(0, dtype=i64)
        if PARAPHRASE in self.modules and self.paraphrase_table is not None:
            para = self.paraphrase_table.sentence_matches(sents)
            if para is None:  # two paraphrases share a 64-bit hash: the exact Python path aligns this batch
                return None
            phr_ptr, phr, occ_ptr, occ_arr, para_len = para.phr_ptr, para.phr, para.occ_ptr, para.occ, para.para_len
        else:
            phr_ptr = occ_ptr = np.zeros(len(sents) + 1, dtype=i64)
            phr, occ_arr, para_len = np.zeros((0, 4), i64), np.zeros((0, 2), i64), np.zeros(0, i64)
        kind = np.array(self.modules, dtype=i64)
        return (kind, whash, shash, func, syn_ptr, syn_ids, tok_ptr, toks, phr_ptr, phr, occ_ptr, occ_arr, para_len)


@dataclass
class AlignmentCounts:
    """The sufficient statistics METEOR derives from one alignment."""

    test_length: int
    ref_length: int
    test_function_words: int
    ref_function_words: int
    test_content: list[int]
    ref_content: list[int]
    test_function: list[int]
    ref_function: list[int]
    chunks: int
    test_word_matches: int
    ref_word_matches: int


def count_alignment(hyp: Sequence[str], ref: Sequence[str], matches: Sequence[Match], n_modules: int,
                    function_words: frozenset[str]) -> AlignmentCounts:
    """Content/function matches per module and chunks, as the jar counts them."""
    f1 = [w.lower() in function_words for w in hyp]
    f2 = [w.lower() in function_words for w in ref]
    tc, rc, tf, rf = [0] * n_modules, [0] * n_modules, [0] * n_modules, [0] * n_modules
    for start, length, ms, ml, mod in matches:
        for k in range(ml):
            if f1[ms + k]:
                tf[mod] += 1
            else:
                tc[mod] += 1
        for k in range(length):
            if f2[start + k]:
                rf[mod] += 1
            else:
                rc[mod] += 1
    # chunks: walk reference positions; a gap or a jump in the hypothesis starts a new chunk
    by_start = {m[0]: m for m in matches}
    chunks, i, last = 0, 0, -1
    n2 = len(ref)
    while i < n2:
        m = by_start.get(i)
        if m is None:
            if last != -1:
                chunks += 1
                last = -1
            i += 1
        else:
            if last != -1 and m[2] != last:
                chunks += 1
            i = m[0] + m[1]
            last = m[2] + m[3]
    if last != -1:
        chunks += 1
    t_matches = sum(tc) + sum(tf)
    r_matches = sum(rc) + sum(rf)
    return AlignmentCounts(len(hyp), len(ref), sum(f1), sum(f2), tc, rc, tf, rf, chunks, t_matches, r_matches)
