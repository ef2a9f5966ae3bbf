"""The Snowball English ("Porter2") stemmer, as the Snowball Java build inside meteor-1.5.jar
applies it. Written from the published algorithm description so METEOR needs no NLTK import (which
costs seconds) and reproduces the jar's stems (e.g. "realization" -> "realiz").
"""

from __future__ import annotations

import re

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDING = frozenset("cdeghkmnrt")
_EXCEPTION1 = {"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie", "idly": "idl",
               "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
               "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos",
               "bias": "bias", "andes": "andes"}
_EXCEPTION2 = frozenset({"inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"})
_STEP2 = (("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"), ("iveness", "ive"),
          ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"), ("entli", "ent"), ("ation", "ate"),
          ("alism", "al"), ("aliti", "al"), ("ousli", "ous"), ("iviti", "ive"), ("fulli", "ful"),
          ("enci", "ence"), ("anci", "ance"), ("abli", "able"), ("izer", "ize"), ("ator", "ate"),
          ("alli", "al"), ("bli", "ble"), ("ogi", "og"), ("li", ""))
_STEP3 = (("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
          ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""))
_STEP4 = ("ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive",
          "ize", "ion", "al", "er", "ic")


_VOWEL_THEN_OTHER = re.compile("[aeiouy][^aeiouy]")
_VOWEL_THEN_Y = re.compile("([aeiouy])y")
# the suffixes each step looks for, as one tuple for str.endswith: most words end in none of them
_STEP0_ANY = ("'s'", "'s", "'")
_STEP1B = ("eedly", "ingly", "edly", "eed", "ing", "ed")
_STEP2_ANY = tuple(s for s, _ in _STEP2)
_STEP3_ANY = tuple(s for s, _ in _STEP3)


def _is_vowel(c: str) -> bool:
    return c in _VOWELS


def _region_after(word: str, start: int) -> int:
    """The position after the first non-vowel that follows a vowel at or after ``start``."""
    m = _VOWEL_THEN_OTHER.search(word, start)
    return m.end() if m is not None else len(word)


def _regions(word: str) -> tuple[int, int]:
    for prefix in ("gener", "commun", "arsen"):
        if word.startswith(prefix):
            r1 = len(prefix)
            break
    else:
        r1 = _region_after(word, 0)
    r2 = _region_after(word, r1) if r1 < len(word) else len(word)
    return r1, r2


def _short_syllable_at_end(word: str) -> bool:
    n = len(word)
    if n == 2:
        return _is_vowel(word[0]) and not _is_vowel(word[1])
    if n >= 3:
        return (not _is_vowel(word[-3]) and _is_vowel(word[-2]) and not _is_vowel(word[-1])
                and word[-1] not in "wxY")
    return False


def _has_vowel(s: str) -> bool:
    return not _VOWELS.isdisjoint(s)


def stem(word: str) -> str:
    """Stem one (lower-cased) English word.

    >>> [stem(w) for w in ("running", "generously", "realization", "skies")]
    ['run', 'generous', 'realiz', 'sky']
    """
    if len(word) <= 2:
        return word
    if word[0] == "'":
        word = word[1:]
    if word in _EXCEPTION1:
        return _EXCEPTION1[word]
    if word.startswith("y"):
        word = "Y" + word[1:]
    if "y" in word:  # a y after a vowel is a consonant (left to right: after such a Y, a y stays)
        word = _VOWEL_THEN_Y.sub(r"\1Y", word)
    r1, r2 = _regions(word)
    # step 0
    if word.endswith(_STEP0_ANY):
        for suf in _STEP0_ANY:
            if word.endswith(suf):
                word = word[: -len(suf)]
                break
    # step 1a
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ied") or word.endswith("ies"):
        word = word[:-2] if len(word) > 4 else word[:-1]
    elif word.endswith("us") or word.endswith("ss"):
        pass
    elif word.endswith("s"):
        if _has_vowel(word[:-2]):
            word = word[:-1]
    if word in _EXCEPTION2:
        return word
    # step 1b
    for suf in _STEP1B if word.endswith(_STEP1B) else ():
        if word.endswith(suf):
            if suf in ("eed", "eedly"):
                if len(word) - len(suf) >= r1:
                    word = word[: -len(suf)] + "ee"
            else:
                base = word[: -len(suf)]
                if _has_vowel(base):
                    word = base
                    if word.endswith(("at", "bl", "iz")):
                        word += "e"
                    elif word.endswith(_DOUBLES):
                        word = word[:-1]
                    elif r1 >= len(word) and _short_syllable_at_end(word):
                        word += "e"
            break
    # step 1c
    if len(word) > 2 and word[-1] in "yY" and not _is_vowel(word[-2]):
        word = word[:-1] + "i"
    # step 2
    for suf, rep in _STEP2 if word.endswith(_STEP2_ANY) else ():
        if word.endswith(suf):
            if len(word) - len(suf) >= r1:
                if suf == "ogi":
                    if word[-4:-3] == "l":
                        word = word[:-3] + rep
                elif suf == "li":
                    if word[-3:-2] and word[-3] in _LI_ENDING:
                        word = word[:-2]
                else:
                    word = word[: -len(suf)] + rep
            break
    # step 3
    for suf, rep in _STEP3 if word.endswith(_STEP3_ANY) else ():
        if word.endswith(suf):
            if len(word) - len(suf) >= r1:
                if suf == "ative":
                    if len(word) - len(suf) >= r2:
                        word = word[:-5]
                else:
                    word = word[: -len(suf)] + rep
            break
    # step 4
    for suf in _STEP4 if word.endswith(_STEP4) else ():
        if word.endswith(suf):
            if len(word) - len(suf) >= r2:
                if suf == "ion":
                    if word[-4:-3] in ("s", "t"):
                        word = word[:-3]
                else:
                    word = word[: -len(suf)]
            break
    # step 5
    if word.endswith("e"):
        if len(word) - 1 >= r2 or (len(word) - 1 >= r1 and not _short_syllable_at_end(word[:-1])):
            word = word[:-1]
    elif word.endswith("l"):
        if len(word) - 1 >= r2 and word[-2:-1] == "l":
            word = word[:-1]
    return word.replace("Y", "y")
