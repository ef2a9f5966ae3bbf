"""The Snowball stemmer against the jar's on every word of the VIST sample and on made-up words built to hit
each step's suffixes and the y/Y rules (the stemmer's fast paths skip steps by suffix tests)."""

from __future__ import annotations

import itertools
import subprocess

from connote.metrics.meteor._stem import _STEP2, _STEP3, _STEP4, stem


def test_stemmer_matches_jar_on_the_whole_vist_vocabulary_and_suffix_words(java, pycoco, vist_album_corpus):
    res, gts = vist_album_corpus
    words = {w for v in list(gts.values()) + list(res.values()) for s in v for w in s.split() if w.isalpha()}
    suffixes = [s for s, _ in _STEP2] + [s for s, _ in _STEP3] + list(_STEP4)
    suffixes += ["eedly", "ingly", "edly", "eed", "ing", "ed", "sses", "ied", "ies", "us", "ss", "s", "y", "e", "l"]
    for stem_, suf in itertools.product(["b", "ab", "bat", "gener", "commun", "arsen", "sayy", "yay", "oy"],
                                        suffixes):
        words.add(stem_ + suf)
    words = sorted(words)
    assert len(words) > 3000
    jar = pycoco / "meteor" / "meteor-1.5.jar"
    out = subprocess.run([java, "-cp", str(jar), "Stemmer", "en"], input="\n".join(words) + "\n",
                         capture_output=True, text=True, timeout=120).stdout.splitlines()
    assert len(out) == len(words)
    wrong = [(w, stem(w), j) for w, j in zip(words, out) if stem(w) != j]
    assert wrong == []
