"""What a task needs from a model (photos or photo ids, frames, a prompt) comes from the backend's registration and its
spec, so binding a task builds nothing, and a fully resumed run never calls the factory (issue 37, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connote.cli import main
from connote.models import registry
from connote.models.lazy import LazyModel


@pytest.fixture()
def builds(monkeypatch) -> list[str]:
    """Every model the registry builds, by spec."""
    made: list[str] = []
    real = registry.load_model
    monkeypatch.setattr(registry, "load_model", lambda spec, **kw: made.append(str(spec)) or real(spec, **kw))
    return made


def _vist(tmp_path: Path):
    from connote.vist.sample import sample_retrieval_spec, write_sample_vist
    from connote.vist.task import StorytellingTask

    paths = write_sample_vist(tmp_path / "sample")
    return StorytellingTask.from_options(paths["template"], {"images": str(paths["images"]), "batch_size": 8,
                                                             "limit": None, "team_name": "connote"},
                                         progress=False), sample_retrieval_spec(paths)


def _vmc(tmp_path: Path):
    from connote.tasks.running import check_options
    from connote.vmc.sample import sample_caption_spec, write_sample_vmc
    from connote.vmc.task import MetaphorCaptionTask

    paths = write_sample_vmc(tmp_path / "sample")
    return MetaphorCaptionTask.from_options(paths["test_videos"], check_options(MetaphorCaptionTask, {}),
                                       progress=False), sample_caption_spec(paths)


@pytest.mark.parametrize("make", [_vist, _vmc])
def test_binding_a_task_builds_no_model(tmp_path, make, builds):
    task, spec = make(tmp_path)
    model = LazyModel(spec, tmp_path / "run", announce=False)
    task.bind(model)
    assert not model.loaded and builds == []
    built = registry.load_model(spec)
    assert registry.needs_of(model) == registry.needs_of(built)  # the spec says what the built model says


@pytest.mark.parametrize("command", [["vist", "generate"], ["vmc", "caption"]])
def test_a_fully_resumed_run_never_calls_the_factory(tmp_path, command, builds, capsys):
    out = tmp_path / "run"
    assert main([*command, "--out", str(out), "--quiet"]) == 0
    assert len(builds) == 1
    assert main([*command, "--out", str(out), "--quiet"]) == 0
    assert len(builds) == 1, "the resumed run built its model"
    assert "0 generated now" in capsys.readouterr().out or command[0] == "vmc"


def test_options_and_weights_decide_what_the_spec_says(tmp_path):
    pytest.importorskip("transformers")
    from tests.support import tiny_models

    llava = tiny_models.tiny_llava(tmp_path / "llava")
    spec = f"hf-vlm:{llava}?frames=3"
    lazy = LazyModel(spec, tmp_path / "run", announce=False)
    assert registry.needs_of(lazy).frames == ("uniform", 3, 3) and not lazy.loaded
    assert registry.needs_of(registry.load_model(spec)) == registry.needs_of(lazy)
    seq2seq = registry.MODELS.get("seq2seq")

    def images(**options):
        return registry.ResolvedSpec("seq2seq", registry.parse_spec("seq2seq"), seq2seq, options).needs.images

    assert images(grounding="objects") and not images() and not images(grounding="DII.json")
    assert not images(grounding="objects", grounding_dii="d.json", grounding_sis="s.json", captioner="c")
