"""VMC's judge rubric (registered from :mod:`connote.vmc.plugin`; the judge is :mod:`connote.tasks.judge`).

``vmc-a7`` (metaphor captions): the four binary criteria of the VMC paper's appendix A.7 - fluency (natural,
grammatical *and* following the "<primary> is as <property> as <secondary>" template), primary-concept
consistency, consistency with the whole video, creativity.
"""

from __future__ import annotations

import json
import re
from typing import Any

from connote.tasks.judge import ParseError, Rubric

A7 = ("fluency", "primary_concept_consistency", "consistency", "creativity")


def parse_a7(answer: str) -> dict[str, float]:
    text = answer.strip()
    obj: Any = None
    m = re.search(r"\{.*\}", text, flags=re.DOTALL)
    if m:
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            obj = None
    if not isinstance(obj, dict):
        obj = dict(re.findall(r"([a-z_ ]+)\s*[:=]\s*(yes|no|true|false|1|0)\b", text.lower()))
        obj = {k.strip().replace(" ", "_"): v for k, v in obj.items()}
    out = {}
    for c in A7:
        v = str(obj.get(c, "")).strip().lower()
        if v in ("yes", "true", "1"):
            out[c] = 1.0
        elif v in ("no", "false", "0"):
            out[c] = 0.0
        else:
            raise ParseError(f"no yes/no for {c} in {answer[:120]!r}")
    return out


VMC_A7 = Rubric("vmc-a7", 1, "caption", (
    "A system wrote this caption for the metaphor of a video advert (frames above, in order).\n\n"
    "Caption: {text}\n\nAnswer four yes/no questions:\n"
    "- fluency: is the caption natural and grammatical, and does it follow the template "
    "\"<primary concept> is as <property> as <secondary concept>\"?\n"
    "- primary_concept_consistency: does the caption name the video's primary concept correctly?\n"
    "- consistency: is the caption consistent with the whole video (both concepts and their relation)?\n"
    "- creativity: is the metaphor creative rather than an obvious comparison?\n"
    "Reply with JSON only, e.g. {{\"fluency\": \"yes\", \"primary_concept_consistency\": \"no\", "
    "\"consistency\": \"no\", \"creativity\": \"yes\"}}."), parse_a7, 64)
