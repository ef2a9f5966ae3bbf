"""Fixtures for the metric tests: reference implementations (pycocoevalcap + Java), real VIST text,
generated text, a tiny BERT model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.support.corpora import generated_corpus
from tests.support.needs import missing as need


def _pycoco_dir() -> Path | None:
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


PYCOCO = _pycoco_dir()
HAVE_JAVA = shutil.which("java") is not None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout, or ``$CONNOTE_SHARED_DATA`` (worktrees sit one level deeper)."""
    here = Path(__file__).resolve().parents[2]
    for cand in (os.environ.get("CONNOTE_SHARED_DATA"), here.parent / "shared" / "data",
                 here.parent.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    need("../shared/data is not present in this checkout (or set CONNOTE_SHARED_DATA)")
    raise AssertionError  # unreachable


@pytest.fixture(scope="session")
def vist_dir(shared_data: Path) -> Path:
    d = shared_data / "vist"
    if not d.is_dir():
        need("../shared/data/vist is not present")
    return d


@pytest.fixture(scope="session")
def pycoco() -> Path:
    if PYCOCO is None:
        need("pycocoevalcap is not installed")
    return PYCOCO


@pytest.fixture(scope="session")
def java(pycoco: Path) -> str:
    if not HAVE_JAVA:
        need("java is not installed (apt-get install default-jre-headless)")
    return shutil.which("java") or "java"


class JarMeteor:
    """One meteor-1.5.jar process speaking pycocoevalcap's stdio protocol (reference implementation)."""

    def __init__(self, java: str, meteor_dir: Path, task: str) -> None:
        if task == "vist":  # the VIST challenge scorer's command line
            cmd = [java, "-jar", "-Xmx2G", "meteor-1.5.jar", "-", "-", "-stdio", "-t", "hter"]
        else:
            cmd = [java, "-jar", "-Xmx2G", "meteor-1.5.jar", "-", "-", "-stdio", "-l", "en", "-norm"]
            if task != "rank":
                cmd += ["-t", task]
        self.p = subprocess.Popen(cmd, cwd=meteor_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.lock = threading.Lock()

    def _ask(self, line: str) -> str:
        self.p.stdin.write((line + "\n").encode("utf-8"))
        self.p.stdin.flush()
        return self.p.stdout.readline().decode("utf-8").strip()

    def stats(self, hyp: str, refs: list[str]) -> str:
        hyp = hyp.replace("|||", "").replace("  ", " ")
        return self._ask(" ||| ".join(("SCORE", " ||| ".join(refs), hyp)))

    def corpus(self, hyps: list[str], refs: list[list[str]]) -> tuple[float, list[float]]:
        with self.lock:
            stats = [self.stats(h, r) for h, r in zip(hyps, refs)]
            self.p.stdin.write(("EVAL ||| " + " ||| ".join(stats) + "\n").encode("utf-8"))
            self.p.stdin.flush()
            seg = [float(self.p.stdout.readline()) for _ in stats]
            return float(self.p.stdout.readline()), seg

    def close(self) -> None:
        self.p.stdin.close()
        self.p.kill()
        self.p.wait()


@pytest.fixture(scope="session")
def jar_meteor(java: str, pycoco: Path):
    """``jar_meteor(task)`` -> a running jar for that task (``"vist"``: the VIST challenge command line)."""
    started: dict[str, JarMeteor] = {}

    def get(task: str = "rank") -> JarMeteor:
        if task not in started:
            started[task] = JarMeteor(java, pycoco / "meteor", task)
        return started[task]

    yield get
    for j in started.values():
        j.close()


@pytest.fixture(scope="session")
def vist_album_corpus(vist_dir: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Real stories: for each album one story as the hypothesis, the album's other story and the next
    album's first story as references (COCO-style res/gts dicts)."""
    from connote.vist.challenge import album_story_pairs

    return album_story_pairs(vist_dir / "example-submission-file.test.json")


@pytest.fixture(scope="session")
def gen_corpus():
    """``gen_corpus(n, seed, punct)`` -> generated (res, gts) dicts."""
    return generated_corpus


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A tiny random BERT (3 layers, hidden 32) with a word vocabulary, saved like a real model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("tiny_bert")
    words = ("[PAD] [UNK] [CLS] [SEP] [MASK] a the cat dog sat on mat is sitting runs fast kitten big small "
             "red blue as strong ox car rocket power - packed ##s").split()
    (d / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), model_max_length=64)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=3,
                                  num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    transformers.BertModel(cfg).save_pretrained(str(d))
    return d
