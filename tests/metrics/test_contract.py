"""Every registered metric keeps the metric contract (torchmetrics-style, registry-wide).

As ``tests/models/test_backend_contract.py`` does for backends, this module loops over the metric registry as its
public listing gives it (``connote.metrics.METRICS.names()``: connote's own metrics and every plugin's, imported
lazily): a metric registered without a case here fails ``test_every_metric_has_a_case``. For each metric:

* order: permuting the items permutes the per-item scores and leaves the corpus scores unchanged;
* per-item vs corpus: a corpus of one item scores as that item, and a corpus score the case declares a mean
  is the mean of its per-item score;
* signature: it carries the connote version, the tokenization, and every option that changes a number (an
  option the case neither varies nor explains fails the test);
* bad input: no items, and hypotheses and references that are not aligned, are refused with one line (an
  :class:`~connote.core.errors.InputError`, exit 2 on the command line), whether through ``compute_scores`` or
  as the metric's own input (:class:`~connote.metrics.registry.MetricInput`); the functional cores
  (``corpus_bleu``, ...) refuse lists of different lengths.

Metrics that need an encoder use the suite's offline stand-ins: the tiny random BERT of ``conftest.py`` and a
bag-of-words embedder.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import connote.metrics
from connote.core.errors import InputError
from connote.metrics import METRICS, compute_scores
from connote.metrics.options import option_names, parse_options
from connote.metrics.registry import MetricInput, version_tag
from tests.metrics.test_embedding_metrics import HashEmbedder
from tests.support.corpora import generated_corpus


class OtherEmbedder(HashEmbedder):
    """Another sentence encoder (its own name): ACS/ACD's signature must tell the two apart."""

    def describe(self):
        return {"name": "hash-bow-reversed"}

    def _vec(self, text):
        return super()._vec(" ".join(reversed(text.split())))


@dataclass
class Stand:
    """The offline stand-ins a case builds its settings from."""

    tiny_bert: Path
    root: Path

    def copy_of_bert(self) -> str:
        other = self.root / "other-bert"
        if not other.exists():
            shutil.copytree(self.tiny_bert, other)
        return str(other)

    def baseline(self) -> str:
        path = self.root / "baseline.csv"
        path.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.1,0.2,0.15\n" for k in range(13)), encoding="utf-8")
        return str(path)


@dataclass
class Case:
    """How one metric is checked: the settings it runs with here, another value for each option that changes a
    number (the signature must change with it), why each remaining option needs none, and which corpus scores
    are the mean of a per-item score."""

    settings: Callable[[Stand], dict[str, Any]] = lambda stand: {}
    varied: dict[str, Callable[[Stand], Any]] = field(default_factory=dict)
    unvaried: dict[str, str] = field(default_factory=dict)
    means: dict[str, str] = field(default_factory=dict)


def _value(v: Any) -> Callable[[Stand], Any]:
    return lambda stand: v


_BERT = {"bertscore_model": lambda s: str(s.tiny_bert)}
_RESOURCE = "a resource of the jar's, found by default here; the signature names what was used (para:, syn:)"

#: metric -> its case. Every registered metric needs one.
CASES: dict[str, Case] = {
    "bleu": Case(varied={"bleu_n": _value(2)}),
    "meteor": Case(
        varied={"meteor_task": _value("hter"), "meteor_norm": _value(False),
                "meteor_modules": _value(("exact", "stem")), "meteor_beam": _value(5),
                "meteor_parameters": _value((0.9, 0.2, 0.6, 0.75)), "meteor_weights": _value((1.0, 0.5, 0.8, 0.6)),
                "meteor_preset": _value("vist")},
        unvaried={"meteor_language": "only 'en' is supported (the signature says lang:en)",
                  "meteor_data": _RESOURCE, "paraphrase_file": _RESOURCE, "wordnet": _RESOURCE,
                  "synonym_source": "auto takes the jar's tables here, as 'jar' does (syn:meteor-jar); "
                                    "'wordnet' needs WordNet's files",
                  "n_jobs": "worker processes: the same numbers"}),
    "rouge_l": Case(varied={"rouge_beta": _value(1.0)}, means={"ROUGE_L": "ROUGE_L"}),
    "cider": Case(varied={"cider_sigma": _value(3.0), "df_corpus": _value({"x": ["a man runs in the park"]})},
                  means={"CIDEr": "CIDEr"}),
    "bertscore": Case(
        settings=lambda s: {"bertscore_model": str(s.tiny_bert)},
        varied={"bertscore_model": Stand.copy_of_bert, "bertscore_layer": _value(1), "idf": _value(True),
                "baseline_file": Stand.baseline},
        means={"BERTScore_P": "BERTScore_P", "BERTScore_R": "BERTScore_R", "BERTScore_F1": "BERTScore_F1"}),
    "acs_acd": Case(
        settings=lambda s: {"bertscore_model": str(s.tiny_bert), "concept_encoder": HashEmbedder()},
        varied={"concept_encoder": _value(OtherEmbedder()), "concept_split": _value("improved"),
                "bertscore_f1": lambda s: {k: 0.5 + 0.01 * n for n, k in enumerate(CORPUS[1])}},
        means={"ACS": "CS"}),
}

_METAPHORS = {"m0": ("the car is as fast as a rocket", ["the car is as quick as a jet"]),
              "m1": ("the man is as strong as an ox", ["the athlete is as strong as an ox", "a strong man"]),
              "m2": ("The City is as busy as a beehive.", ["the city is as busy as an ant hill"])}


def _corpus() -> tuple[dict[str, str], dict[str, list[str]]]:
    res, gts = generated_corpus(9, seed=3, punct=True)
    hyps = {k: v[0] for k, v in res.items()}
    for k, (h, refs) in _METAPHORS.items():
        hyps[k], gts[k] = h, refs
    return hyps, gts


CORPUS = _corpus()


def test_every_metric_has_a_case() -> None:
    assert set(METRICS.names()) == set(CASES), "add a case for each new metric to CASES"


@pytest.fixture(scope="module")
def stand(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Stand:
    return Stand(tiny_bert, tmp_path_factory.mktemp("metric-contract"))


def _score(name: str, case: Case, stand: Stand, hyps: dict[str, str], refs: dict[str, list[str]], **extra: Any):
    return compute_scores(hyps, refs, [name], per_item=True, **{**case.settings(stand), **extra})


def _close(a: float, b: float) -> bool:
    return a == pytest.approx(b, rel=1e-6, abs=1e-9)


def keeps_order(name: str, case: Case, stand: Stand) -> None:
    """Permuting the items permutes the per-item scores and keeps the corpus scores and the signature."""
    hyps, refs = CORPUS
    base = _score(name, case, stand, hyps, refs)
    order = list(refs)
    random.Random(7).shuffle(order)
    assert order != list(refs)
    moved = _score(name, case, stand, {k: hyps[k] for k in reversed(order)}, {k: refs[k] for k in order})
    assert moved.signatures == base.signatures
    assert set(moved.scores) == set(base.scores)
    for key, value in base.scores.items():
        assert _close(moved.scores[key], value), (key, moved.scores[key], value)
    assert list(moved.per_item) == order  # in the references' order
    for item, values in base.per_item.items():
        assert set(moved.per_item[item]) == set(values)
        for key, value in values.items():
            assert _close(moved.per_item[item][key], value), (item, key, moved.per_item[item][key], value)


def items_agree_with_the_corpus(name: str, case: Case, stand: Stand) -> None:
    """A corpus of one item scores as that item; a corpus score declared a mean is the mean of its item scores."""
    hyps, refs = CORPUS
    whole = _score(name, case, stand, hyps, refs)
    for corpus_key, item_key in case.means.items():
        mean = sum(v[item_key] for v in whole.per_item.values()) / len(whole.per_item)
        assert _close(whole.scores[corpus_key], mean), (corpus_key, whole.scores[corpus_key], mean)
    for item in ("m1", "g2"):
        one = _score(name, case, stand, {item: hyps[item]}, {item: refs[item]})
        shared = set(one.scores) & set(one.per_item[item])
        shared |= {c for c, i in case.means.items() if i in one.per_item[item]}
        assert shared, f"{name}: no corpus score to compare with a per-item one"
        for key in shared:
            per = one.per_item[item][case.means.get(key, key)]
            assert _close(one.scores[key], per), (item, key, one.scores[key], per)


def signature_carries_its_settings(name: str, case: Case, stand: Stand) -> None:
    """The signature names the connote version, the tokenization and every option that changes a number."""
    hyps, refs = CORPUS
    options = set(option_names(METRICS.get(name).options_class()))
    assert set(case.varied) | set(case.unvaried) == options, "vary each option of the metric or say why not"
    assert not set(case.varied) & set(case.unvaried)
    base = _score(name, case, stand, hyps, refs).signatures[name]
    assert version_tag() in base
    tokenized = _score(name, case, stand, hyps, refs, tokenize="ptb").signatures[name]
    assert tokenized != base and "tok:ptb-connote" in tokenized and "tok:none" in base
    for option, value in case.varied.items():
        other = _score(name, case, stand, hyps, refs, **{option: value(stand)}).signatures[name]
        assert other != base, f"{name}: option {option} changes the numbers but not the signature {base!r}"


#: The checks every metric passes (the recipe's metric too: tests/metrics/test_metric_recipe.py).
CHECKS = (keeps_order, items_agree_with_the_corpus, signature_carries_its_settings)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_metric_contract(name: str, check: Callable[[str, Case, Stand], None], stand: Stand) -> None:
    check(name, CASES[name], stand)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(("hyps", "refs", "expected"), [
    ({}, {}, "no items to score"),
    ({"a": "a dog runs"}, {"a": ["a dog runs"], "b": ["a cat"]}, "ids with references but no hypothesis: 'b'"),
    ({"a": "a dog runs", "c": "x"}, {"a": ["a dog runs"]}, "ids with a hypothesis but no references: 'c'"),
    ({"a": ["a dog", "two hypotheses"]}, {"a": ["a dog runs"]}, "id 'a': expected one hypothesis string"),
    ({"a": "a dog runs"}, {"a": []}, "id 'a': empty or missing reference list"),
])
def test_empty_and_unaligned_input_is_refused_with_one_line(name, hyps, refs, expected, stand) -> None:
    with pytest.raises(InputError) as err:
        _score(name, CASES[name], stand, hyps, refs)
    assert expected in str(err.value) and len(str(err.value).splitlines()) == 1, str(err.value)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(("ids", "hyps", "refs", "expected"), [
    ([], [], [], "no items to score"),
    (["a", "b"], ["a dog", "a cat"], [["a dog runs"]], "2 ids, 2 hypotheses and 1 reference lists"),
    (["a"], ["a dog", "a cat"], [["a dog runs"], ["a cat"]], "1 ids, 2 hypotheses and 2 reference lists"),
])
def test_a_metric_handed_ragged_input_refuses_it(name, ids, hyps, refs, expected, stand) -> None:
    spec = METRICS.get(name)
    options = parse_options(spec.options_class(), CASES[name].settings(stand))
    with pytest.raises(InputError) as err:
        spec.compute_fn()(MetricInput(ids, hyps, refs, "none", True, CASES[name].settings(stand)), options)
    assert expected in str(err.value) and len(str(err.value).splitlines()) == 1, str(err.value)


def _meteor_corpus():
    from connote.metrics import Meteor

    return Meteor().corpus


def _bertscore(tiny_bert: Path) -> Callable:
    from connote.metrics.bertscore import BERTScorer

    return BERTScorer(str(tiny_bert)).score


@pytest.mark.parametrize("core", [lambda _: connote.metrics.corpus_bleu, lambda _: connote.metrics.corpus_rouge_l,
                                  lambda _: connote.metrics.corpus_cider, lambda _: _meteor_corpus(), _bertscore],
                         ids=["corpus_bleu", "corpus_rouge_l", "corpus_cider", "Meteor.corpus", "BERTScorer.score"])
def test_the_functional_cores_refuse_unaligned_lists(core: Callable[[Path], Callable], tiny_bert: Path) -> None:
    with pytest.raises(ValueError, match="2 hypotheses and 1 reference lists: they must be aligned"):
        core(tiny_bert)(["a dog runs", "a cat"], [["a dog runs"]])
