"""``connote cv-probes build`` (#24 item 1) end to end, offline, with real parts: a loopback OpenAI-compatible
server rewording the captions, tiny random HF models (a causal LM scorer, a CoLA classifier, a chat LM) built
from configs and loaded back from disk, the embedded encoders over a pool of packaged and synthetic photos."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

pytest.importorskip("torch")
pytest.importorskip("transformers")

from connote.cli import main  # noqa: E402
from connote.cv_probes.build import (  # noqa: E402
    check_caption,
    default_template,
    read_verb_list,
    render,
    reply_candidates,
    template_captions,
    third_person,
    write_sample_build,
)
from tests.support import tiny_models  # noqa: E402
from tests.support.openai_server import send_json  # noqa: E402

#: The command's argv prefix (the lead remounts it as ``cv-probes build``: change it here only).
COMMAND = ["cv-probes", "build"]
ROOT = Path(__file__).resolve().parents[2]


def build(*args: str) -> int:
    return main([*COMMAND, *args])


# ---- fixtures: a pool of ~40 photos, a verb list, a loopback rewording server, tiny models -------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The packaged sample (4 SG verbs, 23 packaged photos) + 16 synthetic photos + one broken file = 40, and
    a verb list with the sample's verbs, one verb without roles and a second PG caption."""
    root = tmp_path_factory.mktemp("build-inputs")
    verbs, pool = write_sample_build(root / "sample")
    rng = np.random.RandomState(0)
    for k in range(8):
        Image.fromarray((rng.rand(40, 48, 3) * 255).astype("uint8")).save(pool / f"noise{k}.png")
    for k, colour in enumerate([(200, 30, 30), (30, 160, 60), (40, 60, 210), (230, 210, 40)]):
        Image.new("RGB", (64, 48), colour).save(pool / f"flat{k}.png")
        ImageOps.flip(Image.new("RGB", (64, 48), colour)).save(pool / f"flat{k}_copy.png")
    (pool / "broken.jpg").write_bytes(b"this is not a JPEG")
    lines = verbs.read_text().splitlines()
    lines.append("pray,Praying,,,pool/china.jpg,Some monks stand in a garden.")  # no roles
    lines[1] = lines[1] + "|A woman sits at a desk."  # serve: two PG captions
    verbs.write_text("\n".join(lines) + "\n")
    assert len([p for p in pool.iterdir()]) == 40
    return {"verbs": verbs, "pool": pool, "root": root}


class Rewriter(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint: rewordings per verb (good, breaking a rule, nothing)."""

    requests: list[str] = []
    delay = 0.0

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"][-1]["text"]
        caption = re.search(r"Caption: (.*)$", prompt).group(1)
        type(self).requests.append(caption)
        time.sleep(self.delay)
        verb = re.search(r'Keep the verb "(\w+)"', prompt).group(1)
        reply = {"serve": f"1. {caption[:-1]} with pride.",
                 "represent": "The astronaut represented the country.\nAn astronaut proudly represents a country.",
                 "work": "",
                 }.get(verb, caption.replace(" a ", " a busy ", 1))
        send_json(self, {"choices": [{"message": {"content": reply}}]})

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Rewriter)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


CAPTION_WORDS = ("officer serves serve navy sailor fleet astronaut represents represent country agency "
                 "photographer works work park field man engineers prepare rocket team launch some proudly pride "
                 "busy represented").split()


def tiny_llama(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    tok = tiny_models.word_tokenizer(folder, extra=tuple(CAPTION_WORDS))
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=256,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    tiny_models.spread(LlamaForCausalLM(cfg).eval(), std=0.3, seed=seed).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_cola(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    tok = tiny_models.bert_tokenizer(folder)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, num_labels=2, id2label={0: "unacceptable", 1: "acceptable"},
                     label2id={"unacceptable": 0, "acceptable": 1})
    tiny_models.spread(BertForSequenceClassification(cfg).eval(), std=0.3, seed=seed).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-text")
    return {"lm": tiny_llama(root / "lm"), "cola": tiny_cola(root / "cola")}


@pytest.fixture
def calls(monkeypatch):
    """Counts of model calls in this process: scorer batches and texts, encoder images and texts."""
    from connote.media.embedded import EmbeddedEncoder
    from connote.models.probe_text import LMPerplexityScorer

    counts = {"score": 0, "images": 0, "texts": 0}

    def wrap(cls, name, key, size):
        original = getattr(cls, name)

        def counted(self, xs):
            counts[key] += size(xs)
            return original(self, xs)
        monkeypatch.setattr(cls, name, counted)

    wrap(LMPerplexityScorer, "score", "score", len)
    wrap(EmbeddedEncoder, "embed_images", "images", len)
    wrap(EmbeddedEncoder, "embed_texts", "texts", len)
    return counts


# ---- the formats -------------------------------------------------------------------------------

def test_templates_and_constraints(inputs):
    assert [third_person(v) for v in ("pray", "coach", "study", "buy", "race", "brows")] == [
        "prays", "coaches", "studies", "buys", "races", "browses"]
    roles = {"agent": "officer", "tool": "umbrella", "place": "church", "item": "ball"}
    assert default_template(roles) == "{agent} {verb} {item} with {tool} in {place}"
    assert render(default_template(roles), roles, "kick") == "An officer kicks a ball with an umbrella in a church."
    assert render("{agent} {verb} at {place}", {"agent": "people", "place": "the hour"}, "pray") == \
        "Some people pray at an hour."
    with pytest.raises(ValueError, match="slot"):
        render("{agent} {verb} {victim}", {"agent": "man"}, "chase")
    assert check_caption("A man prays in a church.", "pray") == []
    assert check_caption("Some people pray.", "pray") == []
    problems = check_caption("The man prayed in the church. He left.", "pray")
    assert [p.split(":")[0].split(" (")[0] for p in problems] == [
        "the verb 'pray' is missing", "not simple present tense", "definite article or demonstrative",
        "more than one sentence"]
    assert check_caption("A man is praying.", "pray") == [
        "the verb 'pray' is missing (expected 'prays' or 'pray')", "not simple present tense: 'praying'"]
    assert check_caption("", "pray") == ["empty caption"]
    assert reply_candidates('1. "A man prays."\n\n- A woman prays\nCaption: a child prays') == [
        "A man prays.", "A woman prays.", "A child prays."]
    entries = read_verb_list(inputs["verbs"])
    assert [e.entry_id for e in entries] == ["serve", "represent", "work", "prepare", "pray"]
    assert template_captions(entries[0]) == ["An officer serves in a navy.", "A woman serves in a navy.",
                                             "A sailor serves in a fleet."]
    assert template_captions(entries[3]) == ["Some engineers prepare a rocket.", "A team prepares a launch."]
    assert entries[4].error == f"{inputs['verbs']}:6: verb 'pray': no roles (an imSitu frame, e.g. " \
                               "roles=agent=man;place=church)"
    assert entries[0].pg_captions == ["A woman wears a uniform with a cap.", "A woman sits at a desk."]


def test_jsonl_verb_list_and_the_violation_policies(tmp_path):
    from connote.cv_probes.build_task import _reworded
    from connote.runs.runner import WorkItem

    path = tmp_path / "verbs.jsonl"
    path.write_text(json.dumps({"verb": "beg", "frame": "Request", "roles": [{"agent": "man", "place": "street"},
                                                                             {"agent": "woman", "item": "coin"}],
                                "templates": ["{agent} {verb} in {place}", "{agent} {verb} for {item}"],
                                "sg_images": ["a.jpg"], "pg_captions": ["A man sits."]}) + "\n"
                    + json.dumps({"verb": "beg", "roles": {"agent": "child"}}) + "\n")
    first, second = read_verb_list(path)
    assert (first.entry_id, second.entry_id, first.frame) == ("beg", "beg-2", "Request")
    assert first.sg_images == [str((tmp_path / "a.jpg").resolve())]
    # a template whose slots a frame does not fill is skipped for that frame
    assert template_captions(first) == ["A man begs in a street.", "A woman begs for a coin."]
    assert second.error is None and template_captions(second) == ["A child begs."]
    with pytest.raises(Exception, match="line 1, column roles"):
        path.write_text(json.dumps({"verb": "beg", "roles": [["agent", "man"]]}) + "\n")
        read_verb_list(path)
    item = WorkItem("beg#c1", "k", {"template": "A man begs in a street.", "verb": "beg"})
    reply = "The man begged.\nA man begs on a busy street."
    kept = _reworded(item, reply, "template")
    assert kept["source"] == "template" and kept["caption"] == "A man begs in a street."
    assert kept["violations"][0]["reply"] == "The man begged."
    nxt = _reworded(item, reply, "next")
    assert nxt["source"] == "reworded" and nxt["caption"] == "A man begs on a busy street."
    assert len(nxt["violations"]) == 1


def test_chunked_search_equals_brute_force(tmp_path):
    from connote.cv_probes.build_task import chunked_top

    rng = np.random.RandomState(1)
    vecs = rng.randn(1000, 16).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    path = tmp_path / "e.npy"
    np.save(path, vecs)
    mm = np.load(path, mmap_mode="r")
    q = vecs[[3, 500]] + 0.1
    s, i = chunked_top(mm, q, 7, chunk=64)
    full = q @ vecs.T
    want = np.argsort(-full, axis=1, kind="stable")[:, :7]
    assert (i == want).all()
    assert np.allclose(s, np.take_along_axis(full, want, 1), atol=1e-6)


# ---- the scorers and the chat rewriter against independent computations -------------------------

def test_scorers_equal_an_independent_forward_pass(models):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    from connote.models.probe_text import scorer_from_spec

    texts = ["An officer serves in a navy.", "Some engineers prepare a rocket for a team launch."]
    got = scorer_from_spec(f"lm-perplexity:{models['lm']}?batch_size=2").score(texts)
    lm = AutoModelForCausalLM.from_pretrained(models["lm"]).eval()
    tok = AutoTokenizer.from_pretrained(models["lm"])
    for text, value in zip(texts, got):
        ids = torch.tensor([[tok.bos_token_id] + tok.encode(text, add_special_tokens=False)])
        with torch.no_grad():
            loss = lm(input_ids=ids, labels=ids).loss  # mean token NLL after the first
        assert value == pytest.approx(float(torch.exp(-loss)), rel=1e-5)
    assert got[0] != pytest.approx(got[1])
    cola = scorer_from_spec(f"cola:{models['cola']}")
    probs = cola.score(texts)
    clf = AutoModelForSequenceClassification.from_pretrained(models["cola"]).eval()
    ctok = AutoTokenizer.from_pretrained(models["cola"])
    with torch.no_grad():
        want = clf(**ctok(texts, padding=True, return_tensors="pt")).logits.softmax(-1)[:, 1]
    assert probs == pytest.approx(want.tolist(), rel=1e-5)
    assert cola.describe()["label_index"] == 1


def test_gruen_scorer_follows_the_released_formula(models, tmp_path):
    """GRUEN's grammaticality on given weights: exp(-0.5 * exp(MLM loss)) + CoLA logit 1, /8 + 0.5, clipped."""
    import math

    import torch
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertTokenizer

    from connote.models.probe_text import gruen_sentences, scorer_from_spec

    torch.manual_seed(0)
    lm_dir = tmp_path / "bert-lm"
    tok = tiny_models.bert_tokenizer(lm_dir)
    BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64)).save_pretrained(lm_dir)
    tok.save_pretrained(lm_dir)
    gruen = scorer_from_spec(f"gruen:{models['cola']}?lm={lm_dir}")
    texts = ["a man sits on the street.", "a dog holds a cup", "cat"]
    got = gruen.score(texts)
    lm, lm_tok = BertForMaskedLM.from_pretrained(lm_dir).eval(), BertTokenizer.from_pretrained(lm_dir)
    clf = BertForSequenceClassification.from_pretrained(models["cola"]).eval()
    clf_tok = BertTokenizer.from_pretrained(models["cola"], do_lower_case=False)
    for text, value in zip(texts[:2], got):
        ids = torch.tensor([[lm_tok.cls_token_id, *lm_tok.convert_tokens_to_ids(lm_tok.tokenize(text)),
                             lm_tok.sep_token_id]])
        with torch.no_grad():
            ppl = math.exp(float(lm(ids, labels=ids).loss))
            cola = float(clf(**clf_tok(text, return_tensors="pt")).logits[0, 1])
        assert value == pytest.approx(min(1, max(0, (math.exp(-0.5 * ppl) + cola) / 8 + 0.5)), rel=1e-5)
    assert got[2] == pytest.approx(0.625)  # no sentence of two words: GRUEN's lm 0 and CoLA 0
    assert gruen_sentences("A man prays.  A woman  sits. ok") == ["A man prays.", "A woman sits."]
    with pytest.raises(ValueError, match="one-sentence"):
        gruen.score(["A man prays. A woman sits."])


def test_hf_chat_rewriter_generates_and_is_checked(models, inputs, tmp_path):
    """The tiny chat LM's greedy reply (random words) breaks the rules: recorded, and the template kept."""
    from connote.cv_probes.build_task import BuildSettings, reword_step
    from connote.models.probe_text import rewriter_from_spec
    from connote.models.protocols import GenerationRequest

    spec = f"hf-chat:{models['lm']}?max_new_tokens=6"
    chat = rewriter_from_spec(spec)
    request = GenerationRequest(images=[], prompt="Caption: An officer serves in a navy.")
    reply = chat.generate([request])[0]
    assert reply and reply == chat.generate([request])[0]
    assert chat.describe()["backend"] == "hf-chat" and chat.describe()["files"]
    entries = [e for e in read_verb_list(inputs["verbs"]) if not e.error]
    rows = reword_step(tmp_path / "run", entries, BuildSettings(rewriter=spec, candidates=1), progress=False,
                       load=rewriter_from_spec)
    assert sorted(rows) == ["prepare#c1", "represent#c1", "serve#c1", "work#c1"]
    verbs = {e.entry_id: e.verb for e in entries}
    for cid, row in rows.items():
        assert row["error"] is None and row["reply"] is not None
        if row["source"] == "template":
            assert row["caption"] == row["template"] and len(row["violations"]) == 1
            assert row["violations"][0]["problems"]
        else:
            assert check_caption(row["caption"], verbs[cid.split("#")[0]]) == []


# ---- end to end ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_build_end_to_end_then_probe(inputs, server, models, calls, tmp_path, capsys):
    Rewriter.requests.clear()
    out = tmp_path / "run"
    args = [str(inputs["verbs"]), "--pool", str(inputs["pool"]), "--out", str(out), "--quiet",
            "--rewriter", f"openai:gpt-3.5-turbo?base_url={server}&max_retries=0",
            "--scorer", f"lm-perplexity:{models['lm']}", "--top-k", "2"]
    assert build(*args) == 0
    text = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    # 3 + 2 + 2 + 2 template captions of the four verbs with roles; 'pray' (no roles) is recorded, not built
    assert len(Rewriter.requests) == 9
    assert summary["verbs"] == 5 and summary["verbs_built"] == 4
    assert any("verb 'pray': no roles" in p and ":6:" in p for p in summary["problems"])
    caps = summary["captions"]
    # serve x3 and prepare x2 reworded; represent (past tense, 'the') and work (nothing) keep their templates
    assert (caps["candidates"], caps["reworded"], caps["template_kept"]) == (9, 5, 4)
    problems = {v["candidate"]: v["problems"] for v in caps["violations"]}
    assert problems["work#c1"] == ["the backend returned nothing"]
    assert any("'represented'" in p for p in problems["represent#c1"])
    assert any("'the'" in p for p in problems["represent#c1"])
    # the paper's statistics: mean +/- std over all and over the selected captions
    import statistics

    from connote.runs.store import RunStore

    with RunStore(out) as store:
        fps = {d.get("task"): fp for fp, d in store.fingerprints().items()}
        scores = {i: r["score"] for i, r in store.rows(fps["cv-probes-build/score"]).items()}
    assert len(scores) == 9
    g = summary["grammaticality"]
    assert g["all"]["mean"] == pytest.approx(statistics.fmean(scores.values()))
    assert g["all"]["std"] == pytest.approx(statistics.stdev(scores.values()))
    best = [max(v for k, v in scores.items() if k.startswith(e + "#")) for e in ("serve", "represent", "work",
                                                                                   "prepare")]
    assert g["selected"]["mean"] == pytest.approx(statistics.fmean(best))
    assert f"selected captions: {statistics.fmean(best):.3f} ± {statistics.stdev(best):.3f}" in text
    # retrieval: 5 PG captions (serve has two); the broken file named; no SG image and no near-duplicate kept
    r = summary["retrieval"]
    assert r["pg_captions"] == 5 and r["kept"] == 10
    assert summary["pool"] == {"images": 40, "indexed": 39, "unreadable": 1}
    assert [e["item"].endswith("broken.jpg") and "broken.jpg" in e["error"] for e in summary["errors"]] == [True]
    index = np.load(out / "index" / "embeddings.npy", mmap_mode="r")
    names = json.loads((out / "index" / "images.json").read_text())
    assert index.shape[0] == 39 and np.allclose(np.linalg.norm(index, axis=1), 1, atol=1e-5)
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    sg_images = {row["image"] for row in rows if row["image_kind"] == "SG"}
    retrieved = [row for row in rows if row["retrieved_for"]]
    assert retrieved and not {row["image"] for row in retrieved} & sg_images
    for pg in {(row["item_id"].split("-")[0], row["caption"]) for row in retrieved if row["caption_kind"] == "PG"}:
        imgs = [names.index(row["image"]) for row in retrieved if (row["item_id"].split("-")[0], row["caption"]) == pg]
        v = index[imgs]
        sims = v @ v.T - np.eye(len(imgs)) * 2
        assert sims.max() < 0.95
    assert r["excluded_by_reason"].get("sg-image", 0) >= 1
    # the selected SG caption is the best-scored candidate
    serve = next(row for row in rows if row["item_id"] == "serve-sg1-sg")
    assert float(serve["grammaticality"]) == pytest.approx(best[0], abs=1e-6)
    # the manifest runs through `connote probe`
    assert main(["probe", "--data", str(out / "candidates.csv"), "--out", str(tmp_path / "probe"), "--quiet",
                 "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["cells"]["PG-PG"]["n"] == 10 and results["cells"]["SG-SG"]["n"] == 4
    # the validation study of the candidates
    study = Path(summary["validation_study"])
    from connote.collect.project import read_manifest

    manifest = read_manifest(study)
    assert manifest["items"] and all(manifest["sources"][i]["caption"] for i in manifest["items"])
    assert {manifest["sources"][i]["sg_image"] for i in manifest["items"]} <= sg_images
    # a second run calls no model at all
    Rewriter.requests.clear()
    before = dict(calls)
    assert build(*args) == 0
    assert Rewriter.requests == [] and calls == before


# ---- kill and resume -------------------------------------------------------------------------------

@pytest.mark.slow
def test_kill_mid_build_resumes_with_nothing_recomputed(inputs, server, models, calls, tmp_path):
    out = tmp_path / "run"
    args = [str(inputs["verbs"]), "--pool", str(inputs["pool"]), "--out", str(out), "--quiet",
            "--rewriter", f"openai:gpt-3.5-turbo?base_url={server}&max_retries=0&concurrency=1",
            "--scorer", f"lm-perplexity:{models['lm']}", "--batch-size", "1"]
    Rewriter.requests.clear()
    Rewriter.delay = 0.3
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "connote", *COMMAND, *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while len(Rewriter.requests) < 4 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        Rewriter.delay = 0.0
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    from connote.runs.store import RunStore

    with RunStore(out) as store:
        done = {i for fp, d in store.fingerprints().items() if d.get("task") == "cv-probes-build/reword"
                for i in store.rows(fp)}
    assert 3 <= len(done) < 9
    sent_before = list(Rewriter.requests)
    Rewriter.requests.clear()
    assert build(*args) == 0
    # only the captions not stored before the kill were sent again
    assert len(Rewriter.requests) == 9 - len(done)
    assert calls["score"] == 9 and calls["images"] == 39
    Rewriter.requests.clear()
    before = dict(calls)
    assert build(*args) == 0
    assert Rewriter.requests == [] and calls == before
    assert len(sent_before) >= len(done)


# ---- bad input ---------------------------------------------------------------------------------------

def test_bad_items_are_recorded_and_the_run_goes_on(inputs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "run"
    assert build(str(inputs["verbs"]), "--pool", str(empty), "--out", str(out), "--quiet") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pool"]["images"] == 0 and summary["verbs_built"] == 4
    errors = {e["item"]: e["error"] for e in summary["errors"]}
    assert set(errors) == {"serve#pg1", "serve#pg2", "represent#pg1", "work#pg1", "prepare#pg1"}
    assert errors["serve#pg1"] == f"serve#pg1: the image pool {empty} has no images"
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    assert len(rows) == 4 + 5 and {r["image_kind"] for r in rows} == {"SG"}
    assert summary["validation_study"] is None


def test_a_pool_folder_with_a_link_loop_is_read_through_its_links(inputs, tmp_path):
    """Issue 39, item 7: a link back to the pool (and a link to itself) used to stop the build with ``RuntimeError:
    Symlink loop``; the pool is read through its links, each folder once, and a broken link is no image."""
    from connote.cv_probes.build import read_pool

    pool = tmp_path / "pool"
    (pool / "real").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(pool / "real" / "a.jpg")
    (pool / "loop").symlink_to(pool)
    (pool / "self.jpg").symlink_to(pool / "self.jpg")
    (pool / "linked").symlink_to(inputs["pool"])  # another folder of images, reached through a link
    refs = sorted(Path(p.where).relative_to(pool).as_posix() for p in read_pool(pool))
    assert "real/a.jpg" in refs and not any(r.startswith("loop/") for r in refs) and "self.jpg" not in refs
    assert len(refs) == 1 + len([p for p in read_pool(inputs["pool"])])
    looped = tmp_path / "looped"
    looped.mkdir()
    (looped / "loop").symlink_to(looped)
    (looped / "self.jpg").symlink_to(looped / "self.jpg")
    out = tmp_path / "run"
    assert build(str(inputs["verbs"]), "--pool", str(looped), "--out", str(out), "--quiet") == 0
    assert json.loads((out / "summary.json").read_text())["pool"]["images"] == 0



def test_a_link_loop_named_in_a_pool_table_or_as_an_sg_image_is_that_images_error(inputs, tmp_path):
    """Item 7's loop through the other ways a path reaches the builder: a pool table's row or a verb's sg_images
    naming a link to itself stopped the build with ``RuntimeError: Symlink loop`` (``Path.resolve``); the image
    is now unreadable like a missing one (the pool counts it, the SG image's rows carry the error)."""
    folder = tmp_path / "pool"
    folder.mkdir()
    Image.new("RGB", (8, 8)).save(folder / "ok.jpg")
    (folder / "loop.jpg").symlink_to(folder / "loop.jpg")
    table = folder / "pool.csv"
    table.write_text("path\nloop.jpg\nok.jpg\n")
    verbs = tmp_path / "verbs.csv"
    verbs.write_text("verb,roles,templates,sg_images,pg_captions\n"
                     "beg,agent=man,{agent} {verb},pool/loop.jpg,A man kneels.\n")
    out = tmp_path / "run"
    assert build(str(verbs), "--pool", str(table), "--out", str(out), "--quiet") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["pool"]["images"], summary["pool"]["unreadable"]) == (2, 1)

def test_a_template_slot_that_is_not_a_role_is_refused_naming_it(tmp_path):
    """Issue 39, item 6: ``{0.__class__.__mro__}`` is no slot: it used to stay in the caption verbatim (and reach
    candidates.csv); the entry is now refused with its problem, naming the slot, and the other entries built."""
    verbs = tmp_path / "v.csv"
    verbs.write_text("verb,roles,templates\n"
                     "pray,agent=man;place=church,{0.__class__.__mro__} {verb} in {place}\n"
                     "beg,agent=man,{agent} {verb} for {food|\n"
                     "cook,agent=woman,{agent} {verb}\n")
    entries = {e.verb: e for e in read_verb_list(verbs)}
    assert "slot '{0.__class__.__mro__}', which is not a role name" in entries["pray"].error
    assert f"{verbs}:2: verb 'pray'" in entries["pray"].error
    assert "slot '{'" in entries["beg"].error
    assert entries["cook"].error is None and template_captions(entries["cook"]) == ["A woman cooks."]


@pytest.mark.parametrize("case", ["no verb column", "missing pool", "pool table without image column", "gruen",
                                  "no pool with a verb list", "bad role", "bad threshold"])
def test_input_errors_exit_2_without_traceback(case, inputs, tmp_path, capsys):
    verbs, pool = str(inputs["verbs"]), str(inputs["pool"])
    if case == "no verb column":
        bad = tmp_path / "v.csv"
        bad.write_text("word,roles\npray,agent=man\n")
        args, want = [str(bad), "--pool", pool], f"{bad}, line 1, column verb: missing required column 'verb'"
    elif case == "missing pool":
        args, want = [verbs, "--pool", str(tmp_path / "nope")], "image pool not found"
    elif case == "pool table without image column":
        table = tmp_path / "pool.csv"
        table.write_text("caption\na cat\n")
        args, want = [verbs, "--pool", str(table)], "the pool table has no image column"
    elif case == "gruen":
        args, want = [verbs, "--pool", pool, "--scorer", "gruen"], "needs GRUEN's released CoLA model"
    elif case == "no pool with a verb list":
        args, want = [verbs], "--pool is needed"
    elif case == "bad role":
        bad = tmp_path / "v.csv"
        bad.write_text("verb,roles\npray,agent=man\nbeg,agent\n")
        args, want = [str(bad), "--pool", pool], f"{bad}, line 3, column roles: role 'agent' is not role=noun"
    else:
        args, want = [verbs, "--pool", pool, "--duplicate-threshold", "1.5"], "--duplicate-threshold must be in"
    assert build(*args, "--out", str(tmp_path / "run"), "--quiet") == 2
    err = capsys.readouterr().err
    assert want in err and "Traceback" not in err


def test_parquet_pool_with_a_url_refused_offline(inputs, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = tmp_path / "laion.parquet"
    pq.write_table(pa.table({"URL": [str(inputs["pool"] / "horse.jpg"), "https://example.org/a.jpg"],
                             "TEXT": ["a horse", "a photo"]}), table)
    out = tmp_path / "run"
    assert build(str(inputs["verbs"]), "--pool", str(table), "--out", str(out), "--quiet", "--top-k", "1") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pool"] == {"images": 2, "indexed": 1, "unreadable": 1}
    err = next(e["error"] for e in summary["errors"] if e["item"] == "https://example.org/a.jpg")
    assert err == f"{table}:2: https://example.org/a.jpg: image is a URL and network access is off " \
                  "(pass --allow-network)"
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    assert {r["image"] for r in rows if r["retrieved_for"]} == {str(inputs["pool"] / "horse.jpg")}


# ---- the validation study on Potato, and the final manifest from its import -----------------------------

@pytest.mark.slow
def test_validation_study_on_potato_yields_the_final_manifest(inputs, tmp_path):
    from connote.collect.importing import import_study
    from connote.collect.project import read_manifest
    from tests.support.potato_driver import Annotator, need_browser_tools, running

    need_browser_tools()
    out = tmp_path / "run"
    assert build(str(inputs["verbs"]), "--pool", str(inputs["pool"]), "--out", str(out), "--quiet",
                 "--top-k", "1") == 0
    study = Path(json.loads((out / "summary.json").read_text())["validation_study"])
    manifest = read_manifest(study)
    items = manifest["items"]
    presumed = {i: manifest["sources"][i]["presumed"] for i in items}
    rejected = next(i for i in items if manifest["sources"][i]["caption_kind"] == "PG")
    rejected_image = manifest["sources"][rejected]["pg_image"]
    wrong = next(x for x in ("both", "only one", "neither") if x != presumed[rejected])

    def answers(name):
        def answers_for(inst):
            iid = inst["instance_id"]
            want = (manifest["attention"][iid]["applies"] if iid in manifest["attention"] else
                    wrong if (iid == rejected and name != "alice") else presumed[iid])
            return {f"applies:::{want}": want}
        return answers_for

    with running(study) as server:
        for name in ("alice", "bob", "carol"):
            assert Annotator(server, name).work(answers(name))
    imported = tmp_path / "validation.csv"
    report = import_study(study, imported)
    assert report.extra["needs_repair"] == 1 and not report.incomplete
    assert build(str(inputs["verbs"]), "--pool", str(inputs["pool"]), "--out", str(out), "--quiet",
                 "--top-k", "1", "--validated", str(imported)) == 0
    final = list(csv.DictReader((out / "final.csv").open()))
    candidates = list(csv.DictReader((out / "candidates.csv").open()))
    assert rejected_image not in {r["image"] for r in final}
    validated = {r["pg_image"] for r in csv.DictReader(imported.open()) if r["needs_repair"] == "0"} - {rejected_image}
    assert {r["image"] for r in final if r["retrieved_for"]} == validated
    assert len([r for r in final if r["image_kind"] == "SG"]) == len(
        [r for r in candidates if r["image_kind"] == "SG"])
    flagged = manifest["sources"][rejected]["caption"]
    assert {r["needs_repair"] for r in final if r["caption"] == flagged} == {"1"}
    assert main(["probe", "--data", str(out / "final.csv"), "--out", str(tmp_path / "probe"), "--quiet"]) == 0
