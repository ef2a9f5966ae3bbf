"""VIST's judge rubrics (registered from :mod:`connote.vist.plugin`; the judge is :mod:`connote.tasks.judge`).

* ``share`` (stories): the VIST paper's human question, "If these were my photos, I would like using a story
  like this to share my experience with my friends", answered on a 1-5 agreement scale;
* ``pairwise`` (two stories of one photo sequence): which one is better, A or B (VHED-style preference).
"""

from __future__ import annotations

import re

from connote.tasks.judge import ParseError, Rubric, parse_rating


def parse_share(answer: str) -> dict[str, float]:
    return {"share": float(parse_rating(answer, 1, 5))}


#: The pairwise rubric's answer: the letter alone, or leading the reply as the answer ("B. Story B is better",
#: "Story A", "A is better", "**A**"), or stated ("Answer: B"). A reply that starts with a sentence ("A man went
#: ...", an echoed story) is no answer.
_CHOICE = re.compile(r"\W*(?:story\s+)?([AB])(?:\W*$|\s*[.:)!,*]|\s+[-\u2013\u2014]|\s+(?:is|was|because)\b)",
                     flags=re.IGNORECASE)
_STATED_CHOICE = re.compile(r"\b(?:answer|choice|prefer)\b\W*(?:is\W*)?(?:story\s+)?([AB])\b(?!\s+[a-z])",
                            flags=re.IGNORECASE)


def parse_pairwise(answer: str) -> dict[str, float]:
    text = answer.strip()
    m = _CHOICE.match(text) or _STATED_CHOICE.search(text)
    if not m:
        raise ParseError(f"expected A or B, got {answer[:80]!r}")
    return {"prefer_a": 1.0 if m.group(1).upper() == "A" else 0.0}


#: 2: the rating is read in its answer format (:func:`parse_rating`), no longer the first integer anywhere;
#: 3: a first line that is the rating alone ("4", then reasons) is the answer (v2 read it as a parse error), and the
#: scale's legend ("1 = strongly disagree") is not a stated rating
SHARE = Rubric("share", 3, "story", (
    "Here is a story written for the photos above.\n\nStory: {text}\n\n"
    "How strongly do you agree with this statement: \"If these were my photos, I would like using a story "
    "like this to share my experience with my friends.\"\n"
    "Answer with one number: 1 = strongly disagree, 2 = disagree, 3 = neutral, 4 = agree, 5 = strongly agree."),
    parse_share, 4)
#: 2: the letter is read as the answer, not the first "A" or "B" of any sentence ("A man went ..." is no answer)
PAIRWISE = Rubric("pairwise", 2, "story-pair", (
    "Here are two stories written for the photos above.\n\nStory A: {text}\n\nStory B: {text_b}\n\n"
    "Which story is better: better grounded in the photos, more coherent, and one you would rather share? "
    "Answer with one letter: A or B."), parse_pairwise, 4)
