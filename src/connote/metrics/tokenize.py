"""Java-free equivalent of pycocoevalcap's PTB tokenization (Stanford PTBTokenizer
``-preserveLines -lowerCase`` followed by removal of the punctuation tokens pycocoevalcap lists).

Behaviour reproduced: lower-casing; currency symbols as PTB writes them (cents, $, #); splitting of
clitics ("don't" -> "do n't", "john's" ->
"john 's", "cannot" -> "can not", "gonna" -> "gon na"); brackets become ``-lrb-``/``-rrb-``/...
(which pycocoevalcap, comparing against upper-case names, keeps); quotes, ``.``, ``,``, ``:``,
``;``, ``?``, ``!``, ``-``, ``--`` and ``...`` are removed; numbers such as ``3.50``/``5:30``,
abbreviations such as ``u.s.``/``mr.``, hyphenated words, e-mail addresses and URLs stay whole.
It is a close equivalent, not a port: the agreement with the jar is measured in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# pycocoevalcap's list (upper-case bracket names never match the lower-cased tokens, as there)
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":",
                          "-", "--", "...", ";"])
_BRACKETS = {"(": " -lrb- ", ")": " -rrb- ", "[": " -lsb- ", "]": " -rsb- ", "{": " -lcb- ", "}": " -rcb- "}
_CURRENCY = {"\u00a2": " cents ", "\u20ac": " $ ", "\u00a4": " $ ", "\u00a3": " # "}
_ABBREV = ("mr|mrs|ms|dr|prof|st|jr|sr|vs|etc|inc|ltd|co|corp|mt|ft|gen|gov|sen|rep|rev|capt|lt|col|sgt|"
           "jan|feb|mar|apr|aug|sept|sep|oct|nov|dec|no|vol|fig|dept|univ|ave|blvd")
_TOKEN = re.compile(
    r":?-(?:lrb|rrb|lsb|rsb|lcb|rcb)-"
    r"|\bo'clock\b|'n'|'til\b|\by'(?=\s|$)"
    r"|n[`']t\b|'(?:s|re|ll|ve|m|d)\b"
    # apostrophe words the PTB lexer keeps whole: d'/l'/o'/n' + 2 letters (d'oeuvres, o'lanterns), and a
    # vowel-final word + ' + vowel (ma'am); a lone d'/l'/j' before a letter is a token of its own
    r"|\b[dlon]'[^\W\d_]{2,}|\b[^\W\d_]+[aeiouy]'[aeiou][^\W\d_]*|\b[dlj]'(?=[^\W\d_])"
    r"|https?://\S+|www\.\S+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\d+(?:[.,:/]\d+)+"
    # an acronym keeps a hyphenated continuation, as the jar does ("u.k.-based", "a.b.c.-owned", "mr.-smith")
    r"|(?:[^\W\d_]\.){2,}(?:-\w+)+"
    r"|(?:[^\W\d_]\.){2,}"
    rf"|(?:{_ABBREV})\.(?:-\w+)+"
    rf"|(?:{_ABBREV})\.(?=\s|$)"
    # letters joined by periods stay one word (t.v, everyone.its); a single letter keeps its period (c.)
    r"|[^\W\d_]+(?:\.[^\W\d_]+)+|\b[^\W\d_]\.(?!\.)"
    r"|[#@]\w+"
    r"|\w+(?:[-/]\w+)*"
    r"|\.\.\.+|--+|[?!]{2,}|[^\w\s]",
)
_CLITICS = [
    (re.compile(r"(\w)(n[`']t)\b"), r"\1 \2"),
    (re.compile(r"(\w)'(s|re|ll|ve|m|d)\b"), r"\1 '\2"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"\b(gon|wan|got)(na|ta)\b"), r"\1 \2"),
]


def ptb_tokenize(text: str) -> str:
    """Tokenize and lower-case one caption the way pycocoevalcap's PTB step does.

    >>> ptb_tokenize("A man (in red) said \\"Hi!\\" -- I don't know.")
    "a man -lrb- in red -rrb- said hi i do n't know"
    """
    s = text.replace("\n", " ").lower().replace("\u2019", "'").replace("\u2018", "'")
    s = s.replace('"', " '' ").replace(":)", " :-rrb- ").replace(":(", " :-lrb- ")
    for sym, rep in _CURRENCY.items():  # PTB's currency normalization
        if sym in s:
            s = s.replace(sym, rep)
    s = re.sub(r"(\w)'n'(\w)", r"\1 'n' \2", s)
    s = re.sub(r"\by'(\w)", r"y' \1", s)
    for ch, rep in _BRACKETS.items():
        s = s.replace(ch, rep)
    for pat, rep in _CLITICS:
        s = pat.sub(rep, s)
    tokens = _TOKEN.findall(s)
    return " ".join(t for t in tokens if t not in PUNCTUATIONS)


def tokenize_corpus(texts: Mapping[str, Sequence[str]], method: str | None) -> dict[str, list[str]]:
    """Apply a tokenization (``None``/``"none"``: leave the text as it is, ``"ptb"``) to every text."""
    if method in (None, "none"):
        return {k: list(v) for k, v in texts.items()}
    if method == "ptb":
        return {k: [ptb_tokenize(t) for t in v] for k, v in texts.items()}
    raise ValueError(f"unknown tokenization {method!r}; valid: none, ptb")
