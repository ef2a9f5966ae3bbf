"""The compiled per-sentence work of METEOR (``_calign``: Java hashes, Snowball stems, synset lookup) against
the pure-Python functions it mirrors, on real words and awkward ones (no Java needed)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from connote.metrics.meteor import Meteor
from connote.metrics.meteor._align import java_hash
from connote.metrics.meteor._stem import stem

AWKWARD = ["", "'", "''", "'''", "'s", "'s'", "s'", "y", "yy", "ayy", "yay", "Yes", "YES", "eed", "'eed",
           "skis", "'skies", "inning", "innings", "generously", "generate", "communal", "arsenal", "ski's",
           "caf\u00e9", "na\u00efvet\u00e9s", "\u00fcber", "stra\u00dfe", "\u20ac100", "\U0001d518\U0001d51e",
           "\U0001f600s", "x" * 5000, "running" * 300, "n't", "let", "can't", "o'clock", "--", "...", "1990s",
           "zzzqqxx", "qwertyings", "flying", "feed", "agreed", "hoped", "hopping", "ties", "dies", "cries",
           "happily", "ogi", "li", "bli", "ation", "ational", "logi", "analogi", "ement", "sion", "tion", "ion",
           "ll", "fall", "rate", "bye", "\u0130stanbul", "\u00c9t\u00e9", "\u0434\u043e\u043c", "a\u0301"]


def _calign():
    from connote.metrics.meteor import _align

    if _align._calign is None or not hasattr(_align._calign, "word_hashes"):
        pytest.fail("the compiled METEOR extension is not built (python setup.py build_ext --inplace)")
    return _align._calign


def _random_words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    letters = "aeiouyYsltnedgrcmkbpfwx'-.\u00e9\u00fc\u20ac\U0001d518 "
    return ["".join(rng.choice(letters) for _ in range(rng.randint(0, 14))) for _ in range(n)]


@pytest.fixture(scope="module")
def words(vist_album_corpus, pycoco):
    res, gts = vist_album_corpus
    m = Meteor()
    vocab = {w for texts in (*res.values(), *gts.values()) for t in texts for w in m.tokenize(t)}
    vocab |= {w for t in list(res.values())[:200] for w in t[0].split()}  # not lower-cased
    table = m._aligner.synonyms.tables.synsets
    vocab |= {w.decode("utf-8") for w in table._words[::5]}
    return sorted(vocab) + AWKWARD + _random_words(20000, seed=3)


def test_compiled_java_hashes_and_stems_equal_the_python_ones(words):
    c = _calign()
    out = np.zeros(len(words), dtype=np.int64)
    c.word_hashes(words, False, out)
    assert out.tolist() == [java_hash(w) for w in words]
    c.word_hashes(words, True, out)
    want = [java_hash(stem(w)) for w in words]
    assert [w for w, a, b in zip(words, out.tolist(), want) if a != b] == []
    assert len({stem(w) for w in words}) > 10000  # the words have many different stems
    assert java_hash("n't") == java_hash("let")  # the clash the jar has, kept


def test_compiled_synset_lookup_equals_the_python_index(words):
    c = _calign()
    m = Meteor()
    index = m._aligner.synonyms
    table = index.tables.synsets
    ptr, ids = c.synset_rows(words, table.data, table.starts, index.tables.bases)
    ptr, ids = np.frombuffer(ptr, dtype=np.int64), np.frombuffer(ids, dtype=np.int64)
    got = [ids[ptr[i]:ptr[i + 1]].tolist() for i in range(len(words))]
    assert [w for w, g in zip(words, got) if g != sorted(index.synsets(w))] == []
    assert sum(1 for g in got if g) > 5000
    # a word UTF-8 cannot encode (a lone surrogate, which JSON allows): None, the Python path decides
    assert c.synset_rows(["ok", "\ud800"], table.data, table.starts, index.tables.bases) is None
    with pytest.raises(ValueError, match="line starts"):
        c.synset_rows(["ok"], table.data, table.starts[:-1], index.tables.bases)


def test_batch_counts_equal_without_the_compiled_word_features(vist_album_corpus, pycoco, monkeypatch):
    """An extension built before these functions existed (align_batch only): same counts."""
    from connote.metrics.meteor import _align

    c = _calign()
    res, gts = vist_album_corpus
    m = Meteor()
    ids = list(gts)[:120]
    pairs = [(tuple(m.tokenize(res[i][0])), tuple(m.tokenize(r))) for i in ids for r in gts[i]]
    pairs += [(tuple(AWKWARD), tuple(reversed(AWKWARD))), ((), ("caf\u00e9",)), (("ties", "'s"), ("tie", "s"))]
    fast = m._aligner.batch_counts(pairs)

    class Old:
        align_batch = staticmethod(c.align_batch)

    monkeypatch.setattr(_align, "_calign", Old)
    m2 = Meteor()
    old = m2._aligner.batch_counts(pairs)
    assert (fast == old).all()
    m2._aligner.compiled = False
    assert (m2._aligner.batch_counts(pairs) == fast).all()
    assert fast[:, 4 + 1].sum() > 0 and fast[:, 4 + 2].sum() > 0  # stem and synonym matches were counted


def _py_tokens(m: Meteor, text: str, lower: bool) -> list[str]:
    from connote.metrics.meteor._normalize import java_tokens, normalize_line

    s = normalize_line(text, m._prefixes, keep_punctuation=True)
    return java_tokens(s.lower() if lower else s)


def test_compiled_norm_tokens_equal_normalize_line(vist_album_corpus, pycoco):
    """The jar's -norm in C (printable ASCII text) = normalize_line + lower-casing + splitting, on the VIST
    stories and on generated text dense in what -norm rewrites (commas, quotes, dashes, periods, prefixes)."""
    c = _calign()
    m = Meteor()
    res, gts = vist_album_corpus
    texts = [t for v in (*res.values(), *gts.values()) for t in v]
    rng = random.Random(5)
    chars = "aAbZs09 .,'`-\"!?()[]$%&;:/#*+=<>@\\^_{|}~"
    texts += ["".join(rng.choice(chars) for _ in range(rng.randint(0, 25))) for _ in range(30000)]
    words = ("Mr. No. no. Art. 1. a.b. U.S. etc. 's n't it's 1990's rock-n-roll -- --- '' `` ' , 1,000 a,b ,a "
             "e.g. x. X. Jan. pp. p. Nos. the The 5 A").split()
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(0, 8))) for _ in range(20000)]
    texts += ["", " ", "x" * 100000, ". " * 5000, "Mr. Smith", "Mr. smith", "No. 5", "No. five", "end."]
    done = 0
    for t in texts:
        for lower in (True, False):
            got = c.norm_tokens(t, m._prefixes, lower)
            if got is not None:
                assert got == _py_tokens(m, t, lower), t
                done += 1
    assert done > 0.9 * 2 * len(texts)
    # left to Python: non-ASCII, control characters, runs of dots and DOTMULTI (the multi-dot passes)
    for t in ("caf\u00e9", "a\tb", "wait...", "a DOTMULTI b", "x\x7f"):
        assert c.norm_tokens(t, m._prefixes, True) is None


def test_tokenize_is_the_same_with_and_without_the_compiled_norm(vist_album_corpus, pycoco):
    res, gts = vist_album_corpus
    texts = [t for v in list(gts.values())[:300] for t in v] + ["Caf\u00e9 -- ok...", "It's 1,000 U.S. Dr. Who."]
    fast, slow = Meteor(), Meteor()
    slow._aligner.compiled = False
    assert fast._compiled_norm() and not slow._compiled_norm()
    assert [fast.tokenize(t) for t in texts] == [slow.tokenize(t) for t in texts]
    vist = Meteor.from_preset("vist")  # no -norm: the text is only split
    assert vist.tokenize("Don't stop, Mr. Smith.") == ["Don't", "stop,", "Mr.", "Smith."]


@pytest.mark.parametrize("data", [b"", b"a\n1 2\n", b"a\n1 2", b"a\n\nb\n3\n", b"\n\n\n", b"x\n"])
def test_synset_table_lines_are_those_of_split(data):
    from connote.metrics.meteor._resources import _SortedSynsets

    lines = data.split(b"\n")
    n = len(lines) // 2
    table = _SortedSynsets(data)
    assert list(table._words) == lines[0:2 * n:2] and list(table._offsets) == lines[1:2 * n:2]
    assert len(table) == n


def test_jar_synonym_tables_are_cached_decompressed_and_rebuilt_when_the_jar_changes(pycoco, tmp_path,
                                                                                    monkeypatch):
    import os
    import shutil

    from connote.metrics.meteor import _resources

    src = _resources.find_meteor_dir()
    jar_dir = tmp_path / "meteor"
    jar_dir.mkdir()
    shutil.copy(src / _resources.JAR_NAME, jar_dir / _resources.JAR_NAME)
    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path / "cache"))
    syn = _resources._read_from_jar(jar_dir, "synonym/english.synsets", binary=True)
    exc = _resources._read_from_jar(jar_dir, "synonym/english.exceptions")
    first = _resources._jar_synonym_data(jar_dir)
    assert first[0] == syn and first[2] == exc and first[1] is not None
    made = sorted((tmp_path / "cache" / "meteor").glob("synonyms-v1-*"))
    assert len(made) == 1 and (made[0] / "complete").is_file()

    def no_jar(*a, **k):
        raise AssertionError("read the jar although the cache holds its tables")

    monkeypatch.setattr(_resources, "_read_from_jar", no_jar)
    again = _resources._jar_synonym_data(jar_dir)
    assert again[0] == syn and again[2] == exc and (again[1] == first[1]).all()
    tables = _resources._jar_synonym_tables(jar_dir)
    assert tables.synsets.get("dog") == _resources._SortedSynsets(syn).get("dog") and tables.synsets.get("dog")
    monkeypatch.undo()
    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path / "cache"))
    st = os.stat(jar_dir / _resources.JAR_NAME)
    os.utime(jar_dir / _resources.JAR_NAME, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # "a new jar"
    assert _resources._jar_synonym_data(jar_dir)[0] == syn
    now = sorted((tmp_path / "cache" / "meteor").glob("synonyms-v1-*"))
    assert len(now) == 1 and now != made  # the entry of the earlier jar state is gone


def test_parallel_corpus_equals_one_process_and_survives_a_dead_worker(vist_album_corpus, pycoco, monkeypatch,
                                                                     tmp_path):
    """Forked workers + the calling process (claiming chunks as they go) give the one-process numbers; a
    worker that dies without its results has its chunks aligned by the caller."""
    import os

    import connote.metrics.meteor as meteor_mod

    res, gts = vist_album_corpus
    ids = list(gts)[:300]
    hyps, refs = [res[i][0] for i in ids], [gts[i] for i in ids]
    m = Meteor()
    one = m.corpus(hyps, refs, n_jobs=1)
    assert m.corpus(hyps, refs, n_jobs=2) == one
    assert m.corpus(hyps, refs, n_jobs=3) == one
    chunks = meteor_mod._guided_chunks(1008, 2)
    assert chunks[0] == (0, 252) and chunks[-1][1] == 1008 and all(b - a >= 32 for a, b in chunks[:-1])
    assert all(chunks[k][1] == chunks[k + 1][0] for k in range(len(chunks) - 1))

    def dies(*args):
        (tmp_path / f"died-{os.getpid()}").write_text("")
        os._exit(3)

    monkeypatch.setattr(meteor_mod, "_worker_loop", dies)
    assert m.corpus(hyps, refs, n_jobs=2) == one
    assert len(list(tmp_path.glob("died-*"))) == 1  # the worker ran (and died) in its own process


def test_without_the_extension_everything_runs_in_python_with_the_same_scores(vist_album_corpus, pycoco):
    """As on a machine without a C compiler (the import of ``_calign`` fails): same corpus and segment scores."""
    import json
    import subprocess
    import sys

    res, gts = vist_album_corpus
    ids = list(gts)[:80]
    hyps, refs = [res[i][0] for i in ids], [gts[i] for i in ids]
    code = ("import json, sys\nsys.modules['connote.metrics.meteor._calign'] = None\n"
            "from connote.metrics.meteor import Meteor, _norm_tokens, _align, _resources\n"
            "assert _align._calign is None and _norm_tokens is None and not _align.COMPILED\n"
            "h, r = json.load(sys.stdin)\nprint(json.dumps(Meteor().corpus(h, r, n_jobs=2)))\n")
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps([hyps, refs]), capture_output=True,
                         text=True, check=True)
    score, seg = json.loads(out.stdout)
    want = Meteor().corpus(hyps, refs, n_jobs=1)
    assert score == want[0] and seg == want[1]
