"""Data files METEOR 1.5 needs, read without Java.

* function words and non-breaking prefixes: read from ``meteor-1.5.jar`` (a zip archive) of an
  installed ``pycocoevalcap`` or a directory/jar the user names;
* paraphrase table ``paraphrase-en.gz``: same places; converted once into a compact NumPy cache
  (``~/.cache/connote/meteor`` or ``$CONNOTE_CACHE``) so later runs load it in a fraction of a second;
* synonyms: the WordNet-derived tables inside the jar (what the jar itself uses), else - or when asked -
  WordNet 3.0 files (see :mod:`connote.metrics.wordnet`).
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.files import file_sha256
from connote.metrics import _arrays
from connote.metrics.wordnet import SynonymTables, find_wordnet, load_wordnet_tables

JAR_NAME = "meteor-1.5.jar"


def find_meteor_dir(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Directory holding ``meteor-1.5.jar`` (and ``data/paraphrase-*.gz``), or ``None``.

    Searches an explicit path (a directory or the jar itself), ``$CONNOTE_METEOR_DATA`` and the
    installed ``pycocoevalcap`` package.
    """
    cands: list[Path] = []
    if path:  # an explicit location is authoritative
        p = Path(path)
        c = p.parent if p.is_file() else p
        return c if (c / JAR_NAME).is_file() or (c / "data").is_dir() else None
    if os.environ.get("CONNOTE_METEOR_DATA"):
        cands.append(Path(os.environ["CONNOTE_METEOR_DATA"]))
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is not None:
        for loc in spec.submodule_search_locations or []:
            cands.append(Path(loc) / "meteor")
    for c in cands:
        if (c / JAR_NAME).is_file() or (c / "data").is_dir():
            return c
    return None


def _read_from_jar(meteor_dir: Path | None, member: str, binary: bool = False) -> str | bytes | None:
    if meteor_dir is None:
        return None
    loose = meteor_dir / member
    if loose.is_file():
        return loose.read_bytes() if binary else loose.read_text(encoding="utf-8")
    jar = meteor_dir / JAR_NAME
    if jar.is_file():
        with zipfile.ZipFile(jar) as zf:
            if member in zf.namelist():
                data = zf.read(member)
                return data if binary else data.decode("utf-8")
    return None


@lru_cache(maxsize=8)
def function_words(meteor_dir: Path | None, language: str) -> frozenset[str] | None:
    text = _read_from_jar(meteor_dir, f"function/{language}.words")
    return None if text is None else frozenset(line.rstrip("\r") for line in text.split("\n") if line)


@lru_cache(maxsize=8)
def nonbreaking_prefixes_text(meteor_dir: Path | None, language: str) -> str | None:
    return _read_from_jar(meteor_dir, f"nonbreaking/{language}.prefixes")


@lru_cache(maxsize=4)
def synonym_tables(source: str, meteor_dir: Path | None, wordnet_path: str | None) -> SynonymTables | None:
    """Synonym tables: the jar's own (``source='jar'``; they give the jar's numbers exactly), WordNet 3.0
    files (``'wordnet'``), or ``'auto'``: the jar's, and WordNet only where the jar is absent."""
    if source in ("auto", "jar"):
        got = _jar_synonym_tables(meteor_dir)
        if got is not None or source == "jar":
            return got
    wn = find_wordnet(wordnet_path)
    return load_wordnet_tables(wn) if wn is not None else None


def _line_starts(data: bytes) -> np.ndarray:
    """Where each line of ``data.split(b"\\n")`` starts, and one past the end (+1): line i is
    ``data[starts[i]:starts[i + 1] - 1]``."""
    nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return np.concatenate(([0], nl + 1, [len(data) + 1])).astype(np.int64)


class _Lines(Sequence):
    """Every other line of ``data`` (from line ``first``), as bytes, for bisection without splitting the data."""

    def __init__(self, data: bytes, starts: np.ndarray, first: int, n: int) -> None:
        self._data, self._starts, self._first, self._n = data, starts, first, n
        self._at: list[int] | None = None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        if self._at is None:
            self._at = self._starts.tolist()
        j = 2 * i + self._first
        return self._data[self._at[j]:self._at[j + 1] - 1]


class _SortedSynsets(Mapping):
    """word -> synset offsets from the jar's ``english.synsets`` (words on even lines, in byte order; their
    offsets on the next line), found by bisection and parsed on first access: parsing every line up front
    would cost each command a tenth of a second, while a corpus looks up a few thousand words. ``data`` and
    its line starts (:func:`_line_starts`) are what the compiled lookup (``_calign.synset_rows``) reads."""

    def __init__(self, data: bytes, starts: np.ndarray | None = None) -> None:
        self.data = data
        self.starts = _line_starts(data) if starts is None else starts
        n = (len(self.starts) - 1) // 2
        self._words, self._offsets = _Lines(data, self.starts, 0, n), _Lines(data, self.starts, 1, n)
        self._parsed: dict[str, tuple[int, ...] | None] = {}

    def _find(self, word: str) -> tuple[int, ...] | None:
        got = self._parsed.get(word, False)
        if got is not False:
            return got  # type: ignore[return-value]
        key = word.encode("utf-8")
        at = bisect.bisect_left(self._words, key)
        out = None
        if at < len(self._words) and self._words[at] == key:
            out = tuple(map(int, self._offsets[at].split()))
        self._parsed[word] = out
        return out

    def __getitem__(self, word: str) -> tuple[int, ...]:
        got = self._find(word) if isinstance(word, str) else None
        if got is None:
            raise KeyError(word)
        return got

    def get(self, word: object, default: Any = None) -> Any:  # Mapping.get would raise and catch a KeyError
        got = self._find(word) if isinstance(word, str) else None
        return default if got is None else got

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._find(word) is not None

    def __iter__(self):
        return (w.decode("utf-8") for w in self._words)

    def __len__(self) -> int:
        return len(self._words)


_SYN_MEMBERS = ("synonym/english.synsets", "synonym/english.exceptions")
SYN_CACHE_VERSION = "v1"


def _jar_synonym_data(meteor_dir: Path | None) -> tuple[bytes, np.ndarray | None, str] | None:
    """The jar's synset table (bytes, its line starts or None) and exceptions text. Read from the jar they
    are kept, decompressed, in the cache (``<cache>/meteor/synonyms-v1-*``, ~6 MB, keyed by the jar's path,
    size and modification time): decompressing them cost every run ~0.05 s before any work could start."""
    jar = meteor_dir / JAR_NAME if meteor_dir is not None else None
    if jar is None or not jar.is_file() or any((meteor_dir / m).is_file() for m in _SYN_MEMBERS):
        syn = _read_from_jar(meteor_dir, _SYN_MEMBERS[0], binary=True)
        exc = _read_from_jar(meteor_dir, _SYN_MEMBERS[1])
        return None if syn is None or exc is None else (syn, None, exc)  # type: ignore[return-value]
    st = jar.stat()
    key = f"{jar.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    cache = cache_dir() / f"synonyms-{SYN_CACHE_VERSION}-{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    if (cache / "complete").is_file():
        try:
            syn = (cache / "english.synsets").read_bytes()
            starts = np.load(cache / "lines.npy", allow_pickle=False)
            exc = (cache / "english.exceptions").read_text(encoding="utf-8")
            if starts.dtype == np.int64 and starts.ndim == 1 and len(starts) >= 2 and starts[-1] == len(syn) + 1:
                return syn, starts, exc
        except (OSError, ValueError):
            pass
    syn = _read_from_jar(meteor_dir, _SYN_MEMBERS[0], binary=True)
    exc = _read_from_jar(meteor_dir, _SYN_MEMBERS[1])
    if syn is None or exc is None:
        return None
    starts = _line_starts(syn)  # type: ignore[arg-type]
    try:  # written whole, then renamed into place; a read-only home still scores, without the cache
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "english.synsets").write_bytes(syn)  # type: ignore[arg-type]
        np.save(tmp / "lines.npy", starts, allow_pickle=False)
        (tmp / "english.exceptions").write_text(exc, encoding="utf-8")  # type: ignore[arg-type]
        (tmp / "source.json").write_text(json.dumps({"path": str(jar.resolve()), "key": key}), encoding="utf-8")
        (tmp / "complete").write_text("ok", encoding="utf-8")
        if cache.exists():
            shutil.rmtree(cache, ignore_errors=True)
        os.replace(tmp, cache)
        for old in cache.parent.glob("synonyms-*"):  # earlier states of the same jar
            if old != cache and old.is_dir() and ".tmp" not in old.name:
                try:
                    same = json.loads((old / "source.json").read_text(encoding="utf-8")).get("path") == str(
                        jar.resolve())
                except (OSError, ValueError):
                    same = True
                if same:
                    shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass
    return syn, starts, exc  # type: ignore[return-value]


def _jar_synonym_tables(meteor_dir: Path | None) -> SynonymTables | None:
    """``synonym/english.synsets`` and ``synonym/english.exceptions`` inside meteor-1.5.jar (word / offsets
    and base / inflected forms, on alternate lines)."""
    got = _jar_synonym_data(meteor_dir)
    if got is None:
        return None
    syn, starts, exc = got
    synsets = _SortedSynsets(syn, starts)
    bases: dict[str, list[str]] = {}
    elines = exc.split("\n")
    for base, inflected in zip(elines[0::2], elines[1::2]):
        for form in inflected.split():
            bases.setdefault(form, []).append(base)
    return SynonymTables(synsets, bases, f"meteor-jar:{meteor_dir}")


def cache_dir() -> Path:
    """Where the paraphrase index is cached (see :mod:`connote.metrics.cache`)."""
    from connote.core.cachedir import cache_root

    return cache_root() / "meteor"


_HASH_P = np.uint64(0x9E3779B97F4A7C15)
MAX_PHRASE = 7


def phrase_hashes(tokens: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash per phrase (token ids + 1), equal to :func:`ngram_hashes`' values."""
    lengths = np.diff(offsets)
    h = np.zeros(len(lengths), dtype=np.uint64)
    starts = offsets[:-1]
    with np.errstate(over="ignore"):
        for pos in range(int(lengths.max(initial=0))):
            m = lengths > pos
            h[m] = h[m] * _HASH_P + (tokens[starts[m] + pos].astype(np.uint64) + np.uint64(1))
    return h


def index_key(hashes: np.ndarray) -> np.ndarray:
    """32-bit index keys of 64-bit phrase hashes: the upper half of a SplitMix64 mixing (the raw hashes
    of short phrases are small numbers, whose upper halves would all be 0)."""
    z = hashes.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(32)).astype(np.uint32)


def ngram_hash_levels(ids: np.ndarray, max_n: int = MAX_PHRASE):
    """For n = 1..max_n (while n-grams exist): ``(n, h)``, h[p] the hash of the n-gram starting at p
    (the values of :func:`phrase_hashes`; ids < 0 are unknown words -> 0, which no table phrase holds)."""
    vals = (ids + 1).astype(np.uint64)
    h = vals
    with np.errstate(over="ignore"):
        for n in range(1, max_n + 1):
            if n > 1:
                if len(h) <= 1:
                    return
                h = h[:-1] * _HASH_P + vals[n - 1:]
            yield n, h


def ngram_hashes(ids: np.ndarray, max_n: int = MAX_PHRASE) -> np.ndarray:
    """Sorted hashes (with repeats) of every n-gram (n <= max_n) of a token-id array (ids < 0: unknown)."""
    out_arr = np.concatenate([h for _n, h in ngram_hash_levels(ids, max_n)])
    out_arr.sort()
    return out_arr


@dataclass
class ParaphraseTable:
    """All entries of a METEOR paraphrase table as token-id arrays (file order kept).

    Stored compactly (and memory-mapped from the cache): tokens as 16-bit ids where the vocabulary
    fits, phrase offsets as 32-bit numbers, and an index of the phrases' 64-bit hashes kept as
    32-bit keys (:func:`index_key`, sorted) with the entry of each; a lookup's candidates are confirmed by the
    full 64-bit hash computed from the tokens, so matches are exactly those of a full-hash index.
    """

    vocab: list[str]
    word_ids: dict[str, int]
    ref_tokens: np.ndarray  # uint16/uint32, concatenated phrase-1 tokens
    ref_offsets: np.ndarray  # uint32 (int64 for huge tables), len = entries + 1
    para_tokens: np.ndarray
    para_offsets: np.ndarray
    ref_hash_high: np.ndarray  # uint32: index keys (:func:`index_key`) of the phrase-1 hashes, sorted
    ref_hash_order: np.ndarray  # uint32: entry index of each sorted hash
    source: str
    digest: str

    def __len__(self) -> int:
        return len(self.ref_offsets) - 1

    def _phrase_hash(self, entries: np.ndarray, para: bool) -> np.ndarray:
        """The 64-bit hashes (:func:`phrase_hashes`) of the entries' phrases (``para``: the paraphrases)."""
        tokens, offsets = (self.para_tokens, self.para_offsets) if para else (self.ref_tokens, self.ref_offsets)
        starts = offsets[entries].astype(np.int64)
        lens = offsets[entries + 1].astype(np.int64) - starts
        h = np.zeros(len(entries), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for pos in range(MAX_PHRASE):
                m = lens > pos
                if not m.any():
                    break
                h[m] = h[m] * _HASH_P + (np.asarray(tokens[starts[m] + pos]).astype(np.uint64) + np.uint64(1))
        return h

    def lookup(self, hashes: np.ndarray, confirm: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(row, entry)``: every table entry whose phrase has the 64-bit hash ``hashes[row]`` (rows ascending,
        the entries of a row in file order). ``confirm=False`` leaves out the check of the full hash, for
        callers that compare the tokens anyway: then entries whose index key merely equals are included."""
        keys = index_key(hashes)
        by_key = np.argsort(keys)  # sorted queries search the (memory-mapped) index with locality
        index = self.ref_hash_high
        if len(index) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        lo = np.empty(len(keys), np.int64)
        lo[by_key] = np.searchsorted(index, keys[by_key], "left")
        hit = np.flatnonzero(np.asarray(index[lo.clip(max=len(index) - 1)]) == keys)
        hi = lo.copy()  # where each hit's run of equal keys ends (searched for the hits only: most queries miss)
        hi[hit] = np.searchsorted(index, keys[hit], "right")
        if len(hit) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        counts = (hi - lo)[hit]
        row = np.repeat(hit, counts)  # the index is sorted stably by key: equal keys keep the file order
        entry = np.asarray(self.ref_hash_order[_arrays.ranges(lo[hit], counts)]).astype(np.int64)
        if confirm:
            ok = self._phrase_hash(entry, para=False) == hashes[row]
            row, entry = row[ok], entry[ok]
        return row, entry

    def flat_ids(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """The sentences' token ids in the table's vocabulary, one after the other, with -1 after each
        sentence and for words the table does not know (so no n-gram spans two sentences)."""
        flat: list[str | None] = []
        for s in sentences:
            flat.extend(s)
            flat.append(None)
        return np.fromiter(map(self.word_ids.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))

    def select(self, sentences: list[list[str]]) -> list[tuple[int, tuple[str, ...], tuple[str, ...]]]:
        """Entries whose two phrases both occur among the n-grams of ``sentences`` (file order)."""
        ids = self.flat_ids(sentences)
        if len(ids) == 0:
            return []
        grams = ngram_hashes(ids)
        grams = grams[np.concatenate(([True], grams[1:] != grams[:-1]))]  # sorted -> distinct
        _rows, entries = self.lookup(grams)
        if len(entries) == 0:
            return []
        h2 = self._phrase_hash(entries, para=True)
        pos = np.searchsorted(grams, h2).clip(max=len(grams) - 1)
        entries = np.sort(entries[grams[pos] == h2])
        vocab = self.vocab

        def phrases(tokens: np.ndarray, offsets: np.ndarray) -> list[tuple[str, ...]]:
            starts = offsets[entries].astype(np.int64)
            lens = offsets[entries + 1].astype(np.int64) - starts
            flat = np.asarray(tokens[_arrays.ranges(starts, lens)]).tolist()
            words = [vocab[t] for t in flat]
            out_p, pos = [], 0
            for n in lens.tolist():
                out_p.append(tuple(words[pos:pos + n]))
                pos += n
            return out_p

        if len(entries) == 0:
            return []
        ref_p = phrases(self.ref_tokens, self.ref_offsets)
        para_p = phrases(self.para_tokens, self.para_offsets)
        out = list(zip(entries.tolist(), ref_p, para_p))
        return out

    def sentence_matches(self, sentences: list[tuple[str, ...]]) -> SentenceMatches | None:
        """The table as the compiled aligner needs it for these sentences, computed with array operations.

        For each sentence: its table phrases whose paraphrase occurs in some sentence of the batch
        (start, length, entry number, paraphrase id; by start, length, entry - the order of
        ``ParaphraseIndex.phrase_index``) and the places where those paraphrases occur (paraphrase id,
        start; the positions of ``ParaphraseIndex.ngram_positions``). Hashes only propose matches:
        each is confirmed token by token. ``None`` in the (never seen) case of two different n-grams
        of the batch with one 64-bit hash; the caller then takes the exact Python path.
        """
        i64 = np.int64
        lens = np.fromiter(map(len, sentences), dtype=i64, count=len(sentences))
        ids = self.flat_ids(sentences)
        first = _arrays.offsets(lens + 1)  # flat position of each sentence's first token
        sent_of = np.repeat(np.arange(len(sentences), dtype=i64), lens + 1)
        bad = np.flatnonzero(ids < 0)
        run = bad[np.searchsorted(bad, np.arange(len(ids)))] - np.arange(len(ids))  # known tokens from here
        g_pos, g_len, g_hash = [], [], []
        for n, h in ngram_hash_levels(ids):
            starts = np.flatnonzero(run[: len(h)] >= n)  # n-grams of known words within one sentence
            if len(starts) == 0:
                break
            g_pos.append(starts)
            g_len.append(np.full(len(starts), n, dtype=i64))
            g_hash.append(h[starts])
        empty = SentenceMatches(np.zeros(len(sentences) + 1, i64), np.zeros((0, 4), i64),
                                np.zeros(len(sentences) + 1, i64), np.zeros((0, 2), i64), np.zeros(0, i64))
        if not g_pos:
            return empty
        pos, glen, ghash = np.concatenate(g_pos), np.concatenate(g_len), np.concatenate(g_hash)
        # group equal hashes: ``order`` lists the n-grams by hash, group g spans order[gs[g]:gs[g + 1]]
        order = np.argsort(ghash)  # (the output is sorted below by keys that do not depend on this order)
        sh = ghash[order]
        head = np.flatnonzero(np.concatenate(([True], sh[1:] != sh[:-1])))
        dh = sh[head]  # distinct hashes, sorted
        gs = np.append(head, len(sh))
        rep = order[head]  # the first n-gram of each group stands for it; the others are checked below

        def spell(at, n, tokens, offsets, entry) -> np.ndarray:
            """n-grams at flat positions ``at`` (length ``n``) equal to the entries' phrases."""
            start = offsets[entry].astype(np.int64)
            ok = offsets[entry + 1].astype(np.int64) - start == n
            for k in range(MAX_PHRASE):
                m = ok & (n > k)
                ok[m] = ids[at[m] + k] == np.asarray(tokens[start[m] + k])
            return ok

        def expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """(row, index) for every index in [lo[row], hi[row])."""
            return np.repeat(np.arange(len(lo), dtype=i64), hi - lo), _arrays.ranges(lo, hi - lo)

        # distinct n-grams that are table phrases, with their entries, confirmed token by token
        grp, entry = self.lookup(dh, confirm=False)  # the tokens are compared next
        ok = spell(pos[rep[grp]], glen[rep[grp]], self.ref_tokens, self.ref_offsets, entry)
        grp, entry = grp[ok], entry[ok]
        # ... whose paraphrase is one of the batch's n-grams (its group ``pgrp``)
        phash = self._phrase_hash(entry, para=True)
        pgrp = np.searchsorted(dh, phash).clip(max=len(dh) - 1)
        ok = dh[pgrp] == phash
        grp, entry, pgrp = grp[ok], entry[ok], pgrp[ok]
        ok = spell(pos[rep[pgrp]], glen[rep[pgrp]], self.para_tokens, self.para_offsets, entry)
        grp, entry, pgrp = grp[ok], entry[ok], pgrp[ok]
        if len(entry) == 0:
            return empty
        # every n-gram of a group used here must spell its representative (no hash collision in the batch)
        used = _arrays.distinct(np.concatenate((grp, pgrp)))
        u_row, u_k = expand(gs[used], gs[used + 1])
        member, first_of = order[u_k], rep[used[u_row]]
        same = glen[member] == glen[first_of]
        for k in range(MAX_PHRASE):
            m = same & (glen[member] > k)
            same[m] = ids[pos[member[m]] + k] == ids[pos[first_of[m]] + k]
        if not same.all():
            return None
        # paraphrase ids: the groups that are paraphrases, numbered in hash order
        para_groups, pid = np.unique(pgrp, return_inverse=True)
        para_len = glen[rep[para_groups]].astype(i64)
        # rows: every n-gram of a phrase group x its entries; every n-gram of a paraphrase group
        e_order = np.argsort(grp, kind="stable")  # a group's entries stay in file order
        grp, entry, pid = grp[e_order], entry[e_order], pid[e_order]
        e_head = np.flatnonzero(np.concatenate(([True], grp[1:] != grp[:-1])))
        u_grp, u_count = grp[e_head], np.diff(np.append(e_head, len(grp)))
        # the phrase groups' n-grams, by (position, length) - unique - then each one's entries in file order:
        # the rows come out ordered by (sentence, start, length, entry) with no sort of the rows themselves
        m_row, m_k = expand(gs[u_grp], gs[u_grp + 1])
        m_at, m_len = pos[order[m_k]], glen[order[m_k]]
        by_place = np.argsort(m_at * (MAX_PHRASE + 1) + m_len)
        m_row, m_at, m_len = m_row[by_place], m_at[by_place], m_len[by_place]
        cnt = u_count[m_row]
        e_at = _arrays.ranges(e_head[m_row], cnt)
        at = np.repeat(m_at, cnt)
        p_sent = sent_of[at]
        phr = np.empty((len(at), 4), dtype=i64)
        phr[:, 0] = at - first[p_sent]
        phr[:, 1] = np.repeat(m_len, cnt)
        phr[:, 2] = entry[e_at]
        phr[:, 3] = pid[e_at]
        o_row, o_k = expand(gs[para_groups], gs[para_groups + 1])
        o_at = pos[order[o_k]]
        o_sent = sent_of[o_at]
        # sorted by (sentence, paraphrase id, start): keys distinct, one sort of a number made of them where
        # it fits in 64 bits
        n_pid, width = len(para_groups) + 1, int(lens.max(initial=0)) + 1
        o_start = o_at - first[o_sent]
        if (len(sentences) + 1) * n_pid * width < 2**62:
            occ_order = np.argsort((o_sent * n_pid + o_row) * width + o_start)
        else:
            occ_order = np.lexsort((o_start, o_row, o_sent))
        occ = np.stack([o_row[occ_order], o_start[occ_order]], axis=1)
        o_sent = o_sent[occ_order]
        phr_ptr = _arrays.offsets(np.bincount(p_sent, minlength=len(sentences)))
        occ_ptr = _arrays.offsets(np.bincount(o_sent, minlength=len(sentences)))
        return SentenceMatches(phr_ptr, np.ascontiguousarray(phr, dtype=i64), occ_ptr,
                               np.ascontiguousarray(occ, dtype=i64), para_len)


@dataclass
class SentenceMatches:
    """Per-sentence paraphrase data of a batch (CSR arrays), see :meth:`ParaphraseTable.sentence_matches`."""

    phr_ptr: np.ndarray
    phr: np.ndarray  # (start, length, entry number, paraphrase id)
    occ_ptr: np.ndarray
    occ: np.ndarray  # (paraphrase id, start)
    para_len: np.ndarray


def _not_a_table(path: Path, why: str) -> Exception:
    from connote.core.errors import InputError

    return InputError(f"not a METEOR paraphrase table ({why}); expected gzip text with three lines per entry: "
                      "probability, phrase, paraphrase (as pycocoevalcap's data/paraphrase-en.gz)", path=path)


#: Decompressed bytes of the paraphrase table read and encoded at a time: the whole file as Python lines and
#: token lists took ~2.5 GB at its peak (the first ``vist demo`` of a clone went past 3 GB); blocks of this
#: size keep the one-time build under ~0.5 GB.
PARSE_BLOCK_BYTES = 16 << 20


def _parse_table(path: Path) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    vocab: dict[bytes, int] = {}
    parts: dict[str, list[np.ndarray]] = {"ref_ids": [], "ref_len": [], "para_ids": [], "para_len": []}

    def encode(phrases: list[bytes], side: str) -> None:
        parts[f"{side}_len"].append(np.fromiter((len(p.split()) for p in phrases), dtype=np.int64,
                                                count=len(phrases)))
        toks = b" ".join(phrases).split()
        parts[f"{side}_ids"].append(np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks), dtype=np.int32,
                                                count=len(toks)))

    n_lines, rest = 0, []
    try:
        with gzip.open(path, "rb") as fh:
            while True:
                block = fh.readlines(PARSE_BLOCK_BYTES)
                if not block:
                    break
                lines = rest + block
                whole = len(lines) - len(lines) % 3  # entries of three lines; a split one waits for the next block
                lines, rest = lines[:whole], lines[whole:]
                _check_entries(path, lines, n_lines)
                encode(lines[1::3], "ref")
                encode(lines[2::3], "para")
                n_lines += whole
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise _not_a_table(path, f"cannot read it as gzip: {exc}") from None
    if rest or not n_lines:
        raise _not_a_table(path, f"{n_lines + len(rest)} lines, not a multiple of 3")
    ref_ids, para_ids = (np.concatenate(parts[f"{side}_ids"]) for side in ("ref", "para"))
    ref_off, para_off = (_arrays.offsets(np.concatenate(parts[f"{side}_len"])) for side in ("ref", "para"))
    if max(np.diff(ref_off).max(initial=0), np.diff(para_off).max(initial=0)) > MAX_PHRASE:
        raise _not_a_table(path, f"a phrase longer than {MAX_PHRASE} words")
    # number the words as a whole-file pass numbers them (every phrase's words, then every paraphrase's, in file
    # order), so the arrays and the cache are the same whatever the block size
    first = np.full(len(vocab), ref_ids.size + para_ids.size, dtype=np.int64)
    for offset, ids in ((0, ref_ids), (ref_ids.size, para_ids)):
        seen, at = np.unique(ids, return_index=True)
        first[seen] = np.minimum(first[seen], at + offset)
    order = np.argsort(first, kind="stable")
    renumber = np.empty(len(vocab), dtype=np.int32)
    renumber[order] = np.arange(len(vocab), dtype=np.int32)
    by_id = list(vocab)
    words = [by_id[k].decode("utf-8", errors="replace") for k in order]
    return words, renumber[ref_ids], ref_off, renumber[para_ids], para_off


def _check_entries(path: Path, lines: list[bytes], first_line: int) -> None:
    """The first 1000 entries each start with a probability and hold two phrases (line numbers from 1)."""
    for k in range(0, min(len(lines), max(0, 3000 - first_line)), 3):
        try:
            float(lines[k])
        except ValueError:
            raise _not_a_table(path, f"line {first_line + k + 1} is not a probability") from None
        if not lines[k + 1].split() or not lines[k + 2].split():
            empty = k + 2 if not lines[k + 1].split() else k + 3
            raise _not_a_table(path, f"line {first_line + empty} is an empty phrase")


_TABLES: dict[str, ParaphraseTable] = {}
CACHE_VERSION = "v6"
_CACHE_FILES = ("ref_tokens", "ref_offsets", "para_tokens", "para_offsets", "ref_hash_high", "ref_hash_order")


def _read_cache(cache: Path, source: Path) -> ParaphraseTable | None:
    if not (cache / "complete").is_file():
        return None
    try:  # memory-mapped: loading costs nothing, pages are read when touched
        arrays = {n: np.load(cache / f"{n}.npy", mmap_mode="r", allow_pickle=False) for n in _CACHE_FILES}
        words = (cache / "vocab.txt").read_text(encoding="utf-8").split("\n")
        meta = json.loads((cache / "source.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ParaphraseTable(words, dict(zip(words, range(len(words)))), arrays["ref_tokens"], arrays["ref_offsets"],
                           arrays["para_tokens"], arrays["para_offsets"], arrays["ref_hash_high"],
                           arrays["ref_hash_order"], str(source), str(meta["digest"]))


def _write_cache(cache: Path, source: Path, table: ParaphraseTable) -> None:
    """Write the cache atomically and remove the caches of earlier versions or states of the same file."""
    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    arrays = {"ref_tokens": table.ref_tokens, "ref_offsets": table.ref_offsets, "para_tokens": table.para_tokens,
              "para_offsets": table.para_offsets, "ref_hash_high": table.ref_hash_high,
              "ref_hash_order": table.ref_hash_order}
    for n, a in arrays.items():
        np.save(tmp / f"{n}.npy", a, allow_pickle=False)
    (tmp / "vocab.txt").write_text("\n".join(table.vocab), encoding="utf-8")
    (tmp / "source.json").write_text(json.dumps({"path": str(source), "digest": table.digest,
                                                 "version": CACHE_VERSION}), encoding="utf-8")
    (tmp / "complete").write_text("ok", encoding="utf-8")
    if cache.exists():
        shutil.rmtree(cache, ignore_errors=True)
    os.replace(tmp, cache)
    for old in cache.parent.glob("paraphrase-*"):
        if old == cache or not old.is_dir():
            continue
        stale = not old.name.startswith(f"paraphrase-{CACHE_VERSION}-")  # an earlier layout
        if not stale:
            try:
                stale = json.loads((old / "source.json").read_text(encoding="utf-8")).get("path") == str(source)
            except (OSError, ValueError):
                stale = ".tmp" not in old.name
        if stale:
            shutil.rmtree(old, ignore_errors=True)


def build_paraphrase_table(path: Path) -> ParaphraseTable:
    """Parse a paraphrase table file into the compact arrays (~20-30 s for paraphrase-en.gz)."""
    words, r, ro, pa, po = _parse_table(path)
    tok_type = np.uint16 if len(words) <= np.iinfo(np.uint16).max else np.uint32
    digest = file_sha256(path)
    keys = index_key(phrase_hashes(r, ro))
    order = np.argsort(keys, kind="stable")
    high = keys[order]
    off_type = np.uint32 if max(ro[-1], po[-1]) <= np.iinfo(np.uint32).max else np.int64
    return ParaphraseTable(words, dict(zip(words, range(len(words)))), r.astype(tok_type), ro.astype(off_type),
                           pa.astype(tok_type), po.astype(off_type), high, order.astype(np.uint32), str(path), digest)


def load_paraphrase_table(path: str | os.PathLike[str]) -> ParaphraseTable:
    """Load a METEOR paraphrase table, building the compact cache on first use (~30 s once).

    The cache (``~/.cache/connote/meteor/paraphrase-v6-*``, ~120 MB for paraphrase-en.gz) is keyed by the
    file's path, size and modification time; a file that is not a paraphrase table raises InputError.
    """
    p = Path(path).resolve()
    st = p.stat()
    key = f"{p}:{st.st_size}:{int(st.st_mtime)}"
    if key in _TABLES:
        return _TABLES[key]
    tag = hashlib.sha1(key.encode()).hexdigest()[:16]
    cache = cache_dir() / f"paraphrase-{CACHE_VERSION}-{tag}"
    table = _read_cache(cache, p)
    if table is None:
        import sys

        print(f"METEOR: indexing {p.name} once (~30 s, ~120 MB; cached in {cache.parent})", file=sys.stderr,
              flush=True)
        table = build_paraphrase_table(p)
        try:
            _write_cache(cache, p, table)
        except OSError:  # a read-only home still scores, just without the cache
            pass
    _TABLES[key] = table
    return table


def find_paraphrase_file(meteor_dir: Path | None, short_language: str,
                         explicit: str | os.PathLike[str] | None = None) -> Path | None:
    if explicit:
        p = Path(explicit)
        return p if p.is_file() else None
    if meteor_dir is None:
        return None
    p = meteor_dir / "data" / f"paraphrase-{short_language}.gz"
    return p if p.is_file() else None
