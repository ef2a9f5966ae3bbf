"""Reading JSON and JSON Lines files so that every failure is an ``InputError`` naming file, line and column.

What is refused (exit status 2 through the CLI), and how it is reported:

* a missing path, a directory, an unreadable file: the path and what was expected;
* bytes that are not UTF-8: the line and column (1-based, in characters) of the first bad byte;
  a UTF-8 byte-order mark is skipped;
* malformed JSON: the parser's message with its line and column (as ``json`` reports them);
* JSON nested too deeply for Python's parser (``RecursionError``): the file (and line for JSONL),
  never a traceback;
* an object with the same key twice (``json`` would keep the last silently): the file and the keys;
* a string holding a lone surrogate (``"\\ud800"`` without its pair: valid JSON, but no text, so every later
  step that writes or encodes it would fail): the file, line and column of the escape.

``decode_utf8(..., replace=True)`` is the tolerant variant for readers whose format promises to go
on with replacement characters (the VIST readers report the bad bytes as a problem instead).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class BadUtf8:
    """Where the first undecodable byte is, and how many characters were replaced."""

    offset: int
    line: int
    column: int
    reason: str
    replaced: int


def read_bytes(path: str | Path, *, what: str = "file") -> bytes:
    """The bytes of a regular file; missing paths, directories, FIFOs, devices and unreadable files are
    ``InputError`` (read by the bounded reader :func:`connote.core.files.open_regular`: never blocks, never
    reads past the file's size)."""
    from connote.core.files import NotRegularFileError, open_regular, read_blocks

    path = Path(path)
    try:
        with open_regular(path) as fh:
            return b"".join(read_blocks(fh))
    except NotRegularFileError:
        if path.is_dir():
            raise InputError(f"is a directory, expected a {what}", path=path) from None
        raise InputError(f"not a regular file (a FIFO or a device), expected a {what}", path=path) from None
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected a {what}", path=path) from None
    except OSError as exc:
        if path.is_dir():  # some platforms report a directory as a permission error
            raise InputError(f"is a directory, expected a {what}", path=path) from None
        raise InputError(f"cannot read {what} ({exc.strerror or exc})", path=path) from None


def _locate(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, character column) of byte ``offset``; the bytes before it decode cleanly."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return line, column


def decode_utf8(data: bytes, path: str | Path, *, replace: bool = False) -> tuple[str, BadUtf8 | None]:
    """Decode UTF-8 (BOM skipped). Strict: bad bytes are an ``InputError`` with line and column.

    With ``replace=True`` bad bytes become U+FFFD and the first one's position is returned.
    """
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line, column = _locate(data, exc.start)
        if not replace:
            raise InputError(f"not UTF-8 text ({exc.reason}: byte 0x{data[exc.start]:02x} at offset {exc.start})",
                             path=path, line=line, column=column) from None
        text = data.decode("utf-8", errors="replace")
        return text, BadUtf8(exc.start, line, column, exc.reason, text.count("\ufffd"))


def read_text(path: str | Path, *, what: str = "file") -> str:
    """A file's text, strictly UTF-8 (see :func:`decode_utf8`)."""
    return decode_utf8(read_bytes(path, what=what), path)[0]


def text_lines(text: str, *, keepends: bool = False) -> list[str]:
    """The lines of a text file as CSV and JSON Lines count them: broken at ``\\n``, ``\\r\\n`` and ``\\r`` only.

    ``str.splitlines`` also breaks at U+2028, U+2029, U+0085, form feed and other separators, which may sit inside
    a quoted CSV field or a JSON string (a caption copied from a web page): a valid file would then read as an
    unbalanced quote or a cut line.
    """
    import io

    lines = io.StringIO(text, newline="").readlines()
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


class _DuplicateKeys(ValueError):
    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        from collections import Counter

        raise _DuplicateKeys(sorted(k for k, n in Counter(k for k, _ in pairs).items() if n > 1))
    return obj


#: A JSON escape of a UTF-16 surrogate that is not half of a pair (a high one not followed by a low one, a low one
#: not after a high one): the only way a string read from UTF-8 text can hold a lone surrogate.
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_ESCAPE = re.compile(f"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")


def _not_text(value: Any) -> str | None:
    """The first string (key or value) in ``value`` that cannot be written as UTF-8 (a lone surrogate), or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _lone_escape(text: str) -> re.Match[str] | None:
    """The first escape of a lone surrogate in ``text`` (not text after an escaped backslash), or None."""
    for m in _LONE_ESCAPE.finditer(text):
        k = m.start()
        while k > 0 and text[k - 1] == "\\":
            k -= 1
        if (m.start() - k) % 2 == 0:  # a real escape (after an escaped backslash, "ud800" is text)
            return m
    return None


def _lone_surrogate(text: str, value: Any, path: str | Path, line: int | None) -> None:
    """Refuse a parsed JSON value holding a lone surrogate (``"\\ud800"`` alone is valid JSON but not text: every
    later step that writes or encodes it fails), naming the file and the escape's line and column."""
    if "\\u" not in text:
        return
    found = _lone_escape(text)
    bad = _not_text(value) if found is not None else None
    if found is None or bad is None:
        return
    pos = found.start()
    shown = bad if len(bad) <= 60 else bad[:57] + "..."
    raise InputError(f"a string holds a lone surrogate ({found.group(0)}), which is not text: {ascii(shown)}",
                     path=path, line=line if line is not None else text.count("\n", 0, pos) + 1,
                     column=pos - text.rfind("\n", 0, pos))


def parse_json(text: str, path: str | Path, *, line: int | None = None, message: str = "malformed JSON") -> Any:
    """``json.loads`` with failures as ``InputError``.

    ``line`` is the file line ``text`` came from (JSON Lines); malformed JSON then reports that line
    and the parser's column, else the parser's own line and column. A string holding a lone surrogate is refused.
    """
    try:
        value = json.loads(text, object_pairs_hook=_unique_object)
        _lone_surrogate(text, value, path, line)
        return value
    except _DuplicateKeys as exc:
        keys = ", ".join(repr(k) for k in exc.keys[:5]) + (" ..." if len(exc.keys) > 5 else "")
        raise InputError(f"duplicate key(s) {keys} in one JSON object (which value is meant is ambiguous)",
                         path=path, line=line) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{message}: {exc.msg}", path=path, line=line if line is not None else exc.lineno,
                         column=exc.colno) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to parse (thousands of levels of [ or {)", path=path,
                         line=line) from None


def read_json(path: str | Path, *, what: str = "JSON file") -> Any:
    """Parse a JSON file (strict UTF-8); every failure is an ``InputError`` naming file, line, column."""
    return parse_json(read_text(path, what=what), path)


def read_json_entries(path: str | Path, *, what: str = "JSON file") -> tuple[Any, list[int]]:
    """A JSON file that is one big object or list (the probe suites' released files), and the 1-based line where
    each top-level entry (an object's value, a list's item) starts, so that a bad entry is named with its line.
    Read as :func:`read_json` reads (strict UTF-8, duplicate keys refused at every level, too deep refused)."""
    import re

    text = read_text(path, what=what)
    decoder = json.JSONDecoder(object_pairs_hook=_unique_object)
    ws = re.compile(r"\s*")

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def fail(pos: int, message: str) -> InputError:
        return InputError(message, path=path, line=line_of(pos))

    pos = ws.match(text, 0).end()
    if pos >= len(text) or text[pos] not in "[{":
        raise fail(pos, f"expected a JSON object or list ({what})")
    is_dict, lines, out = text[pos] == "{", [], ({} if text[pos] == "{" else [])
    closing = "}" if is_dict else "]"
    pos = ws.match(text, pos + 1).end()
    if text[pos:pos + 1] == closing:
        return out, lines
    while True:
        start = pos
        try:
            if is_dict:
                key, pos = decoder.raw_decode(text, pos)
                if not isinstance(key, str):
                    raise fail(start, "expected a string key")
                if key in out:
                    raise fail(start, f"duplicate key(s) {key!r} in one JSON object (which value is meant is "
                                      f"ambiguous; first on line {lines[list(out).index(key)]})")
                pos = ws.match(text, pos).end()
                if text[pos:pos + 1] != ":":
                    raise fail(pos, "expected ':' after a key")
                pos = ws.match(text, pos + 1).end()
                value, pos = decoder.raw_decode(text, pos)
                out[key] = value
            else:
                value, pos = decoder.raw_decode(text, pos)
                out.append(value)
        except _DuplicateKeys as exc:
            keys = ", ".join(repr(k) for k in exc.keys[:5])
            raise fail(start, f"duplicate key(s) {keys} in one JSON object (which value is meant is ambiguous)") \
                from None
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno) from None
        except RecursionError:
            raise fail(start, "JSON nested too deeply to parse (thousands of levels of [ or {)") from None
        lines.append(line_of(start))
        pos = ws.match(text, pos).end()
        ch = text[pos:pos + 1]
        if ch == ",":
            pos = ws.match(text, pos + 1).end()
        elif ch == closing:
            if ws.match(text, pos + 1).end() != len(text):
                raise fail(pos + 1, "extra data after the top-level JSON value")
            _lone_surrogate(text, out, path, None)
            return out, lines
        else:
            raise fail(pos, f"expected ',' or '{closing}'")


def _refuse_duplicate_keys(text: str) -> None:
    """Raise a YAML error at the second occurrence of a key in one mapping (``yaml.safe_load`` keeps the last
    silently, as ``json`` does): the same rule as the JSON readers'. Read on the composed node graph, which builds
    no objects; each scalar key is made by PyYAML's safe constructor, so ``1`` and ``0x1`` are one key. Merge keys
    (``<<``) still override as YAML defines; a key that is itself a list or mapping is left to ``safe_load``, which
    refuses it."""
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    keys = yaml.constructor.SafeConstructor()
    stack, visited = ([root] if root is not None else []), set()
    while stack:
        node = stack.pop()
        if id(node) in visited:  # an alias shares its anchor's node
            continue
        visited.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                stack.extend((key_node, value_node))
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = keys.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} in one mapping (first on line {seen[key]}; which value is "
                        "meant is ambiguous)", key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1


def read_yaml(path: str | Path, *, what: str = "YAML file") -> tuple[Any, str]:
    """Parse a YAML file safely (no tags that build objects, no key twice in a mapping); returns (data, text).
    Every failure is an ``InputError`` naming the file, and for bad YAML the line and column."""
    import yaml

    text = read_text(path, what=what)
    try:
        _refuse_duplicate_keys(text)
        return yaml.safe_load(text), text
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"invalid YAML: {problem}", path=path, line=mark.line + 1 if mark is not None else None,
                         column=mark.column + 1 if mark is not None else None) from None


def read_jsonl(path: str | Path, *, what: str = "JSON Lines file") -> list[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSON Lines file (strict UTF-8)."""
    text = read_text(path, what=what)
    # split on "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() breaks at
    return [(lineno, parse_json(raw, path, line=lineno, message="invalid JSON"))
            for lineno, raw in enumerate(text.split("\n"), start=1) if raw.strip()]
