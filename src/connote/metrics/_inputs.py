"""Validation of COCO-style hypothesis/reference dictionaries (errors name the offending ids)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from connote.core.errors import InputError


def _preview(ids: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:limit])
    return shown + (f" ... ({len(ids)} in all)" if len(ids) > limit else "")


def check_inputs(hyps: Mapping[str, Any], refs: Mapping[str, Any], *, hyp_source: str | None = None,
                 ref_source: str | None = None) -> tuple[list[str], list[str], list[list[str]]]:
    """Return ``(ids, hypotheses, reference lists)`` in the references' order, or raise InputError.

    A hypothesis is a string or a one-element list of strings; references are a non-empty list of
    strings. Ids present on one side only, empty/missing reference lists and wrong types are
    reported with the ids (and file names when given).
    """
    if not isinstance(hyps, Mapping):
        raise InputError("hypotheses must be a JSON object {id: text}", path=hyp_source)
    if not isinstance(refs, Mapping):
        raise InputError("references must be a JSON object {id: [text, ...]}", path=ref_source)
    hkeys = {str(k): k for k in hyps}
    rkeys = {str(k): k for k in refs}
    only_h = [k for k in hkeys if k not in rkeys]
    only_r = [k for k in rkeys if k not in hkeys]
    if only_h or only_r:
        parts = []
        if only_h:
            parts.append(f"ids with a hypothesis but no references: {_preview(only_h)}")
        if only_r:
            parts.append(f"ids with references but no hypothesis: {_preview(only_r)}")
        where = " vs ".join(p for p in (hyp_source, ref_source) if p)
        raise InputError("; ".join(parts), path=where or None)
    ids: list[str] = []
    hyp_list: list[str] = []
    ref_list: list[list[str]] = []
    for key, orig in rkeys.items():
        r = refs[orig]
        if isinstance(r, str):
            r = [r]
        if r is None or not isinstance(r, Sequence) or len(r) == 0:
            raise InputError(f"id {key!r}: empty or missing reference list", path=ref_source)
        if not all(isinstance(x, str) for x in r):
            bad = next(x for x in r if not isinstance(x, str))
            got = "null" if bad is None else type(bad).__name__
            raise InputError(f"id {key!r}: references must be strings, got {got}", path=ref_source)
        h = hyps[hkeys[key]]
        if isinstance(h, (list, tuple)):
            if len(h) != 1 or not isinstance(h[0], str):
                raise InputError(f"id {key!r}: expected one hypothesis string, got {len(h)} items",
                                 path=hyp_source)
            h = h[0]
        if not isinstance(h, str):
            got = "null" if h is None else type(h).__name__
            raise InputError(f"id {key!r}: hypothesis must be a string, got {got}", path=hyp_source)
        _check_text(h, key, "hypothesis", hyp_source)
        for text in r:
            _check_text(text, key, "reference", ref_source)
        ids.append(key)
        hyp_list.append(h)
        ref_list.append(list(r))
    if not ids:
        raise InputError("no items to score", path=ref_source)
    return ids, hyp_list, ref_list


def _check_text(text: str, key: str, what: str, source: str | None) -> None:
    """A text that cannot be written as UTF-8 (a lone surrogate, e.g. JSON's ``"\\ud800"``) is refused with its id
    and file, not left to fail inside a metric."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"id {key!r}: the {what} holds a lone surrogate (U+{ord(text[exc.start]):04X} at "
                         f"character {exc.start + 1}), which is not text", path=source) from None


def read_json_mapping(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """Read a JSON object from a file; errors name the file, line and column."""
    from connote.core.jsonio import parse_json, read_text

    # non-UTF-8 bytes, a directory, deep nesting: InputError with file (and line, column), not a traceback
    data = parse_json(read_text(path, what=f"{what} file"), path, message="invalid JSON")
    if isinstance(data, list):  # COCO result list [{"image_id", "caption"}]
        out: dict[str, Any] = {}
        for i, row in enumerate(data):
            if not isinstance(row, dict) or "caption" not in row or "image_id" not in row:
                raise InputError(f"item {i}: expected {{'image_id', 'caption'}}", path=path)
            out.setdefault(str(row["image_id"]), []).append(row["caption"])
        return out
    if not isinstance(data, dict):
        raise InputError(f"{what} must be a JSON object {{id: ...}}", path=path)
    return data


def check_aligned(hyps: Sequence[Any], refs: Sequence[Any]) -> None:
    """A functional core's inputs: one reference list per hypothesis (a zip would score a truncated corpus)."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses and {len(refs)} reference lists: they must be aligned, "
                         "one reference list per hypothesis")
