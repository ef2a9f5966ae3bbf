"""Every generating backend says, from its spec alone, what a task needs from it (photos or photo ids, frames, frame
sampling, its own prompt), and says what the built model says (issue 37, item 3): a task binds to an unbuilt model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from connote.models.lazy import LazyModel  # noqa: E402
from connote.models.registry import MODELS, load_model, needs_of  # noqa: E402
from tests.models.test_backend_contract import BUILDERS, Fixtures, _one_thread, chat_url, fx  # noqa: E402, F401

#: the engines' servers start a process per build; their needs are the openai backend's
SERVED = ("vllm", "sglang")


@pytest.mark.parametrize("name", sorted(n for n in BUILDERS if "generate" in MODELS.get(n).capabilities
                                        and n not in SERVED))
def test_the_spec_says_what_the_built_model_needs(name: str, fx: Fixtures, chat_url: str,  # noqa: F811 - fixtures
                                                  tmp_path: Path) -> None:
    spec = BUILDERS[name](tmp_path, fx, chat_url)
    lazy = LazyModel(spec, tmp_path / "run", announce=False)
    from_spec = needs_of(lazy)
    assert not lazy.loaded
    built = load_model(spec)
    try:
        assert from_spec == needs_of(built)
    finally:
        close = getattr(built, "close", None)
        if callable(close):
            close()
