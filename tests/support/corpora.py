"""Generated caption corpora for the metric tests: seeded random captions sharing words with their references."""

from __future__ import annotations

import random

_WORDS = ("a the an man men woman women dog dogs cat cats run runs running ran sit sits sitting sat "
          "on in at of with and big large small little happy glad red blue car cars automobile street "
          "road park beautiful pretty house home we they he she is are was were to go went going "
          "picture photo photos friend friends family had fun great good").split()
_PUNCT = [".", ",", "!", "?", "'s", "n't", '"', "(", ")", "-", "...", "caf\u00e9", "na\u00efve", "u.s."]


def generated_corpus(n: int, seed: int = 0, punct: bool = False) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Seeded random captions sharing words, stems and synonyms with their references."""
    rng = random.Random(seed)

    def sent(lo: int, hi: int) -> str:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
        if punct:
            for _ in range(rng.randint(0, 3)):
                words.insert(rng.randint(0, len(words)), rng.choice(_PUNCT))
        return " ".join(words)

    res, gts = {}, {}
    for i in range(n):
        ref = [sent(4, 14) for _ in range(rng.randint(1, 4))]
        base = rng.choice(ref).split()
        hyp = [w if rng.random() < 0.6 else rng.choice(_WORDS) for w in base]
        if rng.random() < 0.3:
            rng.shuffle(hyp)
        res[f"g{i}"] = [" ".join(hyp[: rng.randint(1, len(hyp))])]
        gts[f"g{i}"] = ref
    return res, gts
