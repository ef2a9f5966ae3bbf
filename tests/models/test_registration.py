"""What a backend declares at its registration is what listings, tasks and checks read (no duck typing).

A plugin registers a backend lazily (``"module:attr"``); the module's ``@register_model`` on the same target
upgrades that placeholder, another target under the same name is an error. ``connote story backends`` lists
only the backends the storytelling task accepts.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.models.registry import (
    MODELS,
    backends_with,
    capabilities_of,
    frames_of,
    inputs_of,
    register_model,
    registration_of,
)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    added: list[str] = []
    yield tmp_path, added
    for name in added:
        MODELS._entries.pop(name, None)
        MODELS._help.pop(name, None)
    for mod in [m for m in sys.modules if m.startswith("upgrade_demo")]:
        del sys.modules[mod]


def _write(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


DECORATED = '''
    from connote.models.registry import register_model


    @register_model("upgrade-demo", capabilities={"generate"}, inputs="video", frames=("uniform", 4, 4),
                    weights="none")
    class Demo:
        """A demo video generator."""

        backend = "upgrade-demo"

        def __init__(self, weights=None, *, k: int = 4):
            self.k = k

        def describe(self):
            return {"backend": self.backend}

        def generate(self, requests):
            return ["x"] * len(requests)
'''


def test_the_decorator_upgrades_a_lazy_placeholder_of_the_same_target(module_dir) -> None:
    folder, added = module_dir
    _write(folder, "upgrade_demo", DECORATED)
    added.append("upgrade-demo")
    register_model("upgrade-demo", "upgrade_demo:Demo")  # a plugin's placeholder: the module declares the rest
    assert not MODELS._entries["upgrade-demo"].declared and "upgrade_demo" not in sys.modules
    backend = MODELS.get("upgrade-demo")  # imports the module: its decorator upgrades the placeholder
    import upgrade_demo

    assert backend.target is upgrade_demo.Demo
    assert backend.capabilities == frozenset({"generate"}) and backend.inputs == "video"
    assert backend.frames == ("uniform", 4, 4) and backend.help == "A demo video generator."
    model = upgrade_demo.Demo()  # built directly: found by its class
    assert registration_of(model) is backend and inputs_of(model) == "video" and frames_of(model) == ("uniform", 4, 4)
    assert capabilities_of(model) == frozenset({"generate"})
    # the same placeholder again (a plugin read after the module's import) keeps the class
    register_model("upgrade-demo", "upgrade_demo:Demo")
    assert MODELS.get("upgrade-demo").target is upgrade_demo.Demo
    with pytest.raises(ValueError, match="'upgrade-demo' is already registered"):
        register_model("upgrade-demo", "upgrade_demo:Other", capabilities={"generate"})
    with pytest.raises(ValueError, match="declared twice, differently"):
        register_model("upgrade-demo", "upgrade_demo:Demo", capabilities={"match"})


def test_a_declared_placeholder_lists_without_importing_its_module(module_dir, capsys) -> None:
    folder, added = module_dir
    _write(folder, "upgrade_demo_lazy", DECORATED.replace("upgrade-demo", "upgrade-demo-lazy"))
    added.append("upgrade-demo-lazy")
    register_model("upgrade-demo-lazy", "upgrade_demo_lazy:Demo", capabilities={"generate"}, inputs="video",
                   frames=("uniform", 4, 4), weights="none", help="Lazy.")
    assert main(["models", "--json", "-c", "generate"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["upgrade-demo-lazy"]["inputs"] == "video" and "upgrade_demo_lazy" not in sys.modules
    import upgrade_demo_lazy  # its decorator declares the same: the placeholder is upgraded, not refused

    assert MODELS.get("upgrade-demo-lazy").target is upgrade_demo_lazy.Demo


def test_story_backends_lists_what_the_storytelling_task_accepts(capsys) -> None:
    from connote.vist.task import StorytellingTask

    assert main(["story", "backends", "--json"]) == 0
    listed = [r["name"] for r in json.loads(capsys.readouterr().out)]
    assert "git-llava" not in listed and "nearest" not in listed  # video generators (frames of one clip)
    assert "seq2seq" in listed and "retrieval" in listed and "hf-vlm" in listed
    assert listed == backends_with("generate", StorytellingTask.inputs)
    for name in listed:
        assert MODELS.get(name).inputs in StorytellingTask.inputs
    left_out = [n for n in backends_with("generate") if n not in listed]
    # video generators (frames of one clip) and text-only ones (the prompt alone: they see no photo)
    assert {n: MODELS.get(n).inputs for n in left_out} == {"git-llava": "video", "nearest": "video",
                                                           "hf-chat": "text", "openai-batch": "text"}


def test_masking_is_refused_by_declaration() -> None:
    from connote.models.masking import can_mask, require_masking

    class Unregistered:
        backend = "plain"

    class Masks(Unregistered):
        def masking_game(self, image, caption, *, grid=None, compat=None):
            return None

    with pytest.raises(InputError, match="'plain' cannot be explained.*connote models --capability mask"):
        require_masking(Unregistered())
    assert can_mask(Masks())  # built outside the registry: the method says it
    declared_match_only = Masks()
    declared_match_only._connote_backend = MODELS.get("openai")  # as load_model records a registration
    assert not can_mask(declared_match_only)  # the registration says no, whatever methods it has
    declared_match_only._connote_backend = MODELS.get("hf-blip-itm")
    assert can_mask(declared_match_only)


def test_every_registration_declares_known_inputs_and_frames() -> None:
    from connote.models.registry import INPUTS

    for name in MODELS.names():
        b = MODELS.get(name)
        assert b.inputs in INPUTS and len(b.frames) == 3, name
    assert {n: MODELS.get(n).inputs for n in ("seq2seq", "nearest", "git-llava", "retrieval")} == {
        "seq2seq": "photo-ids", "nearest": "video", "git-llava": "video", "retrieval": "images"}
