"""The GIT-LLaVA training config: pydantic checks name the YAML file, line, field path and expected type."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.vmc.train.config import ModelConfig, TrainConfig, config_from_dict, load_config

YAML = """\
stage: 2
output_dir: runs/x
model:
  llm: tiny-llm
  clips: four
train:
  epochs: 2
  lora:
    r: 2
    alfa: 3
"""


def test_defaults_are_kept() -> None:
    cfg = config_from_dict({})
    assert cfg.to_dict() == {
        "stage": 2, "output_dir": "runs/git-llava", "init_from": None, "resume": True,
        "model": {"architecture": "git-llava", "captioner": "microsoft/git-large-vatex", "llm": "lmsys/vicuna-13b-v1.5",
                  "layer": -2, "clips": 1, "frames_per_clip": 6, "frame_sampling": "random", "frame_seed": 0,
                  "prompt": "What caption can best describe the metaphor in the video?",
                  "template": "USER: <video>\n{prompt} ASSISTANT:", "max_caption_tokens": 48,
                  "projector_hidden": None},
        "data": {"captions": None, "videos": None, "train_split": None, "val_split": None, "metaphor_images": None,
                 "literal_images": None, "image_dir": None, "literal_image_dir": None, "val_fraction": 0.0,
                 "frame_size": None, "haivmet": None, "coco": None, "coco_split": "train2014", "synth": None,
                 "synth_image_dir": None},
        "train": {"epochs": 1.0, "max_steps": None, "batch_size": 4, "grad_accum": 1, "lr": 2e-6,
                  "weight_decay": 0.0, "warmup_ratio": 0.03, "scheduler": "cosine", "bf16": "auto", "seed": 0,
                  "train_llm": None, "lora": None, "early_stopping_patience": 2, "eval_every": None,
                  "save_every": None, "keep_checkpoints": 2, "num_workers": 0, "log_every": 1,
                  "max_grad_norm": 1.0, "pack": "auto", "compile": "auto", "kernels": "auto"}}
    assert isinstance(cfg, TrainConfig)


def test_values_are_converted_as_before() -> None:
    cfg = config_from_dict({"model": {"llm": 7}, "train": {"epochs": 3, "lora": {"r": 4, "target_modules": ["q", 1]}}})
    assert cfg.model.llm == "7" and cfg.train.epochs == 3.0 and isinstance(cfg.train.epochs, float)
    assert cfg.train.lora is not None and cfg.train.lora.target_modules == ["q", "1"]
    # the sections stay dataclasses: git_llava.py replaces and serialises them
    assert dataclasses.replace(cfg.model, clips=3).clips == 3
    assert dataclasses.asdict(cfg.model)["llm"] == "7"


@pytest.mark.parametrize(("data", "message"), [
    ({"train": {"lr": "0.1"}}, "train.lr should be float, got '0.1'"),
    ({"train": {"batch_size": 4.0}}, "train.batch_size should be int, got 4.0"),
    ({"train": {"batch_size": True}}, "train.batch_size should be int, got True"),
    ({"train": {"bf16": True}}, "train.bf16 should be str, got True (YAML reads yes/no/on/off as booleans"),
    ({"resume": "no"}, "resume should be bool (true or false), got 'no'"),
    ({"model": 3}, "model should be a mapping, got 3"),
    ({"train": {"lora": {"target_modules": None}}}, "train.lora.target_modules may not be empty"),
    ({"train": {"lora": {"rank": 4}}}, "unknown config field(s) train.lora.rank; valid fields of train.lora: "
                                       "alpha, dropout, r, target_modules"),
    ({"modle": {}}, "unknown config field(s) modle; valid fields: data, init_from, model, output_dir, resume"),
    ({"train": {"scheduler": "cosin"}}, "train.scheduler must be cosine, linear or constant"),
])
def test_mistyped_and_unknown_fields(data: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        config_from_dict(data)
    assert message in str(info.value)


def test_yaml_file_line_and_path_in_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(YAML)
    with pytest.raises(InputError) as info:
        load_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}, line 10: unknown config field(s) train.lora.alfa")
    assert "model.clips should be int, got 'four'" in msg
    assert main(["metaphor", "train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "train.lora.alfa" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    path.write_text(YAML.replace("    alfa: 3\n", ""))
    with pytest.raises(InputError, match=r"c\.yaml, line 5: model\.clips should be int"):
        load_config(path)


def test_config_that_is_not_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metaphor", "train", "--config", str(tmp_path)]) == 2
    assert "is a directory, expected a YAML file" in capsys.readouterr().err
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="config must be a mapping of sections, got list"):
        load_config(tmp_path / "list.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"stage: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_config(tmp_path / "bin.yaml")


def test_model_config_built_directly_is_checked() -> None:
    with pytest.raises(Exception, match="clips"):
        ModelConfig(clips="two")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="unexpected_keyword_argument|Unexpected keyword"):
        ModelConfig(clipz=2)  # type: ignore[call-arg]
