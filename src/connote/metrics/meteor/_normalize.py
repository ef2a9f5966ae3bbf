"""Tokenization / punctuation normalization equivalent to METEOR 1.5's ``-norm`` option.

METEOR's normalizer is a Moses-style tokenizer: it separates punctuation, splits contractions
("don't" -> "don 't"), keeps non-breaking prefixes ("Mr.") and collapses whitespace. The rules
below follow the documented behaviour of the jar (checked against it on real text); character
classes are ASCII/Latin/Cyrillic as in the jar, and ``\\s`` means ASCII whitespace only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e\u0400-\u04ff"
          "\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
_ALNUM = "0-9" + _ALPHA
_JSPACE = " \t\n\x0b\f\r"  # what Java's \s means

_SEP_OTHER = re.compile(f"([^{_ALNUM}{_JSPACE}.'`,\\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.(\.+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])", re.S)
_COMMA = re.compile(r"([^0-9]),([^0-9])", re.S)
_COMMA2 = re.compile(r"([0-9]),([^0-9])", re.S)
_COMMA3 = re.compile(r"([^0-9]),([0-9])", re.S)
_QUOTE = re.compile("[`\u2018\u2019]")
_QUOTE2 = re.compile("[\u201c\u201d]|''")
_RM_DASH = re.compile(f"([{_ALNUM}.])-([{_ALNUM}])")
_CONT_EN = re.compile(f"([^{_ALPHA}])'([^{_ALPHA}])", re.S)
_CONT_EN2 = re.compile(f"([^{_ALPHA}0-9])'([{_ALPHA}])", re.S)
_CONT_EN3 = re.compile(f"([{_ALPHA}])'([^{_ALPHA}])", re.S)
_CONT_EN4 = re.compile(f"([{_ALPHA}])'([{_ALPHA}])")
_CONT_EN5 = re.compile(r"([0-9])'(s)")
_PUNCT_STRIP = re.compile(f"[^{_ALNUM}]")
_WHITE = re.compile("[ \u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_HAS_ALPHA = re.compile(f"[{_ALPHA}]")
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")


def java_tokens(text: str) -> list[str]:
    """Split like ``java.util.StringTokenizer`` (space, tab, newline, CR, form feed)."""
    if text.isprintable():  # no whitespace but " " (str.split would also split at other Unicode spaces)
        return text.split()
    return [t for t in _TOKEN_SPLIT.split(text) if t]


def java_trim(text: str) -> str:
    """``String.trim()``: strip characters <= U+0020 from both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def parse_nonbreaking_prefixes(text: str) -> dict[str, int]:
    """Non-breaking prefix list: prefix -> 1 (any context) or 2 (only before a number)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = java_tokens(line)
        if not parts or parts[0].startswith("#"):
            continue
        out[parts[0]] = 2 if len(parts) > 1 and parts[1] == "#NUMERIC_ONLY#" else 1
    return out


def _sub_repeated(pattern: re.Pattern[str], repl: str, text: str) -> str:
    # Java's replaceAll scans left to right without overlap, like re.sub.
    return pattern.sub(repl, text)


def normalize_line(text: str, prefixes: Mapping[str, int], *, keep_punctuation: bool = True,
                   english: bool = True) -> str:
    """Normalize one line as METEOR's ``-norm`` does (before lower-casing).

    >>> normalize_line("Don't stop, Mr. Smith...", {"Mr": 1})
    "Don 't stop , Mr. Smith ..."
    """
    # each pass runs only where its pattern can match (most text has no quotes, dashes, ...)
    s = _SEP_OTHER.sub(r" \1 ", f" {text} ")
    if ".." in s:
        s = _MULTI_DOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", s).replace("DOTMULTI.", "DOTDOTMULTI")
    if "," in s:
        s = _COMMA.sub(r"\1 , \2", s)
        s = _COMMA2.sub(r"\1 , \2", s)
        s = _COMMA3.sub(r"\1 , \2", s)
    if "`" in s or "\u2018" in s or "\u2019" in s:
        s = _QUOTE.sub("'", s)
    if "\u201c" in s or "\u201d" in s or "''" in s:
        s = _QUOTE2.sub(' " ', s)
    if "-" in s or "\u2013" in s:
        s = s.replace("\u2013", "-").replace("--", "-")
        s = _RM_DASH.sub(r"\1 \2", s)
    if "'" in s:
        if english:
            s = _CONT_EN.sub(r"\1 ' \2", s)
            s = _CONT_EN2.sub(r"\1 ' \2", s)
            s = _CONT_EN3.sub(r"\1 ' \2", s)
            s = _CONT_EN4.sub(r"\1 '\2", s)
            s = _CONT_EN5.sub(r"\1 '\2", s)
        else:
            s = s.replace("'", " ' ")
    tokens = java_tokens(s)
    if "." in s:  # tokens ending in a period: a non-breaking prefix, an abbreviation or a full stop
        last = len(tokens) - 1
        for j in [j for j, tok in enumerate(tokens) if len(tok) > 1 and tok[-1] == "."]:
            tok = tokens[j]
            pre = tok[:-1]
            kind = prefixes.get(pre)
            if "." in pre and _HAS_ALPHA.search(pre):
                tokens[j] = tok.replace(".", "")
            elif kind == 1 or (j < last and tokens[j + 1][:1].isascii() and tokens[j + 1][:1].islower()):
                pass
            elif kind == 2 and j < last and tokens[j + 1][:1].isdigit() and tokens[j + 1][:1].isascii():
                pass
            else:
                tokens[j] = pre + " ."
    s = " ".join(tokens)
    if "DOTMULTI" in s:
        while "DOTDOTMULTI" in s:
            s = s.replace("DOTDOTMULTI", "DOTMULTI.")
        s = s.replace("DOTMULTI", ".")
    if not keep_punctuation:
        s = _PUNCT_STRIP.sub(" ", s)
    if s.isprintable():  # then " " is its only whitespace
        return " ".join(s.split())
    return java_trim(_WHITE.sub(" ", s))
