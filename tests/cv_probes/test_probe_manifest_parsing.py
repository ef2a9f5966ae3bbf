"""CV-Probes manifests: rows are never lost silently; bad files name file, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.cv_probes.manifest import read_probe_manifest

HEADER = "item_id,image,image_kind,caption,caption_kind,label"


def _csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "m.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_well_formed_quotes_are_read(tmp_path: Path) -> None:
    path = _csv(tmp_path, 'a,/x.png,SG,"a man, begging ""hard""",SG,1', "b,/x.png,PG,a dog,SG,")
    a, b = read_probe_manifest(path)
    assert a.caption == 'a man, begging "hard"' and (a.line, b.line) == (2, 3) and b.label == 0


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\f", "\v", "\x1c"])
def test_a_unicode_line_separator_inside_a_quoted_caption_is_text(separator: str, tmp_path: Path) -> None:
    """Issue 39, item 14: U+2028, U+0085, a form feed ... are no line breaks in CSV (only \\n, \\r\\n, \\r are);
    ``str.splitlines`` broke at them, so a valid manifest was refused as an unbalanced quote."""
    caption = f"a man begs{separator}on the street"
    path = _csv(tmp_path, f'a,/x.png,SG,"{caption}",SG,1', "b,/x.png,PG,a dog,SG,")
    a, b = read_probe_manifest(path)
    assert a.caption == caption and (a.line, b.line) == (2, 3)


def test_other_csv_readers_keep_them_in_the_text(tmp_path: Path) -> None:
    """The suite readers went through the same split: the separator silently vanished from the sentence."""
    from connote.suites.svo.data import read_svo

    path = tmp_path / "svo_probes.csv"
    path.write_text("sentence,pos_triplet,neg_triplet,subj_neg,verb_neg,obj_neg,pos_image_id,neg_image_id\n"
                    '"A man\u2028rides a horse.","man,ride,horse","man,ride,dog",False,False,True,1,2\n',
                    encoding="utf-8")
    (item,) = read_svo(path)
    assert item.captions == ["A man\u2028rides a horse."]



def test_tables_connote_writes_read_back_with_a_separator_in_the_text(tmp_path: Path) -> None:
    """Issue 39, item 14, the readers of connote's own tables: JSON Lines rows are written with
    ``ensure_ascii=False``, so a caption's U+2028 is in the file as it is; ``connote track``'s run tables, a study's
    gold items and the VMC labels CSV split at it (a JSONDecodeError traceback, a cut CSV row)."""
    from connote.collect.project import DATA
    from connote.collect.study_settings import _move_gold_items
    from connote.commands.tracking import item_rows
    from connote.runs.store import write_jsonl
    from connote.vmc.correlate import read_vmc_labels

    caption = "a man begs\u2028on the street\u0085today"
    write_jsonl(tmp_path / "items.jsonl", [{"item_id": "a", "caption": caption}, {"item_id": "b", "caption": "x"}])
    assert [r["caption"] for r in item_rows(tmp_path)["items"]] == [caption, "x"]
    study = tmp_path / "study"
    study.mkdir()
    write_jsonl(study / DATA, [{"id": "a", "text": caption}, {"id": "g", "text": "gold\u2028item"}])
    _move_gold_items(study, {"g": {"q": "yes"}})
    assert [json.loads(line)["text"] for line in (study / DATA).read_text(encoding="utf-8").split("\n")
            if line] == [caption]
    labels = tmp_path / "labels.csv"
    labels.write_text('item_id,rater,criterion,label\nv1,"ann\u2028one",fluency,1\nv1,two,fluency,0\n',
                      encoding="utf-8")
    assert read_vmc_labels(labels) == {"fluency": {"v1": [1.0, 0.0]}}

def test_unbalanced_quote_does_not_swallow_the_next_row(tmp_path: Path) -> None:
    path = _csv(tmp_path, 'a,/x.png,SG,"a man begs,SG,1', "b,/x.png,SG,a dog runs,SG,1", "c,/x.png,SG,c,SG,1")
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    e = info.value
    assert (e.path, e.line, e.column) == (path, 2, "caption")
    assert "unbalanced quote: the quoted field opened at character 13 runs over" in str(e)


def test_unbalanced_quote_on_the_last_line(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(HEADER + '\na,/x.png,SG,a man,SG,1\nb,/x.png,SG,"a dog,SG,1')  # no final newline
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    assert (info.value.line, info.value.column) == (3, "caption") and "unbalanced quote" in str(info.value)


def test_text_after_a_closing_quote_is_an_error(tmp_path: Path) -> None:
    path = _csv(tmp_path, 'a,/x.png,SG,"a man" begs,SG,1')
    with pytest.raises(InputError, match=r"line 2.*cannot parse CSV"):
        read_probe_manifest(path)


def test_duplicate_header_column(tmp_path: Path) -> None:
    path = _csv(tmp_path, "a,/x.png,SG,first,SG,second", header="item_id,image,image_kind,caption,caption_kind,caption")
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    e = info.value
    assert (e.line, e.column) == (1, "caption")
    assert "duplicate column 'caption' in the header (columns 4 and 6)" in str(e)


def test_rows_with_too_few_or_too_many_fields(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_probe_manifest(_csv(tmp_path, "a,/x.png,SG,a man,SG,1", "b,/x.png,SG,a dog"))
    assert (info.value.line, info.value.column) == (3, 5)
    assert "4 fields where the header (line 1) has 6" in str(info.value)
    with pytest.raises(InputError, match="line 2, column 7: 7 fields where the header"):
        read_probe_manifest(_csv(tmp_path, "a,/x.png,SG,a man,SG,1,extra"))


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("caption", ["a", "b"], "field 'caption' must be a string, got list [\"a\", \"b\"]"),
    ("image", {"path": "x.png"}, "field 'image' must be a string, got dict"),
    ("caption_kind", 1, "field 'caption_kind' must be a string, got int"),
    ("item_id", True, "field 'item_id' must be a string or an integer, got bool"),
    ("verb", ["run"], "field 'verb' must be a string"),
    ("human_votes", [[1], 0], "field 'human_votes' must be a list of 0/1"),
    ("label", [1], "field 'label' must be 1, 0 or empty"),
])
def test_jsonl_fields_of_the_wrong_type(tmp_path: Path, field: str, value: object, expected: str) -> None:
    good = {"item_id": "a", "image": "/x.png", "image_kind": "SG", "caption": "c", "caption_kind": "SG"}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "item_id": "b", field: value}) + "\n")
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    assert (info.value.line, info.value.column) == (2, field)
    assert expected in str(info.value)


def test_integer_item_ids_in_jsonl_still_work(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"item_id": 7, "image": "/x.png", "image_kind": "SG", "caption": "c",
                                "caption_kind": "SG"}) + "\n")
    (item,) = read_probe_manifest(path)
    assert item.item_id == "7"


def test_directory_and_non_utf8_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "probes.csv"
    folder.mkdir()
    with pytest.raises(InputError, match="is a directory, expected a manifest"):
        read_probe_manifest(folder)
    path = tmp_path / "m.csv"
    path.write_bytes((HEADER + "\na,/x.png,SG,caf\xe9,SG,1\n").encode("latin-1"))
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    assert (info.value.line, info.value.column) == (2, 16) and "not UTF-8" in str(info.value)


def test_quote_closed_on_a_later_line_is_still_refused(tmp_path: Path) -> None:
    # the two lines parse as ONE row with the right number of fields: the csv module alone accepts it
    path = _csv(tmp_path, 'a,/x.png,SG,"a man begs,SG,1', 'b,/x.png,SG,a dog",SG,1', "c,/x.png,SG,c,SG,1")
    with pytest.raises(InputError) as info:
        read_probe_manifest(path)
    assert (info.value.line, info.value.column) == (2, "caption")
    assert "runs over 2 lines (to line 3)" in str(info.value)
