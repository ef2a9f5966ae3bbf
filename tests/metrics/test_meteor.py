"""METEOR 1.5 without Java, compared with meteor-1.5.jar as pycocoevalcap and VIST run it."""

from __future__ import annotations

import os
import subprocess
import warnings

import numpy as np
import pytest

from connote.metrics.meteor import Meteor, MeteorResourceWarning
from connote.metrics.meteor._normalize import normalize_line, parse_nonbreaking_prefixes
from connote.metrics.meteor._stem import stem


@pytest.fixture(scope="module")
def meteor_rank(pycoco):
    return Meteor()


def _compare(ours: Meteor, jar, res, gts, *, exact: bool = False):
    ids = list(gts)
    hyps = [res[i][0] for i in ids]
    refs = [gts[i] for i in ids]
    jc, jseg = jar.corpus(hyps, refs)
    c, seg = ours.corpus(hyps, refs)
    assert c == pytest.approx(jc, abs=1e-12 if exact else 1e-3)
    close = sum(abs(a - b) <= 0.01 for a, b in zip(seg, jseg))
    assert close >= 0.99 * len(ids)
    if exact:
        assert max(abs(a - b) for a, b in zip(seg, jseg)) < 1e-12
    return seg


@pytest.mark.slow
def test_vist_stories_rank_task_matches_jar(meteor_rank, jar_meteor, vist_album_corpus):
    res, gts = vist_album_corpus
    ids = list(gts)[:250]
    _compare(meteor_rank, jar_meteor("rank"), res, {i: gts[i] for i in ids})


@pytest.mark.slow
def test_vist_stories_hter_task_exact_with_jar_synonym_tables(jar_meteor, vist_album_corpus):
    res, gts = vist_album_corpus
    ids = list(gts)[250:400]
    m = Meteor(task="hter", synonym_source="jar")
    _compare(m, jar_meteor("hter"), res, {i: gts[i] for i in ids}, exact=True)


@pytest.mark.slow
def test_generated_text_with_punctuation_matches_jar(meteor_rank, jar_meteor, gen_corpus):
    res, gts = gen_corpus(300, seed=7, punct=True)
    _compare(meteor_rank, jar_meteor("rank"), res, gts)


def test_segment_api_agrees_with_corpus(meteor_rank, gen_corpus):
    res, gts = gen_corpus(40, seed=11)
    ids = list(gts)
    _, seg = meteor_rank.corpus([res[i][0] for i in ids], [gts[i] for i in ids])
    for i, s in zip(ids, seg):
        assert meteor_rank.score(res[i][0], gts[i]) == pytest.approx(s, abs=1e-12)
        singles = meteor_rank.score_pairs([(res[i][0], r) for r in gts[i]])
        assert max(singles) == pytest.approx(s, abs=1e-12)


def test_parallel_alignment_gives_identical_scores(meteor_rank, gen_corpus):
    res, gts = gen_corpus(200, seed=12)
    ids = list(gts)
    hyps, refs = [res[i][0] for i in ids], [gts[i] for i in ids]
    assert meteor_rank.corpus(hyps, refs, n_jobs=2) == meteor_rank.corpus(hyps, refs, n_jobs=1)


def test_empty_hypothesis_and_identical_sentences(meteor_rank):
    assert meteor_rank.score("", ["a cat sits on the mat"]) == 0.0
    assert meteor_rank.score("a cat sits on the mat", ["a cat sits on the mat"]) > 0.99


def test_normalizer_matches_jar(java, pycoco, tmp_path):
    lines = [
        "Don't stop, Mr. Smith... it's 3,000 dollars (or $3.50)!",
        "He said \u201chello\u201d \u2013 and left -- quickly; e-mail: me@x.org",
        "the U.S.A. team won 5-3 at 10.30 a.m. in St. Louis.",
        "l'homme ''quoted'' `tick' rock'n'roll 90's x.y.z. Nos. 1 and 2",
        "caf\u00e9 na\u00efve \u00fcber ...and then.... end.",
    ]
    jar = pycoco / "meteor" / "meteor-1.5.jar"
    out = subprocess.run([java, "-Dfile.encoding=UTF-8", "-cp", str(jar), "edu.cmu.meteor.util.Normalizer", "en",
                          "true"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         encoding="utf-8", timeout=60).stdout.splitlines()
    import zipfile

    with zipfile.ZipFile(jar) as zf:
        prefixes = parse_nonbreaking_prefixes(zf.read("nonbreaking/english.prefixes").decode("utf-8"))
    assert [normalize_line(x, prefixes) for x in lines] == out


def test_stemmer_matches_jar_snowball(java, pycoco, vist_album_corpus):
    res, gts = vist_album_corpus
    words = sorted({w for v in list(gts.values())[:300] for s in v for w in s.split() if w.isalpha()})
    words += ["realization", "generously", "skies", "dying", "communism", "arsenal", "hopefully", "agreed"]
    jar = pycoco / "meteor" / "meteor-1.5.jar"
    out = subprocess.run([java, "-cp", str(jar), "Stemmer", "en"], input="\n".join(words) + "\n",
                         capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert [stem(w) for w in words] == out


def test_missing_resources_warn_and_show_in_signature(tmp_path):
    with pytest.warns(MeteorResourceWarning):
        m = Meteor(meteor_data=tmp_path, wordnet=tmp_path, synonym_source="wordnet")
    sig = m.signature()
    assert "MISSING" in sig and "para:none" in sig and "syn:none" in sig
    assert m.score("a cat", ["a cat"]) > 0.9  # still scores, with fewer modules


def test_signature_names_every_setting(pycoco):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeteorResourceWarning)
        sig = Meteor(task="hter").signature()
    for part in ("meteor:1.5", "lang:en", "task:hter", "norm:yes", "modules:exact+stem+synonym+paraphrase",
                 "params:0.4,1.5,0.35,0.55", "weights:1,0.2,0.6,0.8", "beam:40", "syn:", "para:", "version:"):
        assert part in sig


def test_unknown_task_lists_valid_ones():
    with pytest.raises(ValueError, match="hter"):
        Meteor(task="nope")


def test_pairs_prepared_in_separate_calls_still_find_paraphrases(pycoco):
    m1 = Meteor()
    m2 = Meteor()
    a, b = "the kids had a great time at the party", "the children enjoyed themselves at the celebration"
    m1.score(a, ["an unrelated sentence about cars"])
    m1.score("another unrelated line", [b])
    assert m1.score(a, [b]) == pytest.approx(m2.corpus([a], [[b]])[1][0], abs=1e-12)


@pytest.mark.slow
def test_non_ascii_and_mixed_case_text_matches_jar(meteor_rank, jar_meteor):
    hyps = ["Un caf\u00e9 tr\u00e8s na\u00efve \u00e0 Paris.", "The \u201cBig\u201d Dog's bone \u2013 isn't it?",
            "\u041c\u043e\u0441\u043a\u0432\u0430 is a city", "Stra\u00dfe und Gr\u00fc\u00dfe!"]
    refs = [["un caf\u00e9 \u00e0 paris", "caf\u00e9s are naive"], ["the big dog has a bone"],
            ["\u041c\u043e\u0441\u043a\u0432\u0430 is big"], ["strasse and greetings"]]
    jc, jseg = jar_meteor("rank").corpus(hyps, refs)
    c, seg = meteor_rank.corpus(hyps, refs)
    assert c == pytest.approx(jc, abs=1e-3)
    assert seg == pytest.approx(jseg, abs=0.01)


def test_pycocoevalcap_separator_handling_matches_jar(jar_meteor, pycoco):
    from connote.metrics import compute_scores

    res = {"1": ["a cat|||sits on the mat"], "2": ["a dog  runs"]}
    gts = {"1": ["a cat sits ||| on a mat"], "2": ["the dog runs fast"]}
    jc, jseg = jar_meteor("rank").corpus([res[i][0] for i in gts], [gts[i] for i in gts])
    out = compute_scores(res, gts, ["meteor"], per_item=True)
    assert out.scores["METEOR"] == pytest.approx(jc, abs=1e-9)
    assert [out.per_item[i]["METEOR"] for i in gts] == pytest.approx(jseg, abs=1e-9)


@pytest.mark.slow
def test_vist_preset_matches_the_challenge_command_line(jar_meteor, vist_album_corpus):
    """VIST scores with ``-t hter`` and no ``-norm``; the protocol takes the max over single references."""
    res, gts = vist_album_corpus
    ids = list(gts)[400:500]
    m = Meteor.from_preset("vist", synonym_source="jar")
    assert "task:hter" in m.signature() and "norm:no" in m.signature() and "lc:no" in m.signature()
    jar = jar_meteor("vist")
    jc, jseg = jar.corpus([res[i][0] for i in ids], [gts[i] for i in ids])
    c, seg = m.corpus([res[i][0] for i in ids], [gts[i] for i in ids])
    assert c == pytest.approx(jc, abs=1e-12)
    assert seg == pytest.approx(jseg, abs=1e-12)
    singles = m.score_pairs([(res[i][0], r) for i in ids[:20] for r in gts[i]])
    assert [max(singles[2 * k], singles[2 * k + 1]) for k in range(20)] == pytest.approx(seg[:20], abs=1e-12)
    # text that is not lower-cased is compared as it is under this preset, as by the jar
    h, r = "A Dog runs .", "a dog runs ."
    assert m.score(h, [r]) == pytest.approx(jar.corpus([h], [[r]])[1][0], abs=1e-12)


def test_java_string_hash_collisions_are_reproduced():
    from connote.metrics.meteor._align import java_hash

    assert java_hash("Aa") == java_hash("BB")
    assert java_hash("n't") == java_hash("let")  # a collision that occurs in real VIST stories
    assert java_hash("\U0001f600") == (31 * 0xD83D + 0xDE00)  # UTF-16 surrogate pair
    m = Meteor(norm=False, modules=["exact"])
    assert m.score("let", ["n't"]) == m.score("let", ["let"])  # the jar matches them exactly


def test_paraphrase_index_keeps_table_order_across_additions():
    from connote.metrics.meteor._align import ParaphraseIndex

    idx = ParaphraseIndex()
    idx.add([(7, ("a", "b"), ("x",)), (2, ("a",), ("y",))])
    idx.add([(3, ("a",), ("z",)), (1, ("a",), ("w",)), (7, ("a", "b"), ("x",))])
    paths = idx.sentence_paths(("a", "b"))
    assert paths[0] == [(1, ("w",)), (1, ("y",)), (1, ("z",)), (2, ("x",))]
    assert idx.ngram_positions(("q", "x", "w"))[("x",)] == [1]


def test_blank_texts_match_jar(meteor_rank, jar_meteor):
    hyps = ["", "a cat sits", " ", "the dog"]
    refs = [["a cat"], ["", "a cat is sitting"], ["a dog runs"], ["the dog", "a dog"]]
    jc, jseg = jar_meteor("rank").corpus(hyps, refs)
    c, seg = meteor_rank.corpus(hyps, refs)
    assert c == pytest.approx(jc, abs=1e-12)
    assert seg == pytest.approx(jseg, abs=1e-12)


@pytest.mark.slow
def test_beam_pruning_and_sentence_caches_change_no_alignment(pycoco, gen_corpus, vist_album_corpus):
    """The pruned beam search (and the per-sentence caches) choose exactly the alignments of the
    plain search, on generated text and on real stories."""
    from connote.metrics.meteor._align import Aligner

    m = Meteor()
    res, gts = gen_corpus(150, seed=21, punct=True)
    vres, vgts = vist_album_corpus
    pairs = [(res[i][0], r) for i in gts for r in gts[i]]
    pairs += [(vres[i][0], r) for i in list(vgts)[:60] for r in vgts[i]]
    toks = [(m.tokenize(h), m.tokenize(r)) for h, r in pairs]
    m.prepare([t for pair in toks for t in pair])
    fast = m._aligner
    fast.compiled = False
    plain = Aligner(fast.modules, fast.function_words, fast.stem, fast.synonyms, fast.paraphrases,
                    fast.beam_size, prune=False, compiled=False)
    for beam in (40, 3):
        fast.beam_size = plain.beam_size = beam
        for h, r in toks:
            assert fast.align(h, r) == plain.align(list(h), list(r))


def test_one_call_with_workers_equals_separate_calls(pycoco, gen_corpus):
    """All metrics in one call (METEOR workers running while BLEU/CIDEr/ROUGE-L are computed, shared
    n-gram counts) give bit-identical numbers to one metric per call without workers."""
    from connote.metrics import compute_scores

    res, gts = gen_corpus(160, seed=23, punct=True)
    names = ["bleu", "meteor", "rouge_l", "cider"]
    together = compute_scores(res, gts, names, per_item=True, n_jobs=2)
    separate = {}
    per: dict[str, dict[str, float]] = {i: {} for i in gts}
    for name in names:
        out = compute_scores(res, gts, [name], per_item=True, n_jobs=1)
        separate.update(out.scores)
        for i, v in out.per_item.items():
            per[i].update(v)
    assert together.scores == separate
    assert list(together.scores) == list(separate)
    assert together.per_item == per


def _long_pairs(res, gts, n):
    keys = list(gts)[: n + 1]
    return [(res[a][0] + " " + res[b][0], gts[a][0] + " " + gts[b][-1]) for a, b in zip(keys, keys[1:])]


@pytest.mark.slow
def test_compiled_aligner_counts_what_the_python_search_counts(pycoco, gen_corpus, vist_album_corpus):
    """The compiled batch aligner (candidates from the table arrays, fixed matches, beam search,
    counts) gives exactly the pure-Python counts on every pair of the real VIST corpus and on
    generated text, for several beam sizes, with and without pruning, including hypotheses longer
    than 64 words (multi-word masks)."""
    from connote.metrics.meteor import _align

    if _align._calign is None:
        pytest.fail("the compiled METEOR extension is not built (pip install -e . builds it with a C compiler)")
    m = Meteor()
    vres, vgts = vist_album_corpus
    gres, ggts = gen_corpus(300, seed=31, punct=True)
    pairs = [(vres[i][0], r) for i in vgts for r in vgts[i]]
    pairs += [(gres[i][0], r) for i in ggts for r in ggts[i]]
    pairs += _long_pairs(vres, vgts, 40) + _long_pairs(gres, ggts, 40)
    toks = [(tuple(m.tokenize(h)), tuple(m.tokenize(r))) for h, r in pairs]
    assert max(len(h) for h, _ in toks) > 128
    al = m._aligner
    assert al.compiled and al.paraphrase_table is not None
    for beam, prune, subset in ((40, True, toks), (3, True, toks[::2]), (1, True, toks[::7]),
                                (40, False, toks[::5])):
        al.beam_size, al.prune = beam, prune
        al.compiled = True
        fast = al.batch_counts(subset)
        al.compiled = False
        slow = al.batch_counts(subset)
        bad = np.flatnonzero((fast != slow).any(axis=1))
        assert len(bad) == 0, (beam, prune, [subset[b] for b in bad[:3]])
        assert fast[:, _align.STATUS].sum() == 0
        # the counts are not trivially equal: paraphrase, synonym and stem matches all occur
        assert (fast[:, 4 + 3] + fast[:, 12 + 3]).sum() > 0 and (fast[:, 4 + 2] + fast[:, 4 + 1]).sum() > 0


@pytest.mark.slow
def test_compiled_aligner_on_ambiguous_and_empty_texts(pycoco):
    """Random texts over a tiny vocabulary (every word many times: long candidate lists, stems,
    synonyms, paraphrases), empty texts and a text of ~1,000 words: compiled counts = Python counts."""
    import random

    from connote.metrics.meteor import _align

    if _align._calign is None:
        pytest.fail("the compiled METEOR extension is not built (pip install -e . builds it with a C compiler)")
    m = Meteor()
    rng = random.Random(7)
    vocab = ("the a cat cats dog dogs sat sits sitting on of mat mats went go going to park , . we had fun "
             "very happy glad little small").split()
    pairs = [(tuple(rng.choice(vocab) for _ in range(rng.randint(0, 30))),
              tuple(rng.choice(vocab) for _ in range(rng.randint(0, 30)))) for _ in range(600)]
    long = tuple(rng.choice(vocab) for _ in range(1000))
    pairs += [((), ()), ((), ("the",)), (("the",), ()), (long, long[::-1]), (long[:300], long[200:])]
    al = m._aligner
    fast = al.batch_counts(pairs)
    al.compiled = False
    slow = al.batch_counts(pairs)
    assert (fast == slow).all()
    assert fast[:, 20].max() > 5  # alignments with many chunks: the beam search had choices to make


def test_compiled_aligner_falls_back_to_python_on_a_paraphrase_hash_clash(pycoco, gen_corpus, monkeypatch):
    """Where the table arrays cannot be built exactly (two phrases with one 64-bit hash in a batch),
    the batch is aligned by the Python search - same counts."""
    from connote.metrics.meteor import _resources

    m = Meteor()
    res, gts = gen_corpus(40, seed=35, punct=True)
    toks = [(tuple(m.tokenize(res[i][0])), tuple(m.tokenize(r))) for i in gts for r in gts[i]]
    expected = m._aligner.batch_counts(toks)
    monkeypatch.setattr(_resources.ParaphraseTable, "sentence_matches", lambda self, sents: None)
    assert (m._aligner.batch_counts(toks) == expected).all()


@pytest.mark.slow
def test_compiled_and_python_search_give_identical_scores(pycoco, gen_corpus, vist_album_corpus):
    """Corpus and segment METEOR scores with and without the compiled aligner are bit-identical
    (sequential and with worker processes)."""
    vres, vgts = vist_album_corpus
    gres, ggts = gen_corpus(120, seed=33, punct=True)
    for res, gts in ((vres, vgts), (gres, ggts)):
        hyps = [res[i][0] for i in gts]
        refs = [gts[i] for i in gts]
        out = []
        for compiled, jobs in ((False, 1), (True, 1), (True, 2)):
            m = Meteor()
            m._aligner.compiled = compiled
            out.append(m.corpus(hyps, refs, n_jobs=jobs))
        assert out[0] == out[1] == out[2]


def test_compiled_aligner_can_be_switched_off_by_environment():
    """CONNOTE_METEOR_COMPILED=0 forces the pure-Python search (the default where the extension is not built)."""
    import sys

    code = ("from connote.metrics.meteor._align import COMPILED, Aligner; "
            "print(COMPILED, Aligner((0,), frozenset()).compiled)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "CONNOTE_METEOR_COMPILED": "0"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
