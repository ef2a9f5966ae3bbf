"""What a spec reads, found without building the model (``connote.models.reads.spec_sources``), and the lazy
identity built on it (issue 39, items 1-2): hub ids named by options or by a constructor's default, with their
cached commits; local folders through links; what a backend declares it reads beyond its spec; and the check of
a built model's description against it. No model is built here (the backend contract runs them:
``tests/models/test_lazy_identity_contract.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.models.lazy import model_identity, spec_identity
from connote.models.registry import MODELS, register_model
from tests.support.fake_hub import FakeHub


def _config_only(folder: Path, model_type: str = "gpt2") -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder


@pytest.fixture()
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    return FakeHub(tmp_path / "hub", monkeypatch)


def test_an_option_naming_a_hub_id_enters_the_identity_with_its_commit(tmp_path, hub, monkeypatch) -> None:
    captioner = hub.publish(_config_only(tmp_path / "cap", "git"), "cap")
    llm = hub.publish(_config_only(tmp_path / "lm"), "lm")
    spec = f"caption-llm:{captioner}?llm={llm}"
    before = model_identity(spec)
    assert before is not None and model_identity(spec) == before
    hub.move(llm)  # the cache's main now names another commit of the LM: a build would load that one
    moved = model_identity(spec)
    assert moved is not None and moved != before
    _, sources = spec_identity(spec)
    assert sources.hubs["llm"] == {"id": llm, "revision": None, "commit": hub.commit(llm)}
    assert sources.hubs["weights"]["commit"] == hub.commit(captioner)
    monkeypatch.delenv("HF_HUB_OFFLINE")  # online: main may move during the build, so no identity...
    monkeypatch.setattr("connote.models.hub.hub_unreachable", lambda: None)
    assert model_identity(spec) is None
    pinned = f"caption-llm:{captioner}?llm={llm}&revision={hub.commit(captioner)}&llm_revision={hub.commit(llm)}"
    assert model_identity(pinned) is not None  # ...unless every hub id is pinned to a full commit


def test_a_constructors_default_hub_id_enters_the_identity(tmp_path, hub) -> None:
    tok = hub.publish(_config_only(tmp_path / "tok", "bert"), "tok")

    class Tokenizing:
        backend = "fake-tokenizing"

        def __init__(self, weights=None, *, tokenizer: str = tok, decode: str = "greedy") -> None: ...

    register_model("fake-tokenizing", Tokenizing, capabilities={"match"}, weights="none")
    try:
        before = model_identity("fake-tokenizing")
        _, sources = spec_identity("fake-tokenizing")
        assert set(sources.hubs) == {"tokenizer"}  # "greedy" is not in the cache: a plain value
        hub.move(tok)
        assert model_identity("fake-tokenizing") not in (None, before)
    finally:
        MODELS._entries.pop("fake-tokenizing", None)
        MODELS._help.pop("fake-tokenizing", None)


def test_a_file_behind_a_linked_sub_folder_changes_the_identity(tmp_path) -> None:
    outside = tmp_path / "llm-weights"
    outside.mkdir()
    (outside / "config.json").write_text('{"a": 1}')
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "llm").symlink_to(outside)
    (folder / "loop").symlink_to(folder)  # and a loop, which ends
    spec = f"hf-clip:{folder}"
    before = model_identity(spec)
    (outside / "config.json").write_text('{"a": 2}')
    assert model_identity(spec) not in (None, before)


def test_a_git_llava_folder_declares_its_captioner(tmp_path, hub) -> None:
    captioner = hub.publish(_config_only(tmp_path / "git", "git"), "git")
    folder = tmp_path / "gl"
    folder.mkdir()
    (folder / "git_llava.json").write_text(json.dumps({"format": 1, "llm_saved": True, "model": {
        "captioner": captioner, "llm": str(tmp_path / "gone")}}))
    spec = f"git-llava:{folder}"
    before = model_identity(spec)
    assert spec_identity(spec)[1].hubs["declared:captioner"]["commit"] == hub.commit(captioner)
    hub.move(captioner)
    assert model_identity(spec) not in (None, before)
    (folder / "git_llava.json").write_text("{not json")  # what it reads cannot be known: no identity, a build
    assert model_identity(spec) is None


def test_a_description_naming_what_the_identity_did_not_cover_is_listed(tmp_path, hub) -> None:
    lm = hub.publish(_config_only(tmp_path / "lm"), "lm")
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.json").write_text("{}")
    spec = f"caption-llm:{folder}?llm={lm}"
    _, sources = spec_identity(spec)
    covered = {"captioner": {"weights": str(folder.resolve()), "revision": None, "files": {}},
               "llm": {"weights": lm, "revision": None, "commit": hub.commit(lm)},
               "reads": {"weights": {"path": str((folder / "sub").resolve()), "sha256": "0"}}}
    assert sources.uncovered(covered) == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stale = {"llm": {"weights": lm, "revision": None, "commit": "f" * 40},  # another commit than the cache's
             "other": {"weights": "org/never-named", "revision": None},  # a hub id with no commit known
             "extra": {"weights": str(elsewhere), "revision": None, "files": {}}}  # a folder the spec never named
    assert sources.uncovered(stale) == [f"hub id {lm} at commit {'f' * 40}", "hub id org/never-named at commit None",
                                        f"local weights {elsewhere}"]
