"""Reading the official VIST files (SIS, DII, DIS); the challenge format and gold references are
:mod:`connote.vist.challenge`.

Official files are JSON objects with the keys ``images, info, albums, type, annotations``; each
``annotations`` item is a one-element list holding one storylet (SIS/DIS) or one description (DII).
IDs are strings. Ordering rules:

* the photos of an album are ordered by ``datetaken`` (``"%Y-%m-%d %H:%M:%S"``; photos with a
  missing/unparseable date go last, ties broken by photo id);
* the storylets of a story are ordered by ``worker_arranged_photo_order`` (DII uses
  ``photo_order_in_story``; when neither is present, by the numeric ``storylet_id``).

Stories with fewer or more than five storylets are kept and reported (``Problem``); bytes that are
not UTF-8 are decoded with replacement characters and reported, never a crash. Malformed JSON
raises :class:`connote.core.errors.InputError` naming the file, line and column (exit status 2).

"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
STORY_LENGTH = 5

TIERS = ("sis", "dii", "dis")
TIER_NAMES = {
    "sis": "story-in-sequence",
    "dii": "descriptions-in-isolation",
    "dis": "descriptions-in-sequence",
}

SeqKey = tuple[str, ...]
"""A photo sequence is identified by its ordered photo ids (the challenge matches on these)."""


def seq_id(photo_ids: Iterable[str]) -> str:
    """A printable id of a photo sequence: its photo ids joined by ``-``, one to one with the sequence.

    A ``-`` or ``%`` inside a photo id is percent-escaped first, so ``["1-2", "3"]`` and ``["1", "2-3"]``
    stay two sequences (VIST's numeric ids print as before).

    >>> seq_id(["1", "2", "3"]), seq_id(["1-2", "3"]), seq_id(["1", "2-3"])
    ('1-2-3', '1%2D2-3', '1-2%2D3')
    """
    return "-".join(str(p).replace("%", "%25").replace("-", "%2D") for p in photo_ids)


@dataclass(frozen=True)
class Problem:
    """Something wrong with one item of an input file; reported, not fatal."""

    path: str
    item: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.item}: {self.message}"


@dataclass
class Image:
    """One Flickr photo of the VIST images table."""

    id: str
    album_id: str | None = None
    datetaken: datetime | None = None
    datetaken_raw: str | None = None
    license: str | None = None
    url: str | None = None
    title: str | None = None
    tags: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Album:
    """One Flickr album: ``photo_ids`` are ordered by ``datetaken``."""

    id: str
    title: str | None = None
    description: str | None = None
    photo_ids: list[str] = field(default_factory=list)
    n_photos: int | None = None
    vist_label: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Storylet:
    """One sentence of a story (SIS/DIS) or one isolated description (DII) of one photo."""

    story_id: str | None
    storylet_id: str | None
    album_id: str
    photo_id: str
    text: str
    original_text: str | None = None
    order: int | None = None
    tier: str | None = None
    worker_id: str | None = None
    setting: str | None = None


@dataclass
class PhotoSequence:
    """An ordered sequence of photos of one album (normally five)."""

    album_id: str
    photo_ids: tuple[str, ...]

    @property
    def key(self) -> SeqKey:
        return self.photo_ids

    @property
    def id(self) -> str:
        return seq_id(self.photo_ids)


@dataclass
class Story:
    """A story: its storylets ordered by ``worker_arranged_photo_order``."""

    id: str
    album_id: str
    tier: str
    storylets: list[Storylet]

    @property
    def photo_ids(self) -> tuple[str, ...]:
        return tuple(s.photo_id for s in self.storylets)

    @property
    def sequence(self) -> PhotoSequence:
        return PhotoSequence(self.album_id, self.photo_ids)

    @property
    def text(self) -> str:
        """The storylets' normalized texts joined by single spaces."""
        return " ".join(s.text.strip() for s in self.storylets if s.text.strip())

    @property
    def original_text(self) -> str:
        return " ".join((s.original_text or s.text).strip() for s in self.storylets)

    @property
    def n_storylets(self) -> int:
        return len(self.storylets)


@dataclass
class VistFile:
    """The contents of one official VIST file."""

    path: str
    tier: str
    images: dict[str, Image]
    albums: dict[str, Album]
    stories: list[Story]
    descriptions: dict[str, list[Storylet]]
    problems: list[Problem]
    info: dict[str, Any] = field(default_factory=dict)

    def stories_by_album(self) -> dict[str, list[Story]]:
        out: dict[str, list[Story]] = defaultdict(list)
        for s in self.stories:
            out[s.album_id].append(s)
        return dict(out)

    def sequences(self) -> dict[SeqKey, list[Story]]:
        """Stories grouped by photo sequence."""
        out: dict[SeqKey, list[Story]] = defaultdict(list)
        for s in self.stories:
            out[s.photo_ids].append(s)
        return dict(out)

    def texts(self) -> list[str]:
        """Every (text, image) pair's text of this tier: storylets or isolated descriptions."""
        if self.stories:
            return [sl.text for s in self.stories for sl in s.storylets]
        return [d.text for ds in self.descriptions.values() for d in ds]

    def pairs(self) -> list[tuple[str, str]]:
        """``(photo_id, text)`` pairs of this tier."""
        if self.stories:
            return [(sl.photo_id, sl.text) for s in self.stories for sl in s.storylets]
        return [(pid, d.text) for pid, ds in self.descriptions.items() for d in ds]


# --------------------------------------------------------------------------- low-level reading


def read_text(path: str | Path) -> tuple[str, list[Problem]]:
    """Read a file as UTF-8; undecodable bytes become U+FFFD and are reported with their line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc})", path=path) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        text = data.decode("utf-8", errors="replace")
        n_bad = text.count("\ufffd")
        return text, [Problem(str(path), f"line {line}",
                              f"not valid UTF-8 (first bad byte at offset {exc.start}); "
                              f"{n_bad} character(s) replaced with U+FFFD")]


def load_json(path: str | Path) -> tuple[Any, list[Problem]]:
    """Parse a JSON file; malformed or too deeply nested JSON, a missing file or a directory raise
    ``InputError`` (malformed JSON with line and column). Bytes that are not UTF-8 become U+FFFD and
    are reported as a problem with their line, so the rest of the file is still read."""
    from connote.core.jsonio import decode_utf8, parse_json, read_bytes

    text, bad = decode_utf8(read_bytes(path), path, replace=True)
    problems = [] if bad is None else [
        Problem(str(path), f"line {bad.line}",
                f"not valid UTF-8 (first bad byte at offset {bad.offset}, column {bad.column}); "
                f"{bad.replaced} character(s) replaced with U+FFFD")]
    return parse_json(text, path), problems


ANNOTATIONS_SHAPE = ("a list of one-element lists, each holding one annotation object "
                     "{album_id, photo_flickr_id, story_id, text, worker_arranged_photo_order, ...}")


def _json_type(x: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if isinstance(x, Mapping):
        return "object"
    if isinstance(x, str):
        return "string"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, (int, float)):
        return "number"
    return "null" if x is None else "array"


def _str(x: Any) -> str | None:
    if x is None:
        return None
    return str(x)


def _text(x: Any) -> str:
    if x is None:
        return ""
    if not isinstance(x, str):
        return str(x)
    return x


def parse_datetaken(value: Any) -> datetime | None:
    """Parse ``datetaken``; ``None`` when absent or not in the VIST format."""
    if not value:
        return None
    s = str(value).strip()
    for fmt in (DATE_FORMAT, "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    return None


def order_photos(photo_ids: Iterable[str], images: Mapping[str, Image]) -> list[str]:
    """Order photo ids by ``datetaken``; undated or unknown photos last; ties by numeric id."""

    def key(pid: str) -> tuple[int, datetime, int, str]:
        img = images.get(pid)
        dt = img.datetaken if img else None
        num = int(pid) if pid.isdigit() else 0
        return (0 if dt else 1, dt or datetime.min, num, pid)

    return sorted(dict.fromkeys(photo_ids), key=key)


def _order_key(ann: Mapping[str, Any]) -> int | None:
    for k in ("worker_arranged_photo_order", "photo_order_in_story"):
        v = ann.get(k)
        if v is not None and str(v).strip().lstrip("-").isdigit():
            return int(v)
    return None


def detect_tier(obj: Mapping[str, Any], path: str | Path = "") -> str:
    """``sis``, ``dii`` or ``dis`` from the file's ``type``, its annotations' ``tier`` or its name."""
    candidates: list[str] = []
    t = obj.get("type")
    if isinstance(t, str):
        candidates.append(t)
    anns = obj.get("annotations") or []
    if anns:
        first = anns[0][0] if isinstance(anns[0], list) and anns[0] else anns[0]
        if isinstance(first, Mapping) and isinstance(first.get("tier"), str):
            candidates.append(first["tier"])
    candidates.append(Path(str(path)).name)
    for c in candidates:
        c = c.lower()
        if "story" in c or "sis" in c.split("."):
            return "sis"
        if "isolation" in c or "dii" in c.split("."):
            return "dii"
        if ("description" in c and "sequence" in c) or "dis" in c.split("."):
            return "dis"
    raise InputError("cannot tell the VIST tier (type/tier field says neither story-in-sequence, "
                     "descriptions-in-isolation nor descriptions-in-sequence)", path=path)


# --------------------------------------------------------------------------- official files


def read_official(path: str | Path, *, tier: str | None = None) -> VistFile:
    """Read an official VIST file (SIS, DII or DIS) into images, albums and stories.

    Problems (stories with fewer than 5 storylets, or a photo twice: VIST's storytelling asked for "at
    least five" photos; annotations missing fields, album photos absent from the images table, non-UTF-8
    bytes) are collected in ``VistFile.problems``.
    """
    path = Path(path)
    obj, problems = load_json(path)
    if not isinstance(obj, Mapping):
        raise InputError("expected a JSON object with 'images', 'albums' and 'annotations'", path=path)
    if "annotations" not in obj:
        raise InputError("no 'annotations' key: not an official VIST file "
                         "(a challenge-format file has 'output_stories')", path=path)
    for key, shape in (("annotations", ANNOTATIONS_SHAPE), ("images", "a list of image objects"),
                       ("albums", "a list of album objects")):
        if obj.get(key) is not None and not isinstance(obj[key], list):
            raise InputError(f"'{key}' is a JSON {_json_type(obj[key])}; expected {shape}", path=path)
    tier = tier or detect_tier(obj, path)
    p = str(path)

    images: dict[str, Image] = {}
    for i, raw in enumerate(obj.get("images") or []):
        if not isinstance(raw, Mapping) or raw.get("id") is None:
            problems.append(Problem(p, f"images[{i}]", "image without an 'id'"))
            continue
        pid = str(raw["id"])
        known = {"id", "album_id", "datetaken", "license", "url_o", "url", "title", "tags"}
        dt_raw = _str(raw.get("datetaken"))
        dt = parse_datetaken(dt_raw)
        if dt_raw and dt is None:
            problems.append(Problem(p, f"image {pid}", f"unparseable datetaken {dt_raw!r}"))
        images[pid] = Image(
            id=pid, album_id=_str(raw.get("album_id")), datetaken=dt, datetaken_raw=dt_raw,
            license=_str(raw.get("license")), url=_str(raw.get("url_o") or raw.get("url")),
            title=_str(raw.get("title")), tags=_str(raw.get("tags")),
            extra={k: v for k, v in raw.items() if k not in known},
        )

    album_photos: dict[str, list[str]] = defaultdict(list)
    for img in images.values():
        if img.album_id:
            album_photos[img.album_id].append(img.id)

    albums: dict[str, Album] = {}
    for i, raw in enumerate(obj.get("albums") or []):
        if not isinstance(raw, Mapping) or raw.get("id") is None:
            problems.append(Problem(p, f"albums[{i}]", "album without an 'id'"))
            continue
        aid = str(raw["id"])
        n = raw.get("photos")
        known = {"id", "title", "description", "photos", "vist_label"}
        albums[aid] = Album(
            id=aid, title=_str(raw.get("title")), description=_str(raw.get("description")),
            n_photos=int(n) if str(n or "").isdigit() else None,
            vist_label=_str(raw.get("vist_label")),
            extra={k: v for k, v in raw.items() if k not in known},
        )
    for aid in album_photos:
        albums.setdefault(aid, Album(id=aid))
    for aid, album in albums.items():
        album.photo_ids = order_photos(album_photos.get(aid, []), images)

    storylets: list[Storylet] = []
    seen_storylets: dict[tuple[str, str], int] = {}
    for i, item in enumerate(obj.get("annotations") or []):
        ann = item[0] if isinstance(item, list) and item else item
        if not isinstance(ann, Mapping):
            problems.append(Problem(p, f"annotations[{i}]", "not an annotation object"))
            continue
        aid, pid = _str(ann.get("album_id")), _str(ann.get("photo_flickr_id"))
        if aid is None or pid is None:
            problems.append(Problem(p, f"annotations[{i}]", "missing album_id or photo_flickr_id"))
            continue
        raw_text = ann.get("text")
        if raw_text is not None and not isinstance(raw_text, str):
            problems.append(Problem(p, f"annotations[{i}]",
                                    f"'text' is a JSON {_json_type(raw_text)}, expected a string; read as empty"))
            raw_text = ""
        sid, slid = _str(ann.get("story_id")), _str(ann.get("storylet_id"))
        if sid is not None and slid is not None and tier != "dii":
            first = seen_storylets.setdefault((sid, slid), i)
            if first != i:  # the same storylet listed again: a story would read ten photos, not five
                problems.append(Problem(p, f"annotations[{i}]", f"duplicate storylet {slid} of story {sid} (first "
                                        f"at annotations[{first}]); the repeat is left out"))
                continue
        storylets.append(Storylet(
            story_id=_str(ann.get("story_id")), storylet_id=_str(ann.get("storylet_id")),
            album_id=aid, photo_id=pid, text=_text(raw_text),
            original_text=_str(ann.get("original_text")), order=_order_key(ann),
            tier=_str(ann.get("tier")), worker_id=_str(ann.get("worker_id")),
            setting=_str(ann.get("setting")),
        ))
        if pid not in images and images:
            problems.append(Problem(p, f"annotations[{i}]", f"photo {pid} is not in the images table"))

    stories: list[Story] = []
    descriptions: dict[str, list[Storylet]] = defaultdict(list)
    if tier == "dii":
        for sl in storylets:
            descriptions[sl.photo_id].append(sl)
    grouped: dict[str, list[Storylet]] = defaultdict(list)
    for i, sl in enumerate(storylets):
        if sl.story_id is not None and tier != "dii":
            grouped[sl.story_id].append(sl)
        elif tier != "dii":
            problems.append(Problem(p, f"storylet {i} (photo {sl.photo_id})", "no 'story_id': not part of a story"))
    for sid, sls in grouped.items():
        sls.sort(key=lambda s: (s.order if s.order is not None else 10**9,
                                int(s.storylet_id) if (s.storylet_id or "").isdigit() else 0))
        albums_of = {s.album_id for s in sls}
        story = Story(id=sid, album_id=sls[0].album_id, tier=tier, storylets=sls)
        if len(albums_of) > 1:
            problems.append(Problem(p, f"story {sid}", f"storylets from {len(albums_of)} albums"))
        # the storytelling stage asked for "at least five" photos (the release's stories have five)
        if story.n_storylets < STORY_LENGTH:
            problems.append(Problem(p, f"story {sid}",
                                    f"has {story.n_storylets} storylets, expected {STORY_LENGTH}"))
        elif len(set(story.photo_ids)) != story.n_storylets:
            problems.append(Problem(p, f"story {sid}", "has a photo twice"))
        stories.append(story)
    missing_img = [pid for a in albums.values() for pid in a.photo_ids if pid not in images]
    for pid in missing_img:
        problems.append(Problem(p, f"photo {pid}", "listed but missing from the images table"))
    for aid, album in albums.items():
        if album.n_photos is not None and album.n_photos != len(album.photo_ids) and images:
            problems.append(Problem(p, f"album {aid}", f"says {album.n_photos} photos, "
                                    f"{len(album.photo_ids)} are in the images table"))
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    return VistFile(path=p, tier=tier, images=images, albums=albums, stories=stories,
                    descriptions=dict(descriptions), problems=problems, info=info)
