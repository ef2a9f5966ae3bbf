"""Stage-1 data as the VMC paper built it (HAIVMet + an equal MSCOCO sample, the two A.3 prompts, still 6-frame
videos), the A.5.3 no-pretraining recipe, and the A.2 fine-tuned GIT baseline captioning through `git-video`.

Tiny random GIT and Llama models built from configs and saved to a temp folder; the shipped recipes are loaded with
only the model and data paths (and a few steps) overridden.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("av")

import connote.vmc.train  # noqa: E402
from connote.cli import main  # noqa: E402
from connote.core.errors import InputError  # noqa: E402
from connote.vmc.train.config import load_config  # noqa: E402

RECIPES = Path(connote.vmc.train.__file__).parent / "recipes"
CAPTIONS = {"red": "the apple is as red as fire", "blue": "the sea is as blue as ice",
            "green": "the leaf is as green as grass"}
COCO = ["a red apple on a table", "a blue sea", "a green leaf", "a red car", "a blue sky"]
WORDS = sorted({w for c in [*CAPTIONS.values(), *COCO] for w in c.split()})
RGB = {"red": (200, 30, 30), "blue": (30, 30, 200), "green": (30, 200, 30)}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny GIT + LLM, the catalogue's HAIVMet and COCO folders, and a 6-video VMC set."""
    from PIL import Image

    from connote.media.synthetic import write_video
    from tests.support.tiny_sources import make_tiny_sources

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("stage1")
    git, llm = make_tiny_sources(root / "models", WORDS)
    haivmet = root / "haivmet"
    (haivmet / "images").mkdir(parents=True)
    records = []
    for i, (name, cap) in enumerate(CAPTIONS.items()):
        Image.new("RGB", (40, 40), RGB[name]).save(haivmet / "images" / f"{name}.png")
        records.append({"image": f"{name}.png", "caption": cap, "kind": "metaphor", "id": i})
    (haivmet / "haivmet.json").write_text(json.dumps(records))
    coco = root / "coco"
    (coco / "train2014").mkdir(parents=True)
    (coco / "annotations").mkdir()
    for i in range(len(COCO)):
        Image.new("RGB", (48, 32), (50 * i, 90, 140)).save(coco / "train2014" / f"COCO_{i:06d}.jpg")
    (coco / "annotations" / "captions_train2014.json").write_text(json.dumps({
        "images": [{"id": i, "file_name": f"COCO_{i:06d}.jpg"} for i in range(len(COCO))],
        "annotations": [{"id": 10 + i, "image_id": i, "caption": c} for i, c in enumerate(COCO)]}))
    videos = root / "videos"
    videos.mkdir()
    rows = ["unique_id,annotator_1,annotator_2"]
    for name, cap in CAPTIONS.items():
        for j in range(2):
            write_video(videos / f"{name}{j}.mp4", [], size=(32, 32), colours=[RGB[name]] * 8)
            rows.append(f"{name}{j},{cap},{cap}")
    (root / "vmc.csv").write_text("\n".join(rows) + "\n")
    (root / "train.txt").write_text("red0\nblue0\ngreen0\nred1\n")
    (root / "val.txt").write_text("blue1\ngreen1\n")
    return {"root": root, "git": git, "llm": llm, "haivmet": haivmet, "coco": coco, "videos": videos}


def _vmc_data(tiny: dict[str, Path]) -> dict[str, str]:
    return {"captions": str(tiny["root"] / "vmc.csv"), "videos": str(tiny["videos"]),
            "train_split": str(tiny["root"] / "train.txt"), "val_split": str(tiny["root"] / "val.txt")}


def test_stage1_reads_haivmet_and_an_equal_coco_sample_with_the_two_prompts(tiny: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    from connote.vmc.train.datasets import build_examples
    from connote.vmc.train.git_llava import GitLlava
    from connote.vmc.train.loop import train

    cfg = load_config(RECIPES / "paper-stage1-haivmet-coco.yaml", {
        "output_dir": str(tmp_path / "run"), "model": {"captioner": str(tiny["git"]), "llm": str(tiny["llm"])},
        "data": {"haivmet": str(tiny["haivmet"]), "coco": str(tiny["coco"]), "val_fraction": 0.0},
        "train": {"max_steps": 1}})
    assert cfg.train.batch_size == 4 and cfg.train.epochs == 2  # §5.1
    logged: list[str] = []
    train_ex, val_ex = build_examples(1, cfg.data, cfg.model, 0, log=logged.append)
    assert val_ex == [] and len(train_ex) == 6
    assert logged == ["stage 1: 3 metaphor + 3 literal pairs (of 3 metaphor and 5 literal; haivmet 3, coco 5)"]
    met = [e for e in train_ex if e.example_id.startswith("metaphor:")]
    lit = [e for e in train_ex if e.example_id.startswith("literal:")]
    assert {e.caption for e in met} == set(CAPTIONS.values()) and {e.caption for e in lit} <= set(COCO)
    assert {e.prompt for e in met} == {"What caption can best describe the metaphor in the video?"}
    assert {e.prompt for e in lit} == {"What caption can best describe the video?"}
    assert all(e.kind == "image" and e.path.is_file() for e in train_ex)
    model = GitLlava.build(cfg.model)
    from connote.vmc.train.datasets import ExampleDataset

    pv = ExampleDataset(train_ex, cfg.model, model.pixel_values)[0]["pixel_values"]
    assert pv.shape[:2] == (1, 6) and all(torch.equal(pv[0, 0], pv[0, k]) for k in range(6))  # a still video
    result = train(cfg, log=lambda m: None)
    assert result.steps == 1 and not (Path(result.final_dir) / "llm").exists()  # projector only


def test_a_missing_catalogue_file_is_named(tiny: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"stage: 1\noutput_dir: {tmp_path / 'run'}\nmodel: {{captioner: {tiny['git']}, "
                      f"llm: {tiny['llm']}}}\ndata: {{haivmet: {tmp_path}, coco: {tiny['coco']}}}\n")
    assert main(["metaphor", "train", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: data.haivmet: no haivmet.json" in err and "Traceback" not in err


def test_the_no_pretraining_recipe_finetunes_from_scratch(tiny: dict[str, Path], tmp_path: Path) -> None:
    from connote.vmc.train.loop import train

    cfg = load_config(RECIPES / "paper-no-pretraining.yaml", {
        "output_dir": str(tmp_path / "np"), "model": {"captioner": str(tiny["git"]), "llm": str(tiny["llm"])},
        "data": _vmc_data(tiny), "train": {"max_steps": 1}})
    assert cfg.stage == 2 and cfg.init_from is None and cfg.model.clips == 1
    result = train(cfg, log=lambda m: None)
    assert result.steps == 1 and (Path(result.final_dir) / "llm" / "config.json").is_file()


def test_git_loss_is_gits_own(tiny: dict[str, Path]) -> None:
    """The baseline's loss (summed, with its token count) is GitForCausalLM's own language-modelling loss."""
    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.datasets import sample_clips
    from connote.vmc.train.git_baseline import GitBaseline

    model = GitBaseline.build(ModelConfig(architecture="git", captioner=str(tiny["git"]), frame_sampling="fixed"))
    model.eval()
    pv = model.pixel_values(sample_clips(tiny["videos"] / "red0.mp4", model.cfg)).unsqueeze(0)
    caption = CAPTIONS["red"]
    with torch.no_grad():
        loss_sum, n = model(pv, [""], [caption])
        ids = torch.tensor([model.tokenizer(caption).input_ids])
        reference = model.captioner(input_ids=ids, pixel_values=pv[:, 0], labels=ids).loss
    assert int(n) == len(model.caption_ids(caption)) == len(caption.split()) + 1
    assert float(loss_sum / n) == pytest.approx(float(reference), rel=1e-5)


def test_the_git_baseline_recipe_trains_a_git_video_checkpoint(tiny: dict[str, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import GitForCausalLM

    cfg_path = tmp_path / "git.yaml"
    cfg_path.write_text((RECIPES / "paper-git-baseline.yaml").read_text())
    overrides = {"output_dir": str(tmp_path / "git"), "model": {"captioner": str(tiny["git"])},
                 "data": _vmc_data(tiny), "train": {"max_steps": 2, "lr": 1e-3, "warmup_ratio": 0.0}}
    cfg = load_config(cfg_path, overrides)
    assert cfg.model.architecture == "git" and cfg.train.batch_size == 4  # A.2
    from connote.vmc.train.loop import train

    result = train(cfg, log=lambda m: None)
    final = Path(result.final_dir)
    assert result.steps == 2 and (final / "git_baseline.json").is_file()
    before, after = GitForCausalLM.from_pretrained(tiny["git"]), GitForCausalLM.from_pretrained(final)
    changed = [not torch.equal(a, b) for a, b in zip(before.parameters(), after.parameters(), strict=True)]
    assert sum(changed) > len(changed) // 2  # vision encoder and text decoder both trained
    out = tmp_path / "cap"
    assert main(["metaphor", "caption", "--videos", str(tiny["videos"]), "--model", f"git-video:{final}",
                 "--out", str(out), "--max-new-tokens", "6", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["captioned"] == 6 and summary["errors"] == 0
    rows = [json.loads(x) for x in (out / "captions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(isinstance(r["text"], str) for r in rows)


def test_the_git_baseline_refuses_what_it_cannot_do(tiny: dict[str, Path]) -> None:
    from connote.vmc.train.config import config_from_dict

    with pytest.raises(InputError, match="stage 2, no init_from, no train.lora"):
        config_from_dict({"stage": 2, "init_from": "runs/stage1/final", "model": {"architecture": "git"}})
    with pytest.raises(InputError, match="model.architecture must be git-llava or git"):
        config_from_dict({"model": {"architecture": "gpt"}})
