import json

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.cv_probes.manifest import read_probe_manifest
from tests.support.probe_manifest import HEADER, ROWS, write_manifest


def test_csv_fields_labels_and_votes(manifest):
    items = read_probe_manifest(manifest)
    assert [it.item_id for it in items] == [r[0] for r in ROWS]
    by = {it.item_id: it for it in items}
    # label defaults: 0 exactly for PG image x SG caption
    assert [by[i].label for i in ("i1-sg", "i1-pg", "i3-sg", "i3-pg")] == [1, 1, 0, 1]
    assert by["i1-pg"].human_votes == [1, 1, 0]
    assert by["i1-pg"].human_score == pytest.approx(2 / 3)
    assert by["i1-sg"].image == str((manifest.parent / "img1.png").resolve())
    assert by["i3-sg"].cell == "PG-SG"
    assert by["i1-sg"].text("simplified") == "man begs"


def test_jsonl_with_explicit_label_and_vote_lists(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [{"item_id": "a", "image": "/x.png", "image_kind": "PG", "caption": "c", "caption_kind": "SG",
             "human_votes": [1, 0, 1], "label": 1},
            {"item_id": "b", "image": "/x.png", "image_kind": "PG", "caption": "d", "caption_kind": "SG"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    a, b = read_probe_manifest(path)
    assert (a.label, a.human_votes, b.label, b.human_votes) == (1, [1, 0, 1], 0, None)


def test_missing_column_names_file_line_and_column(tmp_path):
    header = [h for h in HEADER if h != "caption_kind"]
    rows = [tuple(v for h, v in zip(HEADER, r) if h != "caption_kind") for r in ROWS]
    path = write_manifest(tmp_path, rows=rows, header=header)
    with pytest.raises(InputError) as err:
        read_probe_manifest(path)
    msg = str(err.value)
    assert str(path) in msg and "line 1" in msg and "caption_kind" in msg


def test_bad_json_line_reports_line_and_column(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"item_id": "a", "image": "x", "image_kind": "SG", "caption": "c", "caption_kind": "SG"}\n'
                    '{"item_id": "b", "image": \n')
    with pytest.raises(InputError) as err:
        read_probe_manifest(path)
    assert "line 2" in str(err.value) and "column" in str(err.value)


def test_malformed_votes_and_label_are_input_errors(tmp_path):
    rows = list(ROWS)
    rows[3] = rows[3][:7] + ("1;x;0",) + rows[3][8:]
    with pytest.raises(InputError, match=r"line 5.*human_votes"):
        read_probe_manifest(write_manifest(tmp_path / "a", rows=rows))
    rows = list(ROWS)
    rows[0] = rows[0][:8] + ("maybe",)
    with pytest.raises(InputError, match=r"line 2.*label"):
        read_probe_manifest(write_manifest(tmp_path / "b", rows=rows))


def test_duplicate_ids_rejected(tmp_path):
    rows = list(ROWS) + [ROWS[0]]
    with pytest.raises(InputError, match="duplicate item_id 'i1-sg'"):
        read_probe_manifest(write_manifest(tmp_path, rows=rows))


def test_item_level_problems_are_kept_on_the_item(tmp_path):
    rows = list(ROWS)
    rows[0] = ("i1-sg", "img1.png", "XX", *rows[0][3:])
    rows[1] = ("i1-pg", "img1.png", "SG", "", *rows[1][4:])
    items = read_probe_manifest(write_manifest(tmp_path, rows=rows))
    assert "image_kind must be SG or PG" in items[0].error and ":2:" in items[0].error
    assert "empty caption" in items[1].error
    assert all(it.error is None for it in items[2:])


def test_cli_exits_2_before_loading_any_model(tmp_path, capsys):
    header = [h for h in HEADER if h != "image"]
    rows = [tuple(v for h, v in zip(HEADER, r) if h != "image") for r in ROWS]
    path = write_manifest(tmp_path, rows=rows, header=header)
    # the model path does not exist: a model load would fail with a different message
    code = main(["probe", "--data", str(path), "--model", "hf-blip-itm:/nonexistent/model",
                 "--out", str(tmp_path / "run"), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "missing required column(s) image" in err and str(path) in err
    assert not (tmp_path / "run" / "store.sqlite").exists()
