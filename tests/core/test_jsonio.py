"""connote.core.jsonio: every bad JSON/JSONL file is an InputError naming file, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.core.jsonio import decode_utf8, read_json, read_jsonl
from connote.vist.data import load_json


def test_reads_json_and_jsonl(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"k": ["caf\u00e9"]}).encode())
    assert read_json(tmp_path / "a.json") == {"k": ["caf\u00e9"]}
    # U+2028 inside a JSON string is legal and must not split the line
    (tmp_path / "b.jsonl").write_text('{"a": 1}\n\n{"b": "x\u2028y"}\r\n', encoding="utf-8")
    assert read_jsonl(tmp_path / "b.jsonl") == [(1, {"a": 1}), (3, {"b": "x\u2028y"})]


def test_non_utf8_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes('{"a": 1,\n "caf\u00e9": "b\xe9"}'.encode("latin-1").replace(b"caf\xe9", "caf\u00e9".encode()))
    with pytest.raises(InputError) as info:
        read_json(path)
    assert (info.value.path, info.value.line, info.value.column) == (path, 2, 12)
    assert str(info.value).startswith(f"{path}, line 2, column 12: not UTF-8 text (invalid continuation byte")
    text, bad = decode_utf8(path.read_bytes(), path, replace=True)
    assert bad is not None and (bad.line, bad.column, bad.replaced) == (2, 12, 1) and "b\ufffd" in text


def test_deep_nesting_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_json(path)
    with pytest.raises(InputError, match="nested too deeply"):
        load_json(path)
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"a": 1}\n' + "[" * 200_000 + "]" * 200_000 + "\n")
    with pytest.raises(InputError, match="line 2: JSON nested too deeply"):
        read_jsonl(lines)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="JSON file not found"):
        read_json(tmp_path / "nope.json")
    with pytest.raises(InputError, match="is a directory, expected a JSON file"):
        read_json(tmp_path)
    with pytest.raises(InputError, match="is a directory"):
        load_json(tmp_path)
    with pytest.raises(InputError, match="is a directory, expected a JSON Lines file"):
        read_jsonl(tmp_path)


def test_malformed_json_keeps_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"a": 1,\n  "b" 2}')
    with pytest.raises(InputError) as info:
        read_json(path)
    assert str(info.value) == f"{path}, line 2, column 7: malformed JSON: Expecting ':' delimiter"
    with pytest.raises(InputError) as again:
        load_json(path)
    assert str(again.value) == str(info.value)
    lines = tmp_path / "m.jsonl"
    lines.write_text('{"a": 1}\n{"a": }\n')
    with pytest.raises(InputError, match=r"line 2, column 7: invalid JSON: Expecting value"):
        read_jsonl(lines)


def test_vist_load_json_keeps_its_return_shape(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_bytes(b'{"annotations": [], "t": "caf\xe9"}')
    obj, problems = load_json(path)
    assert obj == {"annotations": [], "t": "caf\ufffd"}
    assert len(problems) == 1 and "not valid UTF-8" in str(problems[0]) and "line 1" in str(problems[0])
    path.write_text('{"annotations": []}')
    assert load_json(path) == ({"annotations": []}, [])


def test_a_lone_surrogate_is_refused_where_it_is_written(tmp_path: Path) -> None:
    """Issue 39, item 13: ``"\\ud800"`` is valid JSON but no text (every later step that encodes it failed with a
    traceback naming no file); pairs (an emoji as two escapes) and an escaped backslash before "ud800" are text."""
    path = tmp_path / "s.json"
    path.write_text('{"a": "x \\ud83d\\ude00 \\\\ud800 ok",\n "b": ["\\udc00"]}', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_json(path)
    assert str(info.value) == (f"{path}, line 2, column 9: a string holds a lone surrogate (\\udc00), which is not "
                               "text: '\\udc00'")
    path.write_text('{"a": "x \\ud83d\\ude00 \\\\ud800 ok"}', encoding="utf-8")
    assert read_json(path) == {"a": "x \U0001F600 \\ud800 ok"}
    lines = tmp_path / "s.jsonl"
    lines.write_text('{"a": 1}\n{"\\ud800": 2}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"s.jsonl, line 2, column 3: a string holds a lone surrogate \(\\ud800\)"):
        read_jsonl(lines)
