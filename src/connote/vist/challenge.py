"""The challenge format of VIST: submissions, the challenge template, AREL's album predictions, generation records,
and gold references (an official SIS file or a challenge-format file with one or more stories per sequence).

A challenge-format file (also the challenge template and, with one or more stories per photo sequence, a gold
file) is::

    {"team_name": ..., "evaluation_info": {...},
     "output_stories": [{"album_id": ..., "photo_sequence": [5 photo ids],
                         "story_text_normalized": ...}]}

Problems of an entry are reported (:class:`connote.vist.data.Problem`), never a crash; malformed JSON raises
:class:`connote.core.errors.InputError` naming the file, line and column (exit status 2). The official files'
records and readers are :mod:`connote.vist.data`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.vist.data import (
    ANNOTATIONS_SHAPE,
    STORY_LENGTH,
    TIER_NAMES,
    Problem,
    SeqKey,
    _str,
    load_json,
    read_official,
    read_text,
    seq_id,
)


@dataclass
class SubmissionEntry:
    """One story of a challenge-format file."""

    index: int
    album_id: str
    photo_sequence: tuple[str, ...]
    text: str
    error: str | None = None

    @property
    def key(self) -> SeqKey:
        return self.photo_sequence


@dataclass
class Submission:
    """A challenge-format file (submission, template or gold)."""

    path: str
    team_name: str | None
    evaluation_info: dict[str, Any]
    entries: list[SubmissionEntry]
    problems: list[Problem]
    #: ``challenge`` (``output_stories``), ``jsonl`` (generation records) or ``arel`` (AREL's released
    #: ``{album_id: [story]}`` prediction files: one story per album, no photo sequence).
    format: str = "challenge"

    def by_sequence(self) -> dict[SeqKey, list[SubmissionEntry]]:
        out: dict[SeqKey, list[SubmissionEntry]] = defaultdict(list)
        for e in self.entries:
            out[e.key].append(e)
        return dict(out)


# --------------------------------------------------------------------------- challenge format


def parse_submission(obj: Any, path: str | Path = "<memory>") -> Submission:
    """Turn a parsed challenge-format object into a :class:`Submission`; entry problems reported."""
    p = str(path)
    if not isinstance(obj, Mapping) or "output_stories" not in obj:
        raise InputError("not a challenge-format file: expected an object with 'output_stories' (or AREL's "
                         "prediction format, an object of album id -> list of story strings)", path=path)
    raw = obj["output_stories"]
    if not isinstance(raw, list):
        raise InputError("'output_stories' must be a list", path=path)
    entries: list[SubmissionEntry] = []
    problems: list[Problem] = []
    for i, e in enumerate(raw):
        where = f"output_stories[{i}]"
        if not isinstance(e, Mapping):
            problems.append(Problem(p, where, "not an object"))
            continue
        seq = e.get("photo_sequence")
        if not isinstance(seq, list) or not seq:
            problems.append(Problem(p, where, "missing or empty 'photo_sequence'"))
            continue
        seq_t = tuple(str(x) for x in seq)
        if len(seq_t) != STORY_LENGTH:
            problems.append(Problem(p, f"{where} ({seq_id(seq_t)})",
                                    f"photo_sequence has {len(seq_t)} photos, expected {STORY_LENGTH}"))
        text = e.get("story_text_normalized")
        error = _str(e.get("error"))
        if text is None:
            problems.append(Problem(p, f"{where} ({seq_id(seq_t)})", "missing 'story_text_normalized'"))
            text = ""
        elif not isinstance(text, str):  # a number or NaN is no story: failed, never scored as text
            problems.append(Problem(p, f"{where} ({seq_id(seq_t)})",
                                    "'story_text_normalized' is not a string"))
            error = error or f"malformed: 'story_text_normalized' is {type(text).__name__} {text!r}, not a string"
            text = ""
        entries.append(SubmissionEntry(index=i, album_id=str(e.get("album_id", "")),
                                       photo_sequence=seq_t, text=text, error=error))
    info = obj.get("evaluation_info")
    return Submission(path=p, team_name=_str(obj.get("team_name")),
                      evaluation_info=dict(info) if isinstance(info, Mapping) else {},
                      entries=entries, problems=problems)


def is_album_predictions(obj: Any) -> bool:
    """Whether ``obj`` is an AREL prediction file's object: ``{album_id: [story, ...]}`` (or ``{album_id: story}``)."""
    return (isinstance(obj, Mapping) and bool(obj) and "output_stories" not in obj
            and all(isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
                    for v in obj.values()))


def parse_album_predictions(obj: Mapping[str, Any], path: str | Path = "<memory>") -> Submission:
    """AREL's released predictions (``prediction_test.json``: ``{album_id: [story]}``) as a submission.

    Each story becomes an entry of its album with no photo sequence (only the album protocol can score
    it); the text is kept exactly as released (AREL's stories start with two spaces, which its ROUGE-L
    counts as tokens). An album with an empty list is reported as a problem.
    """
    p = str(path)
    entries: list[SubmissionEntry] = []
    problems: list[Problem] = []
    for album, stories in obj.items():
        texts = [stories] if isinstance(stories, str) else list(stories)
        if not texts:
            problems.append(Problem(p, f"album {album}", "no story in the list"))
        for text in texts:
            entries.append(SubmissionEntry(index=len(entries), album_id=str(album), photo_sequence=(), text=text))
    return Submission(path=p, team_name=None, evaluation_info={}, entries=entries, problems=problems,
                      format="arel")


def read_submission(path: str | Path) -> Submission:
    """Read a challenge-format JSON file, AREL's ``{album_id: [story]}`` prediction file (see
    :func:`parse_album_predictions`), or a JSONL of generation records (see below).

    A ``.jsonl`` file holds one object per line with ``album_id``, ``photo_sequence``, ``story``
    (or ``story_text_normalized``) and optionally ``error``, as ``connote vist generate`` writes.
    """
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_jsonl_predictions(path)
    obj, problems = load_json(path)
    if is_album_predictions(obj):
        sub = parse_album_predictions(obj, path)
        sub.problems[:0] = problems
        return sub
    sub = parse_submission(obj, path)
    sub.problems[:0] = problems
    return sub


def read_jsonl_predictions(path: str | Path) -> Submission:
    """Read generation records (JSON Lines) as a submission; bad lines raise with their number."""
    from connote.core.jsonio import parse_json

    path = Path(path)
    text, problems = read_text(path)
    entries: list[SubmissionEntry] = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): JSON strings may hold U+2028, U+0085
        if not line.strip():
            continue
        rec = parse_json(line, path, line=n)
        if not isinstance(rec, dict):
            raise InputError(f"expected a JSON object, got {type(rec).__name__}", path=path, line=n)
        seq = rec.get("photo_sequence") or []
        text_ = rec.get("story", rec.get("story_text_normalized")) or ""
        error = _str(rec.get("error"))
        if not isinstance(text_, str):
            error = error or f"malformed: the story is {type(text_).__name__} {text_!r}, not a string"
            text_ = ""
        entries.append(SubmissionEntry(index=n - 1, album_id=str(rec.get("album_id", "")),
                                       photo_sequence=tuple(str(x) for x in seq), text=text_, error=error))
    return Submission(path=str(path), team_name=None, evaluation_info={}, entries=entries,
                      problems=problems, format="jsonl")


def submission_dict(entries: Iterable[tuple[str, Iterable[str], str]], *, team_name: str = "connote",
                    description: str = "") -> dict[str, Any]:
    """Build a challenge-format object from ``(album_id, photo_ids, story_text)`` triples."""
    return {
        "team_name": team_name,
        "evaluation_info": {"additional_description": description},
        "output_stories": [
            {"album_id": str(a), "photo_sequence": [str(x) for x in seq], "story_text_normalized": t}
            for a, seq, t in entries
        ],
    }


# --------------------------------------------------------------------------- gold references


@dataclass
class Gold:
    """Reference stories: by photo sequence (challenge) and by album (album protocol)."""

    path: str
    by_sequence: dict[SeqKey, list[str]]
    sequence_album: dict[SeqKey, str]
    problems: list[Problem] = field(default_factory=list)

    def by_album(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for key, refs in self.by_sequence.items():
            out[self.sequence_album[key]].extend(refs)
        return dict(out)


def read_gold(path: str | Path) -> Gold:
    """Read gold stories from an official SIS file or a challenge-format file.

    Empty reference texts (as in a template) are dropped; a sequence left with none is kept with an
    empty list so that callers can report it.
    """
    path = Path(path)
    obj, problems = load_json(path)
    by_seq: dict[SeqKey, list[str]] = defaultdict(list)
    seq_album: dict[SeqKey, str] = {}
    if isinstance(obj, Mapping) and "output_stories" in obj:
        sub = parse_submission(obj, path)
        problems += sub.problems
        for e in sub.entries:
            seq_album.setdefault(e.key, e.album_id)
            by_seq[e.key]
            if e.text.strip():
                by_seq[e.key].append(e.text)
    elif isinstance(obj, Mapping) and "annotations" in obj:
        vf = read_official(path)
        if vf.tier != "sis":
            raise InputError(f"gold must be a story-in-sequence file, this is {TIER_NAMES[vf.tier]}",
                             path=path)
        problems += vf.problems
        for s in vf.stories:
            seq_album.setdefault(s.photo_ids, s.album_id)
            by_seq[s.photo_ids]
            if s.text.strip():
                by_seq[s.photo_ids].append(s.text)
    else:
        raise InputError("gold must be an official SIS file ('annotations') or a challenge-format "
                         "file ('output_stories')", path=path)
    if not any(by_seq.values()):
        if by_seq:  # e.g. the challenge template given as gold by mistake
            hint = (f"{len(problems)} problem(s), first: {problems[0].item}: {problems[0].message}" if problems
                    else "is this the challenge template?")
            found = f"{len(by_seq)} photo sequence(s), every story text empty ({hint})"
        else:
            first = f"; first problem: {problems[0].item}: {problems[0].message}" if problems else ""
            found = f"no story could be read ({len(problems)} problem(s){first})"
        expected = ("stories in 'output_stories' entries' 'story_text_normalized'"
                    if isinstance(obj, Mapping) and "output_stories" in obj
                    else f"story-in-sequence 'annotations': {ANNOTATIONS_SHAPE}")
        raise InputError(f"no gold stories: {found}; expected {expected}", path=path)
    return Gold(path=str(path), by_sequence=dict(by_seq), sequence_album=seq_album, problems=problems)


def album_story_pairs(path: str | Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Human stories as a scoring corpus: COCO-style ``(hypotheses, references)`` by album.

    From a challenge-format file with several stories per album: for each album with two or more
    stories, its first story is the hypothesis, and its second story and the next such album's first
    story are the references (so every item has two references, one of them from another album).
    Used to compare metric implementations on real multi-sentence text.
    """
    import collections

    data, _problems = load_json(path)
    by_album: dict[str, list[str]] = collections.defaultdict(list)
    for s in data["output_stories"]:
        by_album[str(s["album_id"])].append(s["story_text_normalized"])
    albums = [a for a in by_album if len(by_album[a]) >= 2]
    hyps, refs = {}, {}
    for k, a in enumerate(albums):
        nxt = albums[(k + 1) % len(albums)]
        hyps[a] = [by_album[a][0]]
        refs[a] = [by_album[a][1], by_album[nxt][0]]
    return hyps, refs
