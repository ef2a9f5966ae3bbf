"""GROOViST's parts (Surikuchi et al., EMNLP 2023; akskuchi/groovist): noun phrases, concreteness weights, score.

As its public code computes them:

1. ``extract_nphrases.py``: per sentence, VIST's placeholders mapped to words (``[male]`` -> ``male``, ...), the
   spaCy noun chunks lower-cased, each once per sentence; the story's list is the sentences' lists in order;
2. ``utils.get_concreteness_ratings``: each phrase once per story, a phrase equal to an entry of its pronoun
   list (``data/all_pronouns.txt``, 122 entries: "no one", "each other", "there", "most", ...) dropped; the
   weight of a phrase is the mean rating of its words, split on spaces, each looked up as written and else by
   its WordNet noun lemma (nltk's ``WordNetLemmatizer``), 1 when none is rated ("ice-cream" is one unrated word);
3. ``utils.penalize_concretize_normalize``: ``s = 2.5 cos`` of a phrase's best alignment, below ``theta``
   replaced by ``-(theta - s)``, times its weight; the story's score is the mean.

What it runs that cannot run here is replaced and named in the signature: its spaCy pipeline
(``en_core_web_trf``, spacy-transformers) by the one given (default the packaged ``en_core_web_sm``); NLTK's
punkt sentences by the regex split of :mod:`connote.vist.story_text`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import text_lines
from connote.vist.story_text import placeholders_to_words, sentences

#: GROOViST's theta per dataset (its config.ini); ``custom`` is its value for other data.
GROOVIST_THETA = {"vist": 0.6159241924121119, "aesop": 0.5949957337433985, "vwp": 0.6193549522736276,
                  "custom": 0.5}
CLIP_SCALE = 2.5
#: The spaCy pipeline GROOViST's extract_nphrases.py loads.
RELEASE_PIPELINE = "en_core_web_trf"

PRONOUNS = frozenset(name.strip() for name in """
all|another|any|anybody|anyone|anything|as|aught|both|each|each other|either|enough|everybody|everyone|
everything|few|he|her|hers|herself|him|himself|his|I|i|idem|it|its|itself|many|me|mine|most|my|myself|naught|
neither|no one|nobody|none|nothing|nought|one|one another|other|others|ought|our|ours|ourself|ourselves|several|
she|some|somebody|someone|something|somewhat|such|suchlike|that|thee|their|theirs|theirself|theirselves|them|
themself|themselves|there|these|they|thine|this|those|thou|thy|thyself|us|we|what|whatever|whatnot|whatsoever|
whence|where|whereby|wherefrom|wherein|whereinto|whereof|whereon|wherever|wheresoever|whereto|whereunto|
wherewith|wherewithal|whether|which|whichever|whichsoever|who|whoever|whom|whomever|whomso|whomsoever|whose|
whosever|whosesoever|whoso|whosoever|ye|yon|yonder|you|your|yours|yourself|yourselves
""".split("|"))
"""GROOViST's ``data/all_pronouns.txt`` (122 entries, ``I`` and ``i`` both): a phrase equal to one is dropped."""


@dataclass(frozen=True)
class NounPhrase:
    """A phrase as GROOViST keeps it (lower-cased chunk text) and the sentence it was first found in."""

    text: str
    sentence: int


def pipeline_name(nlp: Any) -> str:
    """A spaCy pipeline's package name (``en_core_web_sm``), from its meta."""
    meta = getattr(nlp, "meta", None) or {}
    return f"{meta.get('lang', '?')}_{meta.get('name', type(nlp).__name__)}"


def noun_phrases(text: str, nlp: Any) -> list[NounPhrase]:
    """GROOViST's phrases of a story (steps 1-2 of the module docstring, without the weights)."""
    found: list[NounPhrase] = []
    seen: set[str] = set()
    for k, sent in enumerate(sentences(text)):
        chunks = dict.fromkeys(chunk.text.lower() for chunk in nlp(placeholders_to_words(sent)).noun_chunks)
        for phrase in chunks:
            if phrase not in seen and phrase not in PRONOUNS:
                seen.add(phrase)
                found.append(NounPhrase(phrase, k))
    return found


def read_concreteness(path: str | Path) -> dict[str, float]:
    """Concreteness ratings: ``Word;Conc.M`` (GROOViST's file) or Brysbaert et al.'s tab-separated table; words
    are kept as written (GROOViST looks its lower-cased phrases' words up as they are)."""
    path = Path(path)
    try:
        lines = text_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the concreteness ratings ({exc})", path=path) from None
    if not lines:
        raise InputError("empty concreteness ratings file", path=path)
    delim = ";" if ";" in lines[0] else ("\t" if "\t" in lines[0] else ",")
    rows = list(csv.reader(lines, delimiter=delim))
    header = [c.strip().lower() for c in rows[0]]
    i_word = header.index("word") if "word" in header else 0
    i_val = header.index("conc.m") if "conc.m" in header else 1
    out: dict[str, float] = {}
    for n, row in enumerate(rows[1:], 2):
        if len(row) <= max(i_word, i_val) or not row[i_word].strip():
            continue
        try:
            out[row[i_word].strip()] = float(row[i_val])
        except ValueError:
            raise InputError(f"rating {row[i_val]!r} is not a number", path=path, line=n) from None
    if not out:
        raise InputError("no ratings in this file (expected Word;Conc.M rows)", path=path)
    return out


def concreteness_weight(phrase: str, ratings: Mapping[str, float] | None,
                        lemmatize: Callable[[str], str] | None = None) -> float:
    """Mean rating of the phrase's space-separated words, each as written or else by its noun lemma
    (``lemmatize``: :func:`connote.metrics.wordnet.noun_lemmatizer`); 1 when no word is rated or no ratings."""
    if not ratings:
        return 1.0
    vals = []
    for word in phrase.strip().split(" "):
        if word in ratings:
            vals.append(ratings[word])
        elif lemmatize is not None and lemmatize(word) in ratings:
            vals.append(ratings[lemmatize(word)])
    return float(sum(vals) / len(vals)) if vals else 1.0


def groovist_score(phrase_alignment: Sequence[float], weights: Sequence[float], theta: float) -> float | None:
    """GROOViST from each phrase's best cosine and concreteness weight (step 3 of the module docstring)."""
    if not phrase_alignment:
        return None
    vals = []
    for cos, w in zip(phrase_alignment, weights):
        s = CLIP_SCALE * float(cos)
        vals.append((s if s >= theta else -(theta - s)) * float(w))
    return float(sum(vals) / len(vals))
