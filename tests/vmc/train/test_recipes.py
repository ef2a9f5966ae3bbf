"""The two GIT-LLaVA recipes ship as config files: "as the paper states" and "as the public scripts ran"."""

from __future__ import annotations

from pathlib import Path

import pytest

import connote.vmc.train
from connote.vmc.train.config import load_config

RECIPES = Path(connote.vmc.train.__file__).parent / "recipes"


@pytest.mark.parametrize("name", ["paper-stage1", "paper-stage2", "public-stage1", "public-stage2"])
def test_recipe_loads(name: str) -> None:
    cfg = load_config(RECIPES / f"{name}.yaml")
    assert cfg.stage == int(name[-1])
    assert cfg.train.batch_size == 16  # 2 GPUs x 8 (stage 1) and 4 x 4 (stage 2) in the public scripts
    assert cfg.model.frame_sampling == "random" and cfg.model.layer == -2
    assert "<video>" in cfg.model.template


def test_the_recipes_differ_where_the_public_scripts_did() -> None:
    paper1, public1 = load_config(RECIPES / "paper-stage1.yaml"), load_config(RECIPES / "public-stage1.yaml")
    paper2, public2 = load_config(RECIPES / "paper-stage2.yaml"), load_config(RECIPES / "public-stage2.yaml")
    assert public1.model.template == "<video>" and public1.model.prompt == ""  # LLaVA's "plain": no prompt
    assert paper1.model.prompt == "What caption can best describe the metaphor in the video?"
    assert public1.train.lr == paper1.train.lr == 1e-3 and public2.train.lr == paper2.train.lr == 2e-6
    assert public2.model.template.startswith("A chat between a curious user and an artificial intelligence")
    assert public2.model.template.endswith("USER: <video>\n{prompt} ASSISTANT:")
    assert paper2.model.template == "USER: <video>\n{prompt} ASSISTANT:"
    assert paper2.model.clips == public2.model.clips == 4 and paper2.train.epochs == public2.train.epochs == 5
    assert "--max-new-tokens 120" in (RECIPES / "public-stage2.yaml").read_text()
    assert '--prompt "What metaphor can best describe the video?"' in (RECIPES / "public-stage2.yaml").read_text()
