"""`connote datasets`: the catalog, checking a local copy, and the release converters."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from connote.cli import main
from connote.datasets.catalog import DATASETS as CATALOGUE
from connote.datasets.catalog import FORMATS, check_copy
from tests.support.command_paths import command_words, names_a_command

DATASETS = list(CATALOGUE.values())

NAMES = {"vist", "cv-probes", "vmc", "haivmet", "coco-captions", "svo-probes", "valse", "winoground", "sugarcrepe"}


def _flat(text: str) -> str:
    """Text with the CLI's line wrapping undone."""
    return " ".join(text.split())


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- the catalog


def test_catalog_lists_every_dataset_with_the_required_fields(capsys):
    assert {d.name for d in DATASETS} == NAMES
    for d in DATASETS:
        assert d.title and d.paper and d.used_for and d.licence and d.release, d.name
        assert d.links and all(re.match(r"https?://\S+$", link.url) for link in d.links), d.name
        assert any(f.required for f in d.files), d.name
        for f in d.files:
            assert f.format in FORMATS, (d.name, f.path)
            assert f.read_by.startswith("connote "), (d.name, f.path)
            assert f.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", f.sha256)
            # every number that is checked says where it comes from
            assert not (f.counts or f.size or f.sha256) or f.counts_source, (d.name, f.path)
    code, out, _ = _run(["datasets", "--json"], capsys)
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert set(rows) == NAMES
    assert rows["vmc"]["files"][0] == {**rows["vmc"]["files"][0], "path": "captions.csv",
                                       "counts": {"videos": 705, "captions": 2115}}
    assert "could not be read" in rows["cv-probes"]["release"] or "NOT FOUND" in rows["cv-probes"]["release"]


def test_the_commands_an_entry_names_exist_and_are_named_once():
    """`datasets show vist` said "connote vist, connote vist"; every command a catalogue entry names is a command."""
    for d in DATASETS:
        for text in (d.used_for, *(f.read_by for f in d.files)):
            named = [command_words(m) for m in re.findall(r"connote ([^;,()]+)", text)]
            assert named and all(names_a_command(words) for words in named), (d.name, text)
            assert len({tuple(w) for w in named}) == len(named), (d.name, text)
        assert all(len(words) >= 2 for words in map(command_words, re.findall(r"connote ([^;,()]+)", d.used_for)))


def test_list_and_show_fit_80_columns(capsys):
    code, out, _ = _run(["datasets"], capsys)
    assert code == 0
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert [line.split()[0] for line in out.splitlines()[1:1 + len(DATASETS)]] == [d.name for d in DATASETS]
    for d in DATASETS:
        code, out, _ = _run(["datasets", "show", d.name], capsys)
        assert code == 0
        # only a URL, on a line of its own, may be longer (breaking it would break copying it)
        assert all(len(line) <= 80 or re.fullmatch(r"\s*https?://\S+", line) for line in out.splitlines()), out
        assert all(f"    {link.url}\n" in out for link in d.links)


def test_unknown_dataset_is_a_usage_error_listing_the_known_ones(capsys):
    code, _, err = _run(["datasets", "check", "vist-2", "."], capsys)
    assert code == 2
    assert "unknown dataset 'vist-2'" in err and all(n in err for n in NAMES) and "Traceback" not in err
    code, _, err = _run(["datasets", "show", "nope"], capsys)
    assert code == 2


# --------------------------------------------------------------------------- checking a local copy


def _write_vmc_copy(root: Path) -> Path:
    """A complete VMC copy in connote's layout: 705 captioned videos split 400/55/250."""
    ids = [f"vid{n:04d}" for n in range(705)]
    (root / "splits").mkdir(parents=True)
    (root / "videos").mkdir()
    with (root / "captions.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["unique_id", "annotator_1", "annotator_2", "annotator_3"])
        for v in ids:
            w.writerow([v, f"{v} is as bright as a star.", "the drink is as cool as ice.", "a car is as fast as wind."])
    for name, part in (("train", ids[:400]), ("val", ids[400:455]), ("test", ids[455:])):
        (root / "splits" / f"{name}.txt").write_text("\n".join(part) + "\n")
    for v in ids:
        (root / "videos" / f"{v}.mp4").write_bytes(b"")
    return root


def test_check_a_complete_copy_exits_0_and_one_with_a_file_missing_exits_1_naming_it(tmp_path, capsys):
    root = _write_vmc_copy(tmp_path / "vmc")
    code, out, err = _run(["datasets", "check", "vmc", str(root)], capsys)
    assert code == 0, out + err
    assert "complete: 5 of 5 required file(s) ok" in out
    assert "705 videos, 2,115 captions" in out and "400 ids" in out and "MISSING" not in out

    (root / "splits" / "val.txt").unlink()
    code, out, err = _run(["datasets", "check", "vmc", str(root)], capsys)
    assert code == 1
    assert re.search(r"MISSING\s+splits/val\.txt", out)
    assert f"expected at {root / 'splits' / 'val.txt'}" in _flat(out)
    assert "1 missing: splits/val.txt" in _flat(err)

    report = check_copy("vmc", root)
    assert [f.path for f in report.files if f.failed] == ["splits/val.txt"]


def test_check_reports_a_count_that_differs_and_a_file_the_reader_refuses(tmp_path, capsys):
    root = _write_vmc_copy(tmp_path / "vmc")
    lines = (root / "splits" / "test.txt").read_text().splitlines()
    (root / "splits" / "test.txt").write_text("\n".join(lines[:-1]) + "\n")
    (root / "captions.csv").write_text("video,annotator_1\nv1,a caption\n")
    code, out, _ = _run(["datasets", "check", "vmc", str(root), "--json"], capsys)
    assert code == 1
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert files["splits/test.txt"]["status"] == "differs"
    assert files["splits/test.txt"]["messages"] == ["249 ids, expected 250"]
    assert files["captions.csv"]["status"] == "unreadable"
    assert "missing column unique_id" in files["captions.csv"]["messages"][0]
    assert files["splits/train.txt"]["status"] == "ok"


def test_a_checksum_mismatch_is_reported(tmp_path, capsys):
    from connote.vist.challenge import submission_dict

    entries = [(str(1000 + n // 2), [str(10 * n + k) for k in range(5)], "") for n in range(1938)]
    template = tmp_path / "vist-challenge-template.json"
    template.write_text(json.dumps(submission_dict(entries, team_name="t")))
    code, out, err = _run(["datasets", "check", "vist", str(template)], capsys)
    assert code == 1
    text = _flat(out)
    assert re.search(r"DIFFERS\s+vist-challenge-template\.json", out)
    assert "expected 3d8c8a8011c0fc4f6c7524965f8db24825d2548019aab898239039d0bc2c816d" in text
    assert "969 albums, expected 971" in text  # the format check still parsed it: 1,938 sequences
    report = check_copy("vist", template)
    assert report.files[0].counts == {"sequences": 1938, "albums": 969}


def test_check_a_file_whose_name_differs_needs_file(tmp_path, capsys):
    table = tmp_path / "VMCD_v2.csv"
    table.write_text("unique_id,annotator_1,annotator_2,annotator_3\nabc,a,b,c\n")
    code, _, err = _run(["datasets", "check", "vmc", str(table)], capsys)
    assert code == 2 and "--file" in err and "captions.csv" in err
    code, out, _ = _run(["datasets", "check", "vmc", str(table), "--file", "captions.csv"], capsys)
    assert code == 1 and "1 videos, expected 705" in _flat(out)


def test_real_vist_challenge_files_match_the_catalog(vist_dir, capsys):
    """The challenge files in ../shared/data/vist: checksums and counts as recorded; the SIS/DII files
    are not there, so the folder is incomplete and the check names them."""
    code, out, _ = _run(["datasets", "check", "vist", str(vist_dir / "vist-challenge-template.json")], capsys)
    assert code == 0, out
    report = check_copy("vist", vist_dir)
    status = {f.path: f.status for f in report.files}
    assert status["vist-challenge-template.json"] == "ok"
    assert status["example-submission-file.test.json"] == "ok"
    assert status["sis/test.story-in-sequence.json"] == "missing"
    assert not report.complete
    by = {f.path: f for f in report.files}
    assert by["vist-challenge-template.json"].counts == {"sequences": 1938, "albums": 971}
    assert by["example-submission-file.test.json"].counts == {"sequences": 2019, "albums": 1011}


def test_check_a_probe_manifest_whose_images_are_missing(tmp_path, capsys):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.jpg").write_bytes(b"")
    (tmp_path / "probes.csv").write_text(
        "item_id,image,image_kind,caption,caption_kind,human_votes\n"
        "a-sg,images/a.jpg,SG,A man begs.,SG,1;1;0\n"
        "b-sg,images/b.jpg,PG,A man begs.,SG,0;0;0\n")
    code, out, _ = _run(["datasets", "check", "cv-probes", str(tmp_path), "--json"], capsys)
    assert code == 1
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert files["probes.csv"]["status"] == "differs"
    assert files["probes.csv"]["counts"] == {"items": 2, "items with human votes": 2}
    assert files["probes.csv"]["messages"] == [
        f"1 file(s) it names are not on disk, first: {(tmp_path / 'images' / 'b.jpg').resolve()}"]
    assert files["images/"] == {**files["images/"], "status": "ok", "counts": {"images": 1}}
    (tmp_path / "images" / "b.jpg").write_bytes(b"")
    assert main(["datasets", "check", "cv-probes", str(tmp_path)]) == 0


# --------------------------------------------------------------------------- CV-Probes converter


def _wide_release(folder: Path, names: tuple[str, ...]) -> Path:
    """Sample photos in the wide shape the paper describes (one row per image: SG and PG captions, votes)."""
    from connote.media.sample import SAMPLE

    (folder / "images").mkdir(parents=True)
    src = folder / "cv_probes_release.tsv"
    with src.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(["Image", "Image Type", "Verb", "SG caption", "SG simplified", "PG caption", "PG simplified",
                    "SG votes", "PG votes"])
        for n, (name, load, kind, sg, sg_s, sg_v, pg, pg_s, _pg_v) in enumerate(s for s in SAMPLE if s[0] in names):
            load().save(folder / "images" / f"{name}.jpg", quality=92)
            w.writerow([f"images/{name}.jpg", kind, sg_v, sg, sg_s, pg, pg_s,
                        "yes,yes,no" if n % 2 else "no,no,yes", "1;1;1"])
    return src


@pytest.mark.slow
def test_convert_cv_probes_wide_table_runs_through_probe_with_the_embedded_default(tmp_path, capsys):
    names = ("grace_hopper", "chelsea")  # an SG image and a PG image: one item per cell, kept small for speed
    src = _wide_release(tmp_path / "release", names)
    out = tmp_path / "converted" / "probes.csv"
    code, stdout, err = _run(["datasets", "convert", "cv-probes", str(src), "--out", str(out)], capsys)
    assert code == 0, err
    assert "4 items; 2 SG captions; 2 PG captions; 4 items with human votes" in stdout

    from connote.cv_probes.manifest import read_probe_manifest

    items = read_probe_manifest(out)
    assert len(items) == 4 and not any(it.error for it in items)
    assert all(Path(it.image).is_file() for it in items)
    by_id = {it.item_id: it for it in items}
    assert by_id["grace_hopper-sg"].human_votes == [0, 0, 1] and by_id["grace_hopper-sg"].label == 1
    assert by_id["chelsea-sg"].human_votes == [1, 1, 0] and by_id["chelsea-sg"].label == 0  # PG image x SG caption
    assert by_id["chelsea-pg"].verb is None and by_id["chelsea-sg"].verb == "begs"
    assert by_id["grace_hopper-sg"].caption_simplified == "officer serves navy"

    code, _, err = _run(["probe", "--data", str(out), "--out", str(tmp_path / "run"), "-q"], capsys)
    assert code == 0, err
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["model"] == "objects" and res["n_scored"] == 4 and res["n_errors"] == 0
    assert {c: (v["n"], v["n_votes"]) for c, v in res["cells"].items()} == {
        "SG-SG": (1, 1), "SG-PG": (1, 1), "PG-SG": (1, 1), "PG-PG": (1, 1)}
    assert Path(res["data"]) == out.resolve() or Path(res["data"]) == out


def test_convert_cv_probes_long_table_reports_a_bad_row_with_its_line(tmp_path, capsys):
    (tmp_path / "imgs").mkdir()
    src = tmp_path / "pairs.csv"
    src.write_text(
        "id,image_path,image_type,text,caption_type,verb,vote_1,vote_2,vote_3\n"
        "p1,imgs/a.jpg,SG,A man begs.,SG,beg,1,1,0\n"
        "p2,imgs/a.jpg,SG,A man sits.,PG,,yes,yes,yes\n"
        "p3,imgs/b.jpg,PG,A man begs.,social,beg,no,no,maybe\n"
        "p4,imgs/b.jpg,PG,A man sits.,physical,,1,1,1\n"
        "p5,imgs/b.jpg,PG,,PG,,1,1,1\n"
        "p2,imgs/b.jpg,PG,A man stands.,PG,,1,1,1\n")
    out = tmp_path / "out" / "probes.csv"
    code, stdout, err = _run(["datasets", "convert", "cv-probes", str(src), "--out", str(out)], capsys)
    assert code == 1  # written, but rows were skipped
    assert "3 bad row(s) skipped of 6 read" in err
    assert f"{src}: line 4: vote 'maybe' is not one of" in err
    assert f"{src}: line 6: empty caption" in err
    assert f"{src}: line 7: duplicate item id 'p2' (first on line 3)" in err
    from connote.cv_probes.manifest import read_probe_manifest

    items = read_probe_manifest(out)
    assert [(it.item_id, it.image_kind, it.caption_kind, it.human_votes) for it in items] == [
        ("p1", "SG", "SG", [1, 1, 0]), ("p2", "SG", "PG", [1, 1, 1]), ("p4", "PG", "PG", [1, 1, 1])]
    assert items[0].image == str((tmp_path / "imgs" / "a.jpg").resolve())
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["pairs.csv", "probes.csv"]


@pytest.mark.parametrize("content,expected", [
    (None, "not found"),
    (b"image,image_kind,caption,caption_kind\n\xff\xfe,SG,x,SG\n", "UTF-8"),
    (b"picture,kind,words\nx,SG,y\n", "no column for image, image_kind, caption, caption_kind"),
    (b"[{\"image\": 1,", "malformed JSON"),
])
def test_convert_cv_probes_unreadable_input_exits_2_naming_the_file(tmp_path, capsys, content, expected):
    src = tmp_path / ("release.json" if content and content.startswith(b"[") else "release.csv")
    if content is not None:
        src.write_bytes(content)
    code, _, err = _run(["datasets", "convert", "cv-probes", str(src), "--out", str(tmp_path / "o.csv")], capsys)
    assert code == 2
    assert str(src) in err and expected in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


# --------------------------------------------------------------------------- VMC converter


def test_convert_vmc_from_the_authors_files(tmp_path, capsys):
    from connote.vmc.data import read_caption_table, read_split, read_video_list

    rel = tmp_path / "release"
    (rel / "videos").mkdir(parents=True)
    ids = ["__C7sd_UDU0", "_6MAkLJ79LE", "jmNrvlQ73pU", "D93S3UVU8pk"]
    rows = ["unique_id,annotator_1,annotator_2,annotator_3"] + [
        f"{v},{v} is as calm as water.,the drink is as cool as ice.,a car is as fast as wind." for v in ids]
    rows.insert(3, ",orphan caption,,")  # line 4: no id
    (rel / "VMCD_v2.csv").write_text("\n".join(rows) + "\n")
    for v in ids[:3]:
        (rel / "videos" / f"{v}.mp4").write_bytes(b"")

    def llava(vid: str, cap: str) -> dict:
        return {"id": vid, "video": f"/research/videos/{vid}.mp4",
                "conversations": [{"from": "human", "value": "<image>\nWhat caption ...?"},
                                  {"from": "gpt", "value": cap}]}

    (rel / "train.json").write_text(json.dumps([llava(ids[0], "a"), llava(ids[0], "b"), llava(ids[1], "c")]))
    (rel / "val.json").write_text(json.dumps([llava(ids[2], "d"), {"id": "", "conversations": []}]))
    (rel / "test_questions.jsonl").write_text(
        json.dumps({"question_id": 0, "video": f"videos/{ids[3]}.mp4", "text": "q", "true_answer": "e"}) + "\n"
        + '{"question_id": 1, "video": \n')
    out = tmp_path / "out"
    before = {p for p in tmp_path.rglob("*")}
    code, stdout, err = _run(["datasets", "convert", "vmc", str(rel), "--out", str(out)], capsys)
    assert code == 1  # written, three bad rows skipped
    assert f"{rel / 'VMCD_v2.csv'}: line 4: empty video id" in err
    assert f"{rel / 'val.json'}: record 2: record without 'video' or 'id'" in err
    assert f"{rel / 'test_questions.jsonl'}: line 2: malformed JSON" in err
    written = {p for p in tmp_path.rglob("*")} - before
    assert all(out in p.parents or p == out for p in written)  # nothing outside --out

    table = read_caption_table(out / "captions.csv")
    assert list(table) == ids and all(len(c) == 3 for c in table.values())  # the table wins over the answers
    assert read_split(out / "splits" / "train.txt") == ids[:2]
    assert read_split(out / "splits" / "val.txt") == [ids[2]]
    assert read_split(out / "splits" / "test.txt") == [ids[3]]
    assert [(v, p.resolve()) for v, p in read_video_list(out / "videos.csv")] == [
        (v, (rel / "videos" / f"{v}.mp4").resolve()) for v in ids[:3]]
    assert (out / "youtube_urls.txt").read_text().splitlines()[0] == "https://www.youtube.com/watch?v=__C7sd_UDU0"
    report = json.loads((out / "convert-report.json").read_text())
    assert report["counts"]["videos with captions"] == 4 and report["counts"]["ids without a video file"] == 1
    assert len(report["bad_rows"]) == 3

    # a second run over the same release does not read what the first wrote into --out
    nested = rel / "converted"
    assert main(["datasets", "convert", "vmc", str(rel), "--out", str(nested)]) == 1
    assert main(["datasets", "convert", "vmc", str(rel), "--out", str(nested)]) == 1
    assert read_caption_table(nested / "captions.csv") == table
    # converting in place: the release folder as --out; videos put there still count
    assert main(["datasets", "convert", "vmc", str(rel), "--out", str(rel)]) == 1
    assert main(["datasets", "convert", "vmc", str(rel), "--out", str(rel)]) == 1
    assert read_caption_table(rel / "captions.csv") == table
    assert len(read_video_list(rel / "videos.csv")) == 3


def test_convert_vmc_captions_from_answers_when_there_is_no_table(tmp_path, capsys):
    from connote.vmc.data import read_caption_table

    (tmp_path / "test_questions.jsonl").write_text("".join(
        json.dumps({"question_id": q, "video": f"v/{vid}.mp4", "text": "q", "true_answer": cap}) + "\n"
        for q, (vid, cap) in enumerate([("a1", "x is as y as z."), ("a1", "p is as q as r."), ("b2", "s")])))
    code, stdout, _ = _run(["datasets", "convert", "vmc", str(tmp_path / "test_questions.jsonl"),
                            "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    assert read_caption_table(tmp_path / "o" / "captions.csv") == {"a1": ["x is as y as z.", "p is as q as r."],
                                                                   "b2": ["s"]}
    assert "2 videos with captions; 3 captions; 2 test ids" in stdout


def test_convert_vmc_without_release_files_exits_2(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("nothing here")
    code, _, err = _run(["datasets", "convert", "vmc", str(tmp_path), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "found no VMC release file" in err and str(tmp_path) in err
    assert not (tmp_path / "o").exists()
