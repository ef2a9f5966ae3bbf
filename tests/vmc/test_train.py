"""GIT-LLaVA training on tiny random models: both stages, exact resume, a colour task, two processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from connote.cli import main  # noqa: E402
from connote.core.errors import InputError  # noqa: E402
from connote.vmc.train.config import config_from_dict, load_config  # noqa: E402
from connote.vmc.train.git_llava import GitLlava  # noqa: E402
from connote.vmc.train.loop import train  # noqa: E402


def _log(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]


def test_config_rejects_unknown_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"stage": 2, "train": {"lrr": 0.1}}))
    with pytest.raises(InputError, match=r"unknown config field\(s\) train\.lrr"):
        load_config(path)
    assert main(["metaphor", "train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "train.lrr" in err and str(path) in err
    with pytest.raises(InputError, match="model.clips should be int"):
        config_from_dict({"model": {"clips": "four"}})
    with pytest.raises(InputError, match="stage must be 1 or 2"):
        config_from_dict({"stage": 3})


def test_stage1_trains_projector_only(colour_set, tmp_path: Path) -> None:  # noqa: ANN001
    from PIL import Image

    from connote.vmc.train.git_llava import GitLlava

    imgs = tmp_path / "images"
    imgs.mkdir()
    recs = []
    for i, (name, rgb) in enumerate([("red", (200, 30, 30)), ("blue", (30, 30, 200))]):
        Image.new("RGB", (40, 40), rgb).save(imgs / f"{name}.png")
        recs.append({"image": f"{name}.png", "caption": f"the apple is as {name} as fire", "id": i})
    (tmp_path / "met.json").write_text(json.dumps(recs))
    (tmp_path / "coco.json").write_text(json.dumps({
        "images": [{"id": 1, "file_name": "red.png"}, {"id": 2, "file_name": "blue.png"}],
        "annotations": [{"image_id": 1, "caption": "the apple"}, {"image_id": 2, "caption": "the sea"}]}))
    cfg = config_from_dict({
        "stage": 1, "output_dir": str(tmp_path / "run"),
        "model": {"captioner": str(colour_set.git), "llm": str(colour_set.llm), "clips": 2},
        "data": {"metaphor_images": str(tmp_path / "met.json"), "literal_images": str(tmp_path / "coco.json"),
                 "image_dir": str(imgs)},
        "train": {"max_steps": 1, "batch_size": 4, "lr": 1e-2, "warmup_ratio": 0.0}})
    before = GitLlava.build(cfg.model)
    result = train(cfg)
    assert result.steps == 1 and len(result.losses) == 1
    final = Path(result.final_dir)
    assert not (final / "llm").exists()  # the LLM was frozen: only the projector is saved
    after = GitLlava.from_pretrained(final)
    for a, b in zip(before.llm.parameters(), after.llm.parameters()):
        assert torch.equal(a, b)
    assert not torch.equal(before.projector[0].weight, after.projector[0].weight)


def test_stage2_lora_step_and_generation(colour_set, stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    pytest.importorskip("peft")
    cfg = config_from_dict(stage2_config(tmp_path / "run", max_steps=1, lora={"r": 4, "alpha": 8,
                                                                            "dropout": 0.0}))
    cfg.model.clips = 2  # GIT-LLaVA-X: two clips summed
    result = train(cfg)
    final = Path(result.final_dir)
    assert (final / "llm_adapter").is_dir() and not (final / "llm").exists()
    model = GitLlava.from_pretrained(final)
    from connote.vmc.train.datasets import sample_clips

    pv = model.pixel_values(sample_clips(colour_set.videos / "red4.mp4", model.cfg)).unsqueeze(0)
    assert pv.shape[:3] == (1, 2, 6)
    (caption,) = model.generate(pv, max_new_tokens=5)
    assert isinstance(caption, str)


def test_stage2_full_step_changes_llm(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    cfg = config_from_dict(stage2_config(tmp_path / "run", max_steps=1, warmup_ratio=0.0))
    result = train(cfg)
    final = Path(result.final_dir)
    assert (final / "llm" / "config.json").exists()
    base = GitLlava.build(cfg.model)
    tuned = GitLlava.from_pretrained(final)
    changed = [not torch.equal(a, b) for a, b in zip(base.llm.parameters(), tuned.llm.parameters())]
    assert any(changed)
    assert _log(tmp_path / "run")[0]["step"] == 1


@pytest.mark.slow
def test_exact_resume(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    full = train(config_from_dict(stage2_config(tmp_path / "full", max_steps=6, save_every=2)))
    part_cfg = config_from_dict(stage2_config(tmp_path / "part", max_steps=6, save_every=2))
    first = train(part_cfg, stop_after_steps=3)  # steps 1-3; newest checkpoint at step 2
    assert first.final_dir == "" and first.steps == 3
    rest = train(part_cfg)  # resumes from step 2: replays step 3, then 4-6 (crosses an epoch boundary)
    assert rest.steps == 6
    assert rest.losses == full.losses[2:]
    assert first.losses[2] == full.losses[2]
    a = GitLlava.from_pretrained(full.final_dir)
    b = GitLlava.from_pretrained(rest.final_dir)
    for x, y in zip(a.parameters(), b.parameters()):
        assert torch.equal(x, y)


@pytest.mark.slow
def test_colour_captions_beat_chance(colour_set, stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    from connote.vmc.template import parse_metaphor
    from connote.vmc.train.datasets import sample_clips

    cfg = config_from_dict(stage2_config(tmp_path / "run", epochs=15, log_every=10, early_stopping_patience=3))
    result = train(cfg)
    assert result.best_val_loss is not None and result.losses[-1] < result.losses[0] / 3
    model = GitLlava.from_pretrained(result.final_dir)
    pv = torch.stack([model.pixel_values(sample_clips(colour_set.videos / f"{v}.mp4", model.cfg))
                      for v in colour_set.test_ids])
    captions = model.generate(pv, max_new_tokens=12)
    exact = sum(c == colour_set.caption_for(v) for c, v in zip(captions, colour_set.test_ids))
    primary = sum(parse_metaphor(c) is not None
                  and parse_metaphor(c).primary == parse_metaphor(colour_set.caption_for(v)).primary
                  for c, v in zip(captions, colour_set.test_ids))
    chance = len(colour_set.test_ids) / 4
    assert primary > 2 * chance and exact > chance, captions


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_module_entry_point_runs_the_command_behind_the_same_error_boundary(tmp_path: Path) -> None:
    """``python -m connote.vmc.train`` (what torchrun and accelerate launch) runs ``connote vmc train`` without
    importing the ``connote`` entry point: bad input is one line and exit 2, as from ``connote``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    code = ("import runpy, sys; sys.argv = ['x', '--config', 'no-such-recipe.yaml']\n"
            "try:\n    runpy.run_module('connote.vmc.train', run_name='__main__')\n"
            "finally:\n    print(sorted(m for m in sys.modules if m == 'connote.cli'), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: no-such-recipe.yaml: no such file") and lines[-1] == "[]"


@pytest.mark.slow
def test_two_processes_match_one(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    one = train(config_from_dict(stage2_config(tmp_path / "one", max_steps=3)))
    cfg_path = tmp_path / "two.yaml"
    cfg_path.write_text(yaml.safe_dump(stage2_config(tmp_path / "two", max_steps=3)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), "-m", "connote.vmc.train", "--config", str(cfg_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 process(es)" in proc.stdout + proc.stderr
    two = [r["loss"] for r in _log(tmp_path / "two") if "loss" in r]
    assert two == pytest.approx(one.losses, rel=1e-5)
    a = GitLlava.from_pretrained(one.final_dir)
    b = GitLlava.from_pretrained(tmp_path / "two" / "final")
    for x, y in zip(a.projector.parameters(), b.projector.parameters()):
        assert torch.allclose(x, y, atol=1e-5)


def test_clip_states_are_summed_and_loss_covers_caption_only(colour_set) -> None:  # noqa: ANN001
    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.datasets import sample_clips

    x = GitLlava.build(ModelConfig(captioner=str(colour_set.git), llm=str(colour_set.llm), clips=2))
    one = GitLlava(ModelConfig(captioner=str(colour_set.git), llm=str(colour_set.llm), clips=1),
                   x.captioner, x.processor, x.llm, x.tokenizer)
    pv = x.pixel_values(sample_clips(colour_set.videos / "green0.mp4", x.cfg)).unsqueeze(0)
    summed = one.encode(pv[:, :1]) + one.encode(pv[:, 1:])
    assert torch.allclose(x.encode(pv), summed, atol=1e-5)
    caps = ["the leaf is as green as grass", "the sea is as blue as ice ice"]
    pv2 = torch.cat([pv, pv])
    loss, ntok = x(pv2, [x.cfg.prompt] * 2, caps)
    assert int(ntok) == sum(len(x.caption_ids(c)) for c in caps) == 8 + 9
    _, _, labels, _ = x._sequences(x.encode(pv2), [x.cfg.prompt] * 2, caps)
    assert labels[0][labels[0] != -100].tolist() == x.caption_ids(caps[0])
    assert x.caption_ids(caps[0])[-1] == x.tokenizer.eos_token_id


def test_early_stopping(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    # lr 0: the validation loss never improves after the first evaluation
    cfg = config_from_dict(stage2_config(tmp_path / "run", epochs=10, lr=0.0, eval_every=1,
                                         early_stopping_patience=2))
    result = train(cfg)
    assert result.stopped_early and result.steps == 3
    vals = [r["val_loss"] for r in _log(tmp_path / "run") if "val_loss" in r]
    assert len(vals) == 3 and vals[0] == vals[1] == vals[2]


def test_bf16_step_on_cpu(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    cfg = config_from_dict(stage2_config(tmp_path / "run", max_steps=1, bf16="yes", lora={"r": 2, "alpha": 4}))
    result = train(cfg)
    assert result.steps == 1 and result.losses[0] == result.losses[0]  # finite, not nan
    assert "bf16" in (tmp_path / "run" / "config.json").read_text()


def test_workers_and_grad_accum_do_not_change_the_run(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    base = train(config_from_dict(stage2_config(tmp_path / "a", max_steps=2)))
    other = train(config_from_dict(stage2_config(tmp_path / "b", max_steps=2, num_workers=2, grad_accum=2)))
    assert other.losses == pytest.approx(base.losses, rel=1e-5)


@pytest.mark.slow
def test_stage2_from_a_lora_model_and_bad_layer(colour_set, stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    pytest.importorskip("peft")
    first = train(config_from_dict(stage2_config(tmp_path / "a", max_steps=1, warmup_ratio=0.0,
                                                 lora={"r": 2, "alpha": 4, "dropout": 0.0})))
    cfg = stage2_config(tmp_path / "b", max_steps=1)
    cfg["init_from"] = first.final_dir
    second = train(config_from_dict(cfg))
    merged = GitLlava.from_pretrained(first.final_dir, merge_adapter=True)
    tuned = GitLlava.from_pretrained(second.final_dir)
    assert torch.equal(merged.projector[0].weight, GitLlava.from_pretrained(first.final_dir).projector[0].weight)
    assert (Path(second.final_dir) / "llm").is_dir() and tuned is not None
    from connote.vmc.train.config import ModelConfig

    with pytest.raises(InputError, match="model.layer 5 is out of range"):
        GitLlava.build(ModelConfig(captioner=str(colour_set.git), llm=str(colour_set.llm), layer=5))


def test_train_cli_with_overrides(stage2_config, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(stage2_config(tmp_path / "ignored", epochs=3)))
    assert main(["metaphor", "train", "--config", str(path), "--output-dir", str(tmp_path / "run"),
                 "--max-steps", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["steps"] == 1 and result["final"] == str(tmp_path / "run" / "final")
    assert not (tmp_path / "ignored").exists()
    assert main(["metaphor", "caption", "--videos", str(tmp_path), "--model", f"git-llava:{result['final']}",
                 "--out", str(tmp_path / "cap")]) == 2  # no videos in that folder


class _RunsCode:
    """Unpickling this object calls ``Path.write_text`` on the marker: what a crafted checkpoint would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (Path.write_text, (self.marker, "code ran"))


def test_resume_never_unpickles_code(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    cfg = config_from_dict(stage2_config(tmp_path / "run", max_steps=4, save_every=1))
    first = train(cfg, stop_after_steps=1)
    ckpt = tmp_path / "run" / "checkpoints" / "step-1"
    assert first.steps == 1 and (ckpt / "scheduler.pt").exists()
    progress = json.loads((ckpt / "progress.json").read_text())
    assert progress["format"] == 2
    # every file of a checkpoint this connote writes loads without pickle
    for f in ("trainable.pt", "optimizer.pt", "scheduler.pt", "rng-0.pt"):
        torch.load(ckpt / f, weights_only=True)
    marker = tmp_path / "marker.txt"
    good = (ckpt / "scheduler.pt").read_bytes()
    torch.save({"last_epoch": 1, "evil": _RunsCode(marker)}, ckpt / "scheduler.pt")
    with pytest.raises(InputError, match="refusing to load: the file needs full unpickling") as info:
        train(cfg)
    assert "scheduler.pt" in str(info.value)
    assert not marker.exists()
    # the same for the RNG state, and through the CLI: exit 2, one line, no traceback
    (ckpt / "scheduler.pt").write_bytes(good)
    torch.save({"python": _RunsCode(marker)}, ckpt / "rng-0.pt")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(stage2_config(tmp_path / "run", max_steps=4, save_every=1)))
    assert main(["metaphor", "train", "--config", str(path)]) == 2
    assert not marker.exists()


def test_resume_refuses_checkpoint_format_1(stage2_config, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    cfg = config_from_dict(stage2_config(tmp_path / "run", max_steps=4, save_every=1))
    train(cfg, stop_after_steps=1)
    progress_file = tmp_path / "run" / "checkpoints" / "step-1" / "progress.json"
    progress = json.loads(progress_file.read_text())
    del progress["format"]  # what connote wrote before checkpoint format 2
    progress_file.write_text(json.dumps(progress))
    with pytest.raises(InputError, match="checkpoint format 1 stores optimizer/scheduler/RNG state as pickles"):
        train(cfg)
