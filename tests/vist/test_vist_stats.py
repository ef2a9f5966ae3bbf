"""Table 2 and Table 3 quantities on small corpora with hand-checked values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from connote.cli import main
from connote.vist import stats
from connote.vist.stats import (
    frazier_scores,
    load_lexicon,
    npmi_table,
    npmi_top_words,
    percent_abstract,
    tier_stats,
    vocabulary,
    yngve_scores,
)


def test_vocab_and_tokens() -> None:
    texts = ["The dog ran .", "the cat ran", "a bird"]
    assert vocabulary(texts) == {"the": 2, "ran": 2}
    assert len(vocabulary(texts, min_count=1)) == 7
    row = tier_stats("X", texts)
    assert row.pairs == 3 and row.vocab == 2 and row.avg_tokens == pytest.approx(9 / 3)
    assert row.frazier is None and row.perplexity is None


def test_npmi_hand_checked() -> None:
    tiers = {"A": ["a b", "a c"], "B": ["b d", "d d"]}
    t = npmi_table(tiers)
    # a: log(.25 / (.25 * .5)) / -log(.25) = log 2 / log 4 = 0.5 ; b: PMI 0 in both ; c seen once: excluded
    assert t["A"] == {"a": pytest.approx(0.5), "b": pytest.approx(0.0)}
    assert t["B"]["d"] == pytest.approx(math.log(2) / -math.log(3 / 8))
    top = npmi_top_words(tiers, k=1)
    assert top == {"A": [("a", pytest.approx(0.5))], "B": [("d", pytest.approx(0.70669, abs=1e-4))]}
    assert npmi_top_words(tiers, k=5, exclude=["a"])["A"] == [("b", pytest.approx(0.0))]


def test_yngve_frazier_hand_checked() -> None:
    # "the dog barked ." : the->dog, dog->barked, barked root, .->barked
    heads = [1, 2, -1, 2]
    assert yngve_scores(heads) == [3, 2, 1, 0]
    assert frazier_scores(heads) == [2, 0, 0, 0]
    # "she saw the big house": she->saw, saw root, the->house, big->house, house->saw
    heads = [1, 1, 4, 4, 1]
    # root [she, saw, (the big house)]: she 2, saw 1, the 0+2, big 0+1, house 0
    assert yngve_scores(heads) == [2, 1, 2, 1, 0]
    assert frazier_scores(heads) == [1, 0, 1, 0, 0]
    assert stats.sentence_complexity(heads) == (2, 6)
    with pytest.raises(ValueError):
        yngve_scores([1, 0])


def test_percent_abstract(tmp_path: Path) -> None:
    assert percent_abstract(["happiness", "dog", "time", "city"]) == pytest.approx(50.0)
    lex_path = tmp_path / "conc.csv"
    lex_path.write_text("Word,Conc.M\ndog,4.9\nidea,1.6\n")
    lex = load_lexicon(lex_path)
    assert lex == {"dog": 4.9, "idea": 1.6}
    assert percent_abstract(["dog", "idea", "Idea", "cat"], lexicon=lex) == pytest.approx(200 / 3)
    bad = tmp_path / "bad.tsv"
    bad.write_text("word\tconcreteness\ndog\tvery\n")
    with pytest.raises(Exception, match="line 2"):
        load_lexicon(bad)


@pytest.fixture(scope="module")
def nlp():
    return stats.load_spacy()


def test_spacy_parse_features(nlp) -> None:
    f = stats.parse_features(["the dog barked ."], nlp)
    assert f["nouns"] == ["dog"]
    assert f["frazier"] == [2] and f["yngve"] == [6]
    row = tier_stats("T", ["the dog barked .", "we had fun ."], nlp=nlp)
    assert row.abstract_method == "suffix/list proxy" and row.pct_abstract == pytest.approx(50.0)
    assert row.parsed_texts == 2 and row.frazier is not None


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["<bos>", "<unk>", "<pad>", "the", "dog", "barked", ".", "we", "had", "fun"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", unk_token="<unk>", pad_token="<pad>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_positions=32, n_embd=16, n_layer=1, n_head=2,
                                       bos_token_id=0, eos_token_id=0))
    d = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(d)
    fast.save_pretrained(d)
    return d


def test_perplexity_matches_manual(tiny_lm: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    texts = ["the dog barked .", "we had fun", "the dog"]
    ppl = stats.perplexity(texts, str(tiny_lm), batch_size=2)
    model = AutoModelForCausalLM.from_pretrained(tiny_lm).eval()
    vocab = {"the": 3, "dog": 4, "barked": 5, ".": 6, "we": 7, "had": 8, "fun": 9}
    nll, n = 0.0, 0
    for t in texts:
        ids = torch.tensor([[0] + [vocab[w] for w in t.split()]])
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss
        nll += float(loss) * (ids.shape[1] - 1)
        n += ids.shape[1] - 1
    assert ppl == pytest.approx(math.exp(nll / n), rel=1e-5)
    assert 1.0 < ppl < 100.0


def test_cli_stats(tmp_path: Path, sis_file: Path, tiny_lm: Path, capsys) -> None:
    sub = tmp_path / "gen.json"
    sub.write_text(json.dumps({"output_stories": [
        {"album_id": "A1", "photo_sequence": ["1"] * 5, "story_text_normalized": "we ran . we are happy ."}]}))
    assert main(["vist", "stats", str(sis_file), str(sub), "--lm", str(tiny_lm), "--json", "--min-count", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["tier"]: r for r in out["table2"]}
    assert rows["SIS"]["pairs"] == 14 and rows["gen"]["pairs"] == 1
    assert rows["gen"]["pct_abstract"] is None  # no noun: NaN printed as null
    assert rows["SIS"]["perplexity"] > 1 and rows["SIS"]["yngve"] is not None
    assert out["table3"]["gen"][0][0] in {"we", "ran", "are", "happy"}
    assert main(["vist", "stats", str(sis_file), str(sub), "--min-count", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    header, legend = printed.splitlines()[0], " ".join(printed.split("Table 3")[0].splitlines()[3:])
    for column in header.split()[1:]:  # every column is explained under the table, the proxy too
        assert f"{column}: " in legend or f"{column}, " in legend, (column, legend)
    assert "(suffix/list proxy: a noun ending in -ness, -ity" in legend
    assert "Table 3, the top 10 words of each tier by normalized PMI:" in printed


def test_two_files_of_one_tier_are_labelled_by_their_files(tmp_path: Path, sis_file: Path, capsys) -> None:
    other = tmp_path / "val.story-in-sequence.json"
    other.write_bytes(sis_file.read_bytes())
    assert main(["vist", "stats", str(sis_file), str(other), "--no-parse", "--json", "--min-count", "1"]) == 0
    tiers = [r["tier"] for r in json.loads(capsys.readouterr().out)["table2"]]
    assert tiers == [f"SIS:{sis_file.name.split('.')[0]}", "SIS:val"]
    assert main(["vist", "stats", str(sis_file), str(sis_file), "--no-parse", "--json"]) == 2
    assert "the same file is given twice" in capsys.readouterr().err
