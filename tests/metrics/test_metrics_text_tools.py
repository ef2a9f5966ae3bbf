"""PTB tokenization without Java, WordNet location/preparation."""

from __future__ import annotations

import subprocess

import pytest

from connote.metrics.tokenize import PUNCTUATIONS, ptb_tokenize
from connote.metrics.wordnet import LEXNAMES, find_wordnet, load_wordnet_tables, prepare_nltk_wordnet
from tests.support.needs import missing

SENTENCES = [
    'A man (in red) said "Hi!" to me.',
    "I don't know, it's John's; cannot gonna.",
    "The U.S. costs $3.50 -- a well-known fact...",
    "cafe caf\u00e9 na\u00efve 50% a/b & c; d: e? [x] {y}",
    "He said 'ok' and left... Mr. Smith's dog's toy",
    "Two dogs are playing in the snow.",
    "A group of people standing around a kitchen.",
    "It's 5 o'clock and I can't, won't, shouldn't go.",
    "Rock'n'roll isn't dead; we're gonna dance 'til dawn!",
    "She paid $1,000.50 for a 3-D TV at 8:30 a.m. on Jan. 5th.",
    '"Wow," he said. "That\'s amazing!"',
    "What?! No way!!! Really???",
    "e.g. cats, dogs, etc. are pets i.e. animals.",
    "He's the CEO of Acme Inc. and lives in the U.K.",
    "We'd've gone if y'all had asked.",
    "I <3 NY :) #love @friend http://example.com/a?b=c",
    "Caf\u00e9 owners serve cr\u00e8me br\u00fbl\u00e9e.",
    "A U.K.-based firm, a U.S.-led team and an A.B.C.-owned shop; e.g.-style notes, Mr.-Smith.",
    "the U.K.- based firm",
]


def test_ptb_tokenize_matches_stanford_jar(java, pycoco, tmp_path):
    jar = pycoco / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SENTENCES), encoding="utf-8")
    out = subprocess.run([java, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines",
                          "-lowerCase", str(src)], capture_output=True, text=True, encoding="utf-8",
                         timeout=120).stdout.splitlines()
    expected = [" ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS) for line in out]
    assert [ptb_tokenize(s) for s in SENTENCES] == expected[: len(SENTENCES)]


def test_ptb_tokenize_examples():
    assert ptb_tokenize("A dog's bone, isn't it?") == "a dog 's bone is n't it"
    assert ptb_tokenize("Line one\nline two.") == "line one line two"


def test_find_wordnet_and_tables():
    wn = find_wordnet()
    if wn is None:
        missing("no WordNet 3.0 files (apt-get install wordnet-base)")
    tables = load_wordnet_tables(wn)
    assert set(tables.synsets["car"]) & set(tables.synsets["automobile"])
    assert "mouse" in tables.bases["mice"]


def test_prepare_nltk_wordnet_writes_lexnames(tmp_path):
    wn = find_wordnet()
    if wn is None:
        missing("no WordNet 3.0 files (apt-get install wordnet-base)")
    dest = prepare_nltk_wordnet(tmp_path, wn)
    lex = (dest / "lexnames").read_text().splitlines()
    assert len(lex) == len(LEXNAMES) == 45 and lex[3].split("\t")[1] == "noun.Tops"
    assert find_wordnet(dest) == dest


@pytest.mark.slow
def test_nltk_reads_prepared_wordnet(tmp_path):
    wn = find_wordnet()
    if wn is None:
        missing("no WordNet 3.0 files")
    prepare_nltk_wordnet(tmp_path, wn)
    import os
    import sys

    env = dict(os.environ, NLTK_DATA=str(tmp_path))
    code = "from nltk.corpus import wordnet as wn; print(wn.synsets('dog')[0].name())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "dog.n.01", out.stderr[-2000:]
