"""Long steps show a progress bar with a count and ETA on stderr; --no-progress turns it off."""

import json

import numpy as np

from connote.cli import main
from connote.vist.data import read_official
from connote.vist.sample import write_sample_vist


def _ratings_and_scores(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("story_id,rating,rater\n" + "".join(f"s{k},{1 + k % 5},a\ns{k},{1 + (k * 3) % 5},b\n"
                                                           for k in range(1, 9)))
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({f"s{k}": {"METEOR": 0.1 * k, "CIDEr": 0.3 * (k % 3)} for k in range(1, 9)}))
    return ratings, scores


def test_correlate_bootstrap_bar(tmp_path, capsys) -> None:
    ratings, scores = _ratings_and_scores(tmp_path)
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--n-boot", "30"]) == 0
    err = capsys.readouterr().err
    assert "bootstrap (30 resamples)" in err and "6/6" in err  # 2 metrics x 3 coefficients
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--n-boot", "30", "--no-progress"]) == 0
    assert "bootstrap" not in capsys.readouterr().err


def test_story_train_and_stats_bars(tmp_path, capsys) -> None:
    paths = write_sample_vist(tmp_path / "sample")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "f.npz", **{p: rng.normal(size=4).astype(np.float32)
                                    for p in read_official(paths["train"]).images})
    assert main(["story", "train", "--sis", str(paths["train"]), "--features", str(tmp_path / "f.npz"), "--out",
                 str(tmp_path / "m"), "--steps", "4", "--embed-dim", "8", "--hidden-dim", "8"]) == 0
    assert "training" in (err := capsys.readouterr().err) and "4/4" in err
    assert main(["story", "train", "--sis", str(paths["train"]), "--features", str(tmp_path / "f.npz"), "--out",
                 str(tmp_path / "m"), "--steps", "4", "--embed-dim", "8", "--hidden-dim", "8", "--no-progress"]) == 0
    assert "training" not in capsys.readouterr().err
