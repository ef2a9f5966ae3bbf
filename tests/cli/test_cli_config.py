"""``--config FILE.yaml`` on run commands: the file's values, the command line over them, bad files exit 2,
and the resolved config written into the run folder runs the same thing again."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from connote.cli import main
from connote.vist.data import read_official
from connote.vist.sample import write_sample_vist


@pytest.fixture()
def sample(tmp_path: Path) -> dict[str, Path]:
    """The sample VIST files plus random 4-d features for every photo (no image encoder needed)."""
    paths = write_sample_vist(tmp_path / "sample")
    rng = np.random.default_rng(0)
    ids = sorted(set(read_official(paths["train"]).images) | set(read_official(paths["test"]).images))
    paths["features"] = tmp_path / "f.npz"
    np.savez(paths["features"], **{p: rng.normal(size=4).astype(np.float32) for p in ids})
    return paths


def _train_config(tmp_path: Path, sample: dict[str, Path], **extra) -> Path:
    cfg = tmp_path / "train.yaml"
    cfg.write_text(yaml.safe_dump({"sis": str(sample["train"]), "features": str(sample["features"]),
                                   "out": str(tmp_path / "m"), "steps": 3, "embed_dim": 8, "hidden-dim": 8,
                                   **extra}))
    return cfg


@pytest.mark.slow
def test_file_values_are_used_and_the_command_line_overrides_them(tmp_path, sample, capsys) -> None:
    cfg = _train_config(tmp_path, sample)
    assert main(["story", "train", "--config", str(cfg)]) == 0
    train = json.loads((tmp_path / "m" / "train.json").read_text())
    assert train["config"]["steps"] == 3 and train["config"]["embed_dim"] == 8 and len(train["losses"]) == 3
    assert main(["story", "train", "--config", str(cfg), "--steps", "2", "--out", str(tmp_path / "m2")]) == 0
    train2 = json.loads((tmp_path / "m2" / "train.json").read_text())
    assert train2["config"]["steps"] == 2 and train2["config"]["hidden_dim"] == 8  # CLI wins, file fills the rest
    resolved = yaml.safe_load((tmp_path / "m2" / "config.yaml").read_text())
    assert resolved["steps"] == 2 and resolved["out"] == str(tmp_path / "m2") and resolved["embed-dim"] == 8
    assert resolved["sis"] == str(sample["train"]) and "config" not in resolved


def test_unknown_key_exits_2_naming_file_key_and_valid_keys(tmp_path, sample, capsys) -> None:
    cfg = _train_config(tmp_path, sample, stepz=5)
    assert main(["story", "train", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and "'stepz'" in err and "valid keys:" in err and "steps" in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("text, where", [("steps: 3\nout: [unclosed\n", "line 3"), ("- a\n- b\n", "mapping")])
def test_bad_yaml_exits_2_with_file_and_line(tmp_path, text, where, capsys) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    assert main(["vist", "score", "sub.json", "--gold", "gold.json", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and where in err and "Traceback" not in err


def test_missing_config_file_exits_2(tmp_path, capsys) -> None:
    assert main(["probe", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_argument_from_the_file_and_underscore_spelling(tmp_path, sample, capsys) -> None:
    """Positional arguments are keys too (``submission``), and ``n_boot`` == ``n-boot``."""
    cfg = tmp_path / "score.yaml"
    cfg.write_text(yaml.safe_dump({"submission": str(sample["template"]), "gold": str(sample["test"]),
                                   "protocol": "album", "n_boot": 0}))
    code = main(["vist", "score", "--config", str(cfg), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["submission"] == str(sample["template"]) and out["n_items"] == 3
    assert out["ci"] == {}  # n_boot 0 from the file: no intervals


def test_resolved_config_reruns_with_the_same_fingerprint(tmp_path, sample, capsys) -> None:
    assert main(["story", "train", "--config", str(_train_config(tmp_path, sample))]) == 0
    capsys.readouterr()
    run = tmp_path / "run"
    spec = f"seq2seq:{tmp_path / 'm'}?features={sample['features']}&decode=greedy"
    assert main(["story", "generate", str(sample["template"]), "--out", str(run), "--model", spec, "--json",
                 "--no-progress", "--limit", "2"]) == 0
    first = json.loads(capsys.readouterr().out)
    resolved = yaml.safe_load((run / "config.yaml").read_text())
    assert resolved["model"] == spec and resolved["limit"] == 2 and resolved["progress"] is False
    assert main(["story", "generate", "--config", str(run / "config.yaml")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["fingerprint"] == first["fingerprint"]
    assert again["n_done_before"] == 2 and again["n_generated_now"] == 0


def test_failed_run_keeps_the_previous_resolved_config(tmp_path, sample, capsys) -> None:
    cfg = _train_config(tmp_path, sample)
    assert main(["story", "train", "--config", str(cfg)]) == 0
    before = (tmp_path / "m" / "config.yaml").read_text()
    assert main(["story", "train", "--config", str(cfg), "--encoder-order", "sideways"]) == 2
    assert (tmp_path / "m" / "config.yaml").read_text() == before


def test_config_help_promises_a_resolved_config_only_where_there_is_a_run_folder(capsys) -> None:
    """`score --help` said "Run folders get the resolved config.yaml"; score has no run folder."""
    helps = {}
    for command in (["score"], ["vist", "stats"], ["cv-probes", "run"], ["vist", "generate"]):
        assert main([*command, "--help"]) == 0
        helps[" ".join(command)] = " ".join(capsys.readouterr().out.split())
    assert "YAML file of option values" in helps["score"]
    assert "config.yaml" not in helps["score"] and "config.yaml" not in helps["vist stats"]
    assert "The run folder gets the resolved config.yaml." in helps["cv-probes run"]
    assert "The run folder gets the resolved config.yaml." in helps["vist generate"]


def _score_files(tmp_path: Path) -> tuple[Path, Path]:
    hyp, ref = tmp_path / "hyp.json", tmp_path / "refs.json"
    hyp.write_text(json.dumps({"a": "a dog runs in the park", "b": "a cat sits on a mat", "c": "two men talk"}))
    ref.write_text(json.dumps({"a": ["a dog runs fast in the park"], "b": ["the cat sits on the mat"],
                               "c": ["two men are talking", "men talk"]}))
    return hyp, ref


def _scored(argv: list[str], capsys) -> dict:
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return {"scores": out["scores"], "signatures": out["signatures"]}


def test_score_config_takes_a_list_of_metrics_as_the_command_line_takes_a_comma_list(tmp_path, capsys) -> None:
    """``metrics: [bleu, cider]`` in ``connote score --config`` was refused (one value expected); it now scores
    what ``--metrics bleu,cider`` scores, and the command line still wins over the file."""
    hyp, ref = _score_files(tmp_path)
    cfg = tmp_path / "score.yaml"
    cfg.write_text(yaml.safe_dump({"hyp": str(hyp), "refs": str(ref), "metrics": ["bleu", "cider"],
                                   "cider-sigma": 3.0}))
    from_file = _scored(["score", "--config", str(cfg)], capsys)
    by_flags = _scored(["score", "--hyp", str(hyp), "--refs", str(ref), "--metrics", "bleu,cider", "--cider-sigma",
                        "3"], capsys)
    assert from_file == by_flags and set(from_file["signatures"]) == {"bleu", "cider"}
    assert set(_scored(["score", "--config", str(cfg), "--metrics", "rouge_l"], capsys)["signatures"]) == {"rouge_l"}
    cfg.write_text(yaml.safe_dump({"hyp": str(hyp), "refs": str(ref), "metrics": "bleu,cider", "cider-sigma": 3.0}))
    assert _scored(["score", "--config", str(cfg)], capsys) == by_flags  # the comma text still reads


@pytest.mark.parametrize(("metrics", "expected"), [
    (["bleu", "nosuch"], "key 'metrics', entry 2 ('nosuch'): not a metric; valid metrics: "),
    (["bleu", 4], "key 'metrics', entry 2 (4): expected one metric name"),
    (["bleu,cider"], "key 'metrics', entry 1 ('bleu,cider'): expected one metric name"),
    (["bleu", {"cider": 1}], "key 'metrics', entry 2 ({'cider': 1}): expected one metric name"),
    ([], "key 'metrics': an empty list names no metric"),
])
def test_score_config_bad_metric_entry_is_one_line_naming_file_and_entry(metrics, expected, tmp_path, capsys) -> None:
    hyp, ref = _score_files(tmp_path)
    cfg = tmp_path / "score.yaml"
    cfg.write_text(yaml.safe_dump({"hyp": str(hyp), "refs": str(ref), "metrics": metrics}))
    assert main(["score", "--config", str(cfg)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {cfg}: {expected}"), captured.err
    assert len(captured.err.strip().splitlines()) == 1 and captured.out == ""
