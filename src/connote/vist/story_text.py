"""How the reference-free story metrics cut a story: sentences, word tokens, VIST's placeholders.

The public code of RoViST, GROOViST and d_HM splits sentences with NLTK's punkt model, which needs a download;
here sentences end after ``.``, ``!`` or ``?`` followed by white space (VIST text is tokenized so, with a space
before the full stop), named ``sentences:regex`` in every signature. Words are ``\\w+`` runs (with an apostrophe
part) and single punctuation marks.

VIST's text replaces people's names and named entities with ``[male]``, ``[female]``, ``[location]``,
``[organization]``; RoViST-VG's ``extract_nouns.py`` and GROOViST's ``extract_nphrases.py`` map each to its word
before parsing a sentence (GROOViST's comment: "odd cases (obtained from RoViST-VG code)").
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]")

#: The placeholders both releases map to words, in the order they replace them.
PLACEHOLDER_WORDS = (("[male]", "male"), ("[female]", "female"), ("[location]", "location"),
                     ("[organization]", "organization"))


def sentences(text: str) -> list[str]:
    """Sentences of a story: split after ``.``/``!``/``?`` followed by white space; empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def words(sentence: str) -> list[str]:
    """Word tokens: ``\\w+`` runs (with an apostrophe part) and single punctuation marks."""
    return _WORD.findall(sentence)


def placeholders_to_words(sentence: str) -> str:
    """``[male] went to [location] .`` -> ``male went to location .`` (the releases' replacements)."""
    for placeholder, word in PLACEHOLDER_WORDS:
        sentence = sentence.replace(placeholder, word)
    return sentence
