"""The probe suites: each reader on files in the suite's released layout (with its oddities), the suites'
metrics against values computed here by hand, malformed files named with their line, a tiny BLIP through the
public loading path, MM-SHAP on a suite, the CLI, the catalogue and the report."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from connote.cli import main
from connote.core.errors import InputError

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220), "grey": (128, 128, 128),
           "yellow": (230, 220, 20), "black": (0, 0, 0)}


def _photos(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, rgb in COLOURS.items():
        Image.new("RGB", (40, 32), rgb).save(folder / f"{name}.png")
        out[name] = folder / f"{name}.png"
    return out


def _colour(image: Image.Image) -> str:
    rgb = image.convert("RGB").getpixel((image.width // 2, image.height // 2))
    return min(COLOURS, key=lambda n: sum((a - b) ** 2 for a, b in zip(COLOURS[n], rgb)))


class TableMatcher:
    """p(match) looked up by (image colour, caption) or by caption alone; records every call."""

    backend = "table"

    def __init__(self, table: dict) -> None:
        self.table, self.calls = table, []

    def describe(self) -> dict:
        return {"backend": self.backend, "table": sorted(map(str, self.table.items()))}

    def match_probability(self, images, captions, pairs):
        self.calls.append((len(images), len(captions), len(pairs)))
        out = []
        for i, c in pairs:
            key = (_colour(images[i]), captions[c])
            out.append(self.table[key] if key in self.table else self.table[captions[c]])
        return out


# ------------------------------------------------------------------------------------------- SVO-Probes


def _svo(tmp_path: Path) -> Path:
    photos = _photos(tmp_path / "photos")
    images = tmp_path / "svo" / "images"
    images.mkdir(parents=True)
    for k, name in enumerate(("red", "green", "blue", "grey", "yellow", "black")):
        (images / f"{k + 1}.png").write_bytes(photos[name].read_bytes())
    path = tmp_path / "svo" / "svo_probes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "sentence", "pos_triplet", "neg_triplet", "subj_neg", "verb_neg", "obj_neg", "pos_url",
                    "neg_url", "pos_image_id", "neg_image_id"])
        w.writerow([0, "A dog runs.", "dog,run,park", "dog,sit,park", "False", "True", "False", "", "", 1, 2])
        w.writerow([1, "A dog  runs.", "dog,run,park", "dog,walk,park", "False", "True", "False", "", "", 1, 3])
        w.writerow([2, "A cat sleeps.", "cat,sleep,bed", "dog,sleep,bed", "True", "False", "False", "", "", 4, 5])
        w.writerow([3, "A man eats.", "man,eat,apple", "woman,eat,cake", "True", "False", "True", "", "", 6, 1])
    return path


def test_svo_probes_scores_as_the_released_notebook(tmp_path: Path) -> None:
    from connote.suites.svo.task import SvoTask

    path = _svo(tmp_path)
    table = {("red", "A dog runs."): 0.9, ("green", "A dog runs."): 0.7, ("blue", "A dog runs."): 0.2,
             ("red", "A dog  runs."): 0.9, ("blue", "A dog  runs."): 0.2,
             ("grey", "A cat sleeps."): 0.4, ("yellow", "A cat sleeps."): 0.1,
             ("black", "A man eats."): 0.9, ("red", "A man eats."): 0.9}
    results, outcome = SvoTask(path, progress=False).run(TableMatcher(table), tmp_path / "run")
    assert outcome.failed == 0
    t = results["types"]
    # verb: positives {(A dog runs., 1): right, (A dog  runs., 1): right} (two pairs: the notebook's
    # drop_duplicates compares the sentences as written); negatives {(.., 2): 0.7 wrong, (.., 3): 0.2 right}
    assert t["verb"]["positive"]["accuracy"] == 1.0 and t["verb"]["positive"]["n"] == 2
    assert t["verb"]["negative"]["accuracy"] == 0.5 and t["verb"]["average"] == 0.75
    assert t["subject"]["positive"]["accuracy"] == 0.0 and t["subject"]["negative"]["accuracy"] == 1.0
    # all: positives 2 of 3, negatives 2 of 3; the subject+object row is in no type
    assert t["all"]["positive"]["accuracy"] == pytest.approx(2 / 3)
    assert t["all"]["negative"]["accuracy"] == pytest.approx(2 / 3)
    assert t["all"]["average"] == pytest.approx(2 / 3)
    assert t["object"]["average"] is None and results["n_mixed"] == 1
    rows = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert [r["scores"] for r in rows][2] == [0.4, 0.1]


def test_svo_probes_bad_flag_is_named_with_its_line(tmp_path: Path) -> None:
    from connote.suites.svo.data import read_svo

    path = _svo(tmp_path)
    text = path.read_text().replace(",True,False,False,,,4,5", ",yes,False,False,,,4,5")
    path.write_text(text)
    with pytest.raises(InputError, match=r"svo_probes.csv, line 4, column subj_neg: subj_neg must be True or False"):
        read_svo(path)


# ------------------------------------------------------------------------------------------------ VALSE


def _valse(tmp_path: Path) -> Path:
    photos = _photos(tmp_path / "photos")
    data = tmp_path / "valse"
    (data / "images" / "plurals").mkdir(parents=True)
    for name in ("red", "green"):
        (data / "images" / f"{name}.png").write_bytes(photos[name].read_bytes())
    for name in ("blue", "grey"):  # this piece's images under images/<piece>/, as their own source dataset
        (data / "images" / "plurals" / f"{name}.png").write_bytes(photos[name].read_bytes())
    (data / "existence.json").write_text(json.dumps({
        "existence_0": {"dataset": "visual7w", "image_file": "red.png", "caption": ["there is a dog"],
                        "foil": "there is no dog", "classes": "dog", "classes_foil": "no",
                        "mturk": {"foil": 0, "caption": 3, "other": 0}},
        "existence_1": {"dataset": "visual7w", "image_file": "green.png", "caption": "a red car",
                        "foil": "a blue car", "classes": "red", "classes_foil": "blue",
                        "mturk": {"foil": 2, "caption": 1, "other": 0}}}, indent=4))
    (data / "plurals.json").write_text(json.dumps({
        "plurals_0": {"image_file": "blue.png", "caption": "one cat", "foil": "two cats",
                      "mturk": {"foil": 1, "caption": 2, "other": 0}},
        "plurals_1": {"image_file": "grey.png", "caption": "a cup", "foil": "cups"}}, indent=4))
    return data


VALSE_SCORES = {"there is a dog": 0.8, "there is no dog": 0.3, "a red car": 0.4, "a blue car": 0.6,
                "one cat": 0.6, "two cats": 0.55, "a cup": 0.3, "cups": 0.2}


def test_valse_scores_and_the_mturk_subset(tmp_path: Path) -> None:
    from connote.suites.valse.task import ValseTask

    results, outcome = ValseTask(_valse(tmp_path), progress=False).run(TableMatcher(VALSE_SCORES), tmp_path / "r")
    assert outcome.failed == 0
    valid, every = results["subsets"]["valid"], results["subsets"]["all"]
    # valid (mturk caption >= 2): existence_0 (all right), plurals_0 (caption fits 0.6, foil 0.55 not detected)
    assert valid["pieces"]["existence"] == {"n": 1, "n_ties": 0, "acc_r": 1.0, "p_c": 1.0, "p_f": 1.0, "acc": 1.0,
                                            "precision": 1.0, "recall": 1.0}
    assert valid["pieces"]["plurals"] == {"n": 1, "n_ties": 0, "acc_r": 1.0, "p_c": 1.0, "p_f": 0.0, "acc": 0.5,
                                          "precision": 0.5, "recall": 1.0}
    assert valid["average"]["acc_r"] == 1.0 and valid["average"]["acc"] == 0.75 and valid["average"]["p_f"] == 0.5
    # all: existence_1 (0.4 vs 0.6: nothing right), plurals_1 (no mturk; 0.3 vs 0.2: foil detected, ranked)
    assert every["pieces"]["existence"]["acc_r"] == 0.5 and every["pieces"]["existence"]["p_c"] == 0.5
    assert every["pieces"]["plurals"]["acc_r"] == 1.0 and every["pieces"]["plurals"]["p_f"] == 0.5
    assert every["average"]["acc_r"] == 0.75
    rows = [json.loads(x) for x in (tmp_path / "r" / "items.jsonl").read_text().splitlines()]
    assert [r["valid"] for r in rows] == [True, False, True, False]
    assert rows[0]["captions"] == ["there is a dog", "there is no dog"]  # caption[0] of the list, as released


def test_valse_bad_mturk_is_named_with_its_line(tmp_path: Path) -> None:
    data = _valse(tmp_path)
    piece = json.loads((data / "plurals.json").read_text())
    piece["plurals_1"]["mturk"] = {"caption": "three"}
    (data / "plurals.json").write_text(json.dumps(piece, indent=4))
    from connote.suites.valse.data import read_valse

    line = (data / "plurals.json").read_text().splitlines().index('    "plurals_1": {') + 1
    with pytest.raises(InputError, match=rf"plurals.json, line {line}, column mturk: entry 'plurals_1': mturk must"):
        read_valse(data)


# ------------------------------------------------------------------------------------------- Winoground


def _winoground(tmp_path: Path, rows: list[dict] | None = None) -> Path:
    photos = _photos(tmp_path / "photos")
    data = tmp_path / "wino"
    (data / "images").mkdir(parents=True)
    for k, name in enumerate(("red", "green", "blue", "grey")):
        (data / "images" / f"ex_{k // 2}_img_{k % 2}.png").write_bytes(photos[name].read_bytes())
    rows = rows or [
        {"id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "a dog on a cat",
         "caption_1": "a cat on a dog", "tag": "Object", "secondary_tag": "", "num_main_preds": 1,
         "collapsed_tag": "Object"},
        {"id": 1, "image_0": "ex_1_img_0", "image_1": "ex_1_img_1", "caption_0": "the cup is in the box",
         "caption_1": "the box is in the cup", "tag": "Relation", "secondary_tag": "Symbolic",
         "num_main_preds": 1, "collapsed_tag": "Relation"}]
    path = data / "examples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_winoground_text_image_group(tmp_path: Path) -> None:
    from connote.suites.winoground.task import WinogroundTask

    table = {("red", "a dog on a cat"): 0.9, ("red", "a cat on a dog"): 0.2, ("green", "a dog on a cat"): 0.3,
             ("green", "a cat on a dog"): 0.8,
             # text right (0.6 > 0.5, 0.8 > 0.7), image wrong (c0: 0.6 < 0.7)
             ("blue", "the cup is in the box"): 0.6, ("blue", "the box is in the cup"): 0.5,
             ("grey", "the cup is in the box"): 0.7, ("grey", "the box is in the cup"): 0.8}
    model = TableMatcher(table)
    results, _ = WinogroundTask(_winoground(tmp_path), progress=False).run(model, tmp_path / "r")
    o = results["overall"]
    assert (o["text"]["accuracy"], o["image"]["accuracy"], o["group"]["accuracy"]) == (1.0, 0.5, 0.5)
    assert results["tags"]["Relation"]["image"]["accuracy"] == 0.0 and results["tags"]["Object"]["group"]["n"] == 1
    assert model.calls == [(4, 4, 8)]  # one call for the batch: each image and caption once


def test_a_suite_reads_its_images_ahead_and_an_unreadable_one_is_its_items_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair suite's batch images are read by the runner's prepare step (on the prefetch thread, each image once);
    an item whose image cannot be read gets that image's error and the others are scored in one call."""
    import connote.suites.base as suite_base
    from connote.suites.winoground.task import WinogroundTask
    from tests.support.threads import calling_threads, read_ahead

    path = _winoground(tmp_path)
    (path.parent / "images" / "ex_1_img_1.png").write_bytes(b"not a png")
    threads = calling_threads(monkeypatch, suite_base, "load_image")
    model = TableMatcher({"a dog on a cat": 0.9, "a cat on a dog": 0.2})
    WinogroundTask(path, progress=False).run(model, tmp_path / "r")
    rows = [json.loads(line) for line in (tmp_path / "r" / "items.jsonl").read_text().splitlines()]
    assert [r["error"] is None for r in rows] == [True, False]
    assert "ex_1_img_1.png: cannot read image" in rows[1]["error"]
    assert model.calls == [(3, 2, 4)]  # three images read (one of the bad item's), two captions, the four pairs
    assert read_ahead(threads), threads


def test_winoground_duplicate_id_and_bad_line(tmp_path: Path) -> None:
    from connote.suites.winoground.data import read_winoground

    path = _winoground(tmp_path)
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(InputError, match=r"examples.jsonl, line 3, column id: duplicate id '0' \(first on line 1\)"):
        read_winoground(path)
    path.write_text(path.read_text().splitlines()[0] + "\n" + '{"id": 5, "image_0": "x", "caption_0": "a"\n')
    with pytest.raises(InputError, match=r"examples.jsonl, line 2"):
        read_winoground(path)


# ------------------------------------------------------------------------------------ SugarCrepe and ARO


def test_sugarcrepe_and_aro(tmp_path: Path) -> None:
    from connote.suites.sugarcrepe.task import SugarCrepeTask

    photos = _photos(tmp_path / "photos")
    data = tmp_path / "sugar"
    (data / "images").mkdir(parents=True)
    for name in ("red", "green"):
        (data / "images" / f"{name}.png").write_bytes(photos[name].read_bytes())
    half = Image.new("RGB", (40, 20), COLOURS["red"])
    half.paste(COLOURS["green"], (20, 0, 40, 20))
    half.save(data / "images" / "half.png")
    (data / "replace_rel.json").write_text(json.dumps({
        "1": {"filename": "red.png", "caption": "a dog on a sofa", "negative_caption": "a dog under a sofa"},
        "7": {"filename": "green.png", "caption": "a cat by a tree", "negative_caption": "a cat in a tree"}}))
    (data / "swap_att.json").write_text(json.dumps({
        "0": {"filename": "red.png", "caption": "a big dog and a small cat",
              "negative_caption": "a small dog and a big cat"}}))
    cases = [{"image_path": "red.png", "bbox_x": 0, "bbox_y": 0, "bbox_w": 10, "bbox_h": 10,
              "attributes": ["red", "blue"], "true_caption": f"the red car {k}", "false_caption": f"the blue car {k}"}
             for k in range(25)]
    cases.append({"image_path": "half.png", "bbox_x": 20, "bbox_y": 0, "bbox_w": 20, "bbox_h": 20,
                  "attributes": ["big", "small"], "true_caption": "the green half", "false_caption": "the red half"})
    (data / "visual_genome_attribution.json").write_text(json.dumps(cases, indent=1))
    table = {"a dog on a sofa": 0.7, "a dog under a sofa": 0.3, "a cat by a tree": 0.4, "a cat in a tree": 0.4,
             "a big dog and a small cat": 0.2, "a small dog and a big cat": 0.6,
             # the crop keeps the green half: its true caption wins only if the box was applied
             ("green", "the green half"): 0.9, ("green", "the red half"): 0.1,
             ("red", "the green half"): 0.1, ("red", "the red half"): 0.9}
    for k in range(25):
        table[f"the red car {k}"], table[f"the blue car {k}"] = (0.8, 0.2) if k < 20 else (0.2, 0.8)
    results, _ = SugarCrepeTask(data, progress=False).run(TableMatcher(table), tmp_path / "r")
    assert results["categories"]["replace_rel"]["accuracy"] == 0.5  # the tie (0.4 = 0.4) is wrong
    assert results["categories"]["swap_att"]["accuracy"] == 0.0 and results["sugarcrepe_mean"] == 0.25
    vga = results["vg_attribution"]
    assert vga["accuracy"] == pytest.approx(21 / 26) and vga["n"] == 26
    assert vga["macro"] == 0.8 and list(vga["groups"]) == ["red_blue"]  # big_small has < 25 cases


def test_sugarcrepe_missing_field_is_named_with_its_line(tmp_path: Path) -> None:
    from connote.suites.sugarcrepe.data import read_sugarcrepe

    (tmp_path / "add_att.json").write_text('{\n "0": {"filename": "a.jpg", "caption": "x", '
                                           '"negative_caption": "y"},\n "1": {"filename": "b.jpg", "caption": "z"}\n}')
    with pytest.raises(InputError, match=r"add_att.json, line 3, column negative_caption: entry '1': missing field"):
        read_sugarcrepe(tmp_path)
    (tmp_path / "add_att.json").write_text('{\n "0": {"filename": "a.jpg",\n "caption": }\n}')
    with pytest.raises(InputError, match=r"add_att.json, line 3, column 13: malformed JSON"):
        read_sugarcrepe(tmp_path)


# ------------------------------------------------------------------------- a tiny BLIP through the public path


@pytest.fixture(scope="module")
def blip(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("transformers")

    from tests.support import tiny_models

    return f"hf-blip-itm:{tiny_models.tiny_blip(tmp_path_factory.mktemp('blip') / 'm')}"


@pytest.mark.slow
def test_tiny_blip_scores_every_winoground_pair_as_alone(tmp_path: Path, blip: str) -> None:
    from connote.models.registry import load_model
    from connote.suites.winoground.task import WinogroundTask, example_scores

    model = load_model(blip)
    path = _winoground(tmp_path)
    results, outcome = WinogroundTask(path, progress=False).run(model, tmp_path / "r")
    flags = []
    for row in outcome.rows:
        alone = []
        for i, c in row["pairs"]:
            image = Image.open(path.parent / "images" / f"ex_{row['item_id']}_img_{i}.png").convert("RGB")
            (p,) = model.match_probability([image], [row["captions"][c]], [(0, 0)])
            alone.append(p)
        assert row["scores"] == pytest.approx(alone, abs=1e-5)
        flags.append(example_scores(alone))
    assert results["overall"]["group"]["accuracy"] == sum(f[2] for f in flags) / 2
    assert results["overall"]["text"]["accuracy"] == sum(f[0] for f in flags) / 2


@pytest.mark.slow
def test_suite_cli_run_explain_and_report(tmp_path: Path, blip: str, capsys) -> None:
    data = _valse(tmp_path)
    assert main(["suite", "run", "valse", "--data", str(data), "--model", blip, "--out", str(tmp_path / "v"),
                 "-q", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["task"] == "valse" and res["n_scored"] == 4 and 0 <= res["subsets"]["all"]["average"]["acc_r"] <= 1
    assert main(["suite", "explain", "valse", "--data", str(data), "--model", blip, "--out", str(tmp_path / "x"),
                 "-q", "--json", "--budget", "40", "--compat", "connote", "--sample", "2"]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["n_pairs"] == 2 and ex["n_errors"] == 1
    rows = [json.loads(x) for x in (tmp_path / "x" / "explanations.jsonl").read_text().splitlines()]
    # the seeded sample holds the foil "cups", which the tiny vocabulary lacks: that pair errs, the run goes on
    assert [r["error"] for r in rows if r["error"]] == ["caption 'cups' has no maskable tokens"]
    rows = [r for r in rows if not r["error"]]
    assert rows and all(0 <= r["t_shap"] <= 1 and r["calls"] <= 40 for r in rows)
    assert {r["role"] for r in rows} <= {"caption", "foil"}
    for r in rows:  # the suite's classes / classes_foil field is the attribution target
        if r["target"] in ("dog", "no", "red", "blue", "cat", "cats"):
            assert r["verb"] is not None or "verb_not_found" in r["flags"]
    # connote explain --suite is the same run
    assert main(["explain", "--suite", "valse", "--data", str(data), "--model", blip, "--out", str(tmp_path / "x"),
                 "-q", "--json", "--budget", "40", "--compat", "connote", "--sample", "2"]) == 0
    again = json.loads(capsys.readouterr().out)
    # the scored pair is reused from the store; the errored one is tried again
    assert (again["n_resumed"], again["n_computed_this_run"]) == (1, 1) and again["groups"] == ex["groups"]
    wino = _winoground(tmp_path / "w")
    assert main(["suite", "run", "winoground", "--data", str(wino), "--model", blip, "--out",
                 str(tmp_path / "g"), "-q"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "v"), str(tmp_path / "g"), "--json"]) == 0
    sections = json.loads(capsys.readouterr().out)["sections"]
    assert [s["kind"] for s in sections] == ["suites-overview", "valse", "winoground"]
    overview = sections[0]["tables"][0]
    assert overview["header"] == ["Model", "VALSE acc_r (%)", "Winoground group (%)"]
    assert overview["values"][0]["valse"] == res["subsets"]["valid"]["average"]["acc_r"]
    published = [v["run"] for v in sections[2]["tables"][0]["values"]]
    assert published[1:] == ["Chance", "UNITER large", "VinVL"]


def test_explain_targets_come_from_the_suites_fields(tmp_path: Path) -> None:
    from connote.suites.base import first_difference
    from connote.suites.svo.data import read_svo
    from connote.suites.valse.data import read_valse

    assert first_difference("a dog on a cat", "a cat on a dog") == ("dog", "cat")
    assert first_difference("a rocket stands", "a rocket and a car stand") == ("stands", "and")
    assert first_difference("a man", "a man sits") == (None, "sits")
    svo = read_svo(_svo(tmp_path))
    assert [it.explain for it in svo[:3]] == [[(0, "positive", "run"), (1, "negative", "run")]] * 2 + [
        [(0, "positive", "cat"), (1, "negative", "cat")]]
    assert svo[3].explain[0][2] is None  # subject and object changed: no one target word
    valse = read_valse(_valse(tmp_path / "v"))
    assert valse[0].explain == [(0, "caption", "dog"), (1, "foil", "no")]


def test_a_suite_without_its_files_and_an_unknown_suite(tmp_path: Path, capsys) -> None:
    assert main(["suite", "run", "valse", "--data", str(tmp_path), "--out", str(tmp_path / "o"), "-q"]) == 2
    assert "no VALSE piece files" in capsys.readouterr().err
    assert main(["suite", "run", "aro", "--out", str(tmp_path / "o"), "-q"]) == 2
    assert "unknown suite 'aro'; valid: svo-probes, valse, winoground, sugarcrepe" in capsys.readouterr().err


def test_tasks_and_catalogue_list_the_suites(tmp_path: Path, capsys) -> None:
    assert main(["tasks", "--json"]) == 0
    names = {t["name"] for t in json.loads(capsys.readouterr().out)}
    assert {"svo-probes", "valse", "winoground", "sugarcrepe", "valse-mmshap"} <= names
    from connote.datasets.catalog import check_copy
    from connote.suites.winoground.data import write_sample

    write_sample(tmp_path / "wg")
    check = check_copy("winoground", tmp_path / "wg")
    by_path = {f.path: f for f in check.files}
    assert by_path["examples.jsonl"].counts == {"examples": 4}
    assert by_path["examples.jsonl"].messages == ["4 examples, expected 400"]
