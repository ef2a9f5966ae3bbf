"""Formats of the CV-Probes probe-set builder (``connote cv-probes build``; seed paper 001, "Dataset").

The paper: imSitu verbs, each with five images; verbs mapped to FrameNet frames; three SG descriptions per
verb "by mapping [imSitu's] arguments to the corresponding FrameNet template"; made fluent by ChatGPT 3.5;
"all verbs are in the present tense and all articles are indefinite"; scored with GRUEN, the best kept; PG
captions written by annotators; PG images retrieved with CLIP and checked by hand. This module holds the
parts that need no model: the verb list reader, the templates, the constraint checks and the manifest rows.

**Verb list** (CSV or JSONL, one entry per line):

``verb`` (required, base form: ``pray``), ``id`` (default: the verb, numbered when repeated), ``frame``
(FrameNet frame, kept in the manifest), ``roles`` (imSitu-style frames, role -> noun: JSONL a mapping or a
list of mappings, one per imSitu annotator frame; CSV ``agent=man;place=church`` with frames separated by
``|``), ``templates`` (FrameNet-style templates with ``{role}`` slots and ``{verb}``: JSONL a list, CSV
separated by ``|``; default: the imSitu order agent, verb, objects, prepositional roles), ``sg_images``
(images the SG caption describes, relative to the list's folder or absolute: JSONL a list, CSV separated by
``;``), ``pg_captions`` (the annotators' PG captions: JSONL a list, CSV separated by ``|``). The paper's
annotators wrote PG captions per image ("one SG caption and one or more descriptive PG captions for each
image"): given per image (JSONL a list of lists, CSV groups separated by ``;``, one per ``sg_images`` entry in
its order), an SG image is paired only with its own PG captions; given as one list, every SG image of the entry
is paired with every PG caption.

A file that cannot be read, or a header without ``verb``, is an ``InputError`` (exit 2). An entry that
cannot be built (no roles, a template slot without a role) keeps its problem in ``error``: the run
records it and goes on.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.files import reachable_files, resolved
from connote.core.jsonio import read_jsonl, read_text
from connote.media.images import is_url

#: imSitu roles rendered after the verb with a preposition (the rest are objects, in the frame's order).
PREPOSITIONS = {"place": "in", "location": "in", "tool": "with", "coagent": "with", "companion": "with",
                "instrument": "with", "destination": "to", "goal": "to", "recipient": "to", "source": "from",
                "start": "from", "end": "to", "path": "along", "obstacle": "over", "container": "in",
                "audience": "for", "beneficiary": "for", "occasion": "at", "event": "at"}
SUBJECT_ROLES = ("agent", "agents", "performer", "participant", "participants", "person")
DETERMINERS = ("a", "an", "some", "one", "two", "three", "several", "many")
PLURAL_NOUNS = {"people", "men", "women", "children", "kids", "police", "persons", "students",
                "soldiers", "players", "fans", "monks", "engineers", "protesters", "voters"}
AN_EXCEPTIONS = ("uni", "use", "usu", "eu", "one", "ur")  # vowel letters read as a consonant sound
AN_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
DEFINITE = {"the", "this", "that", "these", "those"}
PAST_AUXILIARIES = {"was", "were", "did", "had", "been"}
VERB_LIST_COLUMNS = ("id", "verb", "frame", "roles", "templates", "sg_images", "pg_captions")


@dataclass
class VerbEntry:
    """One verb of the list, with where it came from and, when it cannot be built, why."""

    entry_id: str
    verb: str
    line: int
    frame: str | None = None
    roles: list[dict[str, str]] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)
    sg_images: list[str] = field(default_factory=list)
    #: Every PG caption of the entry, each once (what is retrieved for).
    pg_captions: list[str] = field(default_factory=list)
    #: The PG captions of each SG image, in ``sg_images``' order, when the list gives them per image.
    pg_by_image: list[list[str]] | None = None
    error: str | None = None


# ---- English forms -----------------------------------------------------------------------------

def third_person(verb: str) -> str:
    """The 3rd-person singular present of a base form (``pray`` -> ``prays``, ``coach`` -> ``coaches``)."""
    v = verb.strip().lower()
    if v in ("be", "have"):
        return {"be": "is", "have": "has"}[v]
    if re.search(r"(s|sh|ch|x|z|o)$", v):
        return v + "es"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    return v + "s"


def past_forms(verb: str) -> set[str]:
    """Regular past and progressive forms of a base form (what the present-tense check refuses)."""
    v = verb.strip().lower()
    stem = v[:-1] if v.endswith("e") else v
    past = {v + "d"} if v.endswith("e") else ({v[:-1] + "ied"} if re.search(r"[^aeiou]y$", v) else {v + "ed"})
    if re.search(r"[^aeiou][aeiou][bdgkmnprt]$", v):  # chase -> chased, but beg -> begged
        past.add(v + v[-1] + "ed")
    return past | {stem + "ing", v + "ing", v + v[-1] + "ing"}


def indefinite_article(noun: str) -> str:
    w = noun.strip().lower()
    if w.startswith(AN_SILENT_H):
        return "an"
    if w[:1] in "aeiou" and not w.startswith(AN_EXCEPTIONS):
        return "an"
    return "a"


def is_plural(phrase: str) -> bool:
    words = phrase.strip().lower().split()
    if not words:
        return False
    if words[0] in ("some", "two", "three", "several", "many"):
        return True
    return words[-1] in PLURAL_NOUNS


def noun_phrase(noun: str) -> str:
    """An imSitu noun with an indefinite article (``church`` -> ``a church``, ``people`` -> ``some people``)."""
    n = " ".join(noun.strip().split())
    first = n.split()[0].lower() if n else ""
    if first in DETERMINERS:
        return n
    if first == "the":  # the paper's captions use indefinite articles only
        n = n.split(" ", 1)[1] if " " in n else ""
    if is_plural(n):
        return f"some {n}"
    return f"{indefinite_article(n)} {n}"


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


# ---- templates ---------------------------------------------------------------------------------

SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Anything in braces, and a brace left alone: every one must be a slot (``{role}`` or ``{verb}``).
BRACED = re.compile(r"\{[^{}]*\}|[{}]")


def template_problem(template: str) -> str | None:
    """Why ``template`` cannot be a template (a brace group that is not a slot ``{role}``: ``{0.__class__}``,
    ``{agent name}``, ``{}``, a brace left open), or None. Such text would stay in the caption verbatim."""
    for m in BRACED.finditer(template):
        if not SLOT.fullmatch(m.group(0)):
            return (f"template {template!r} has slot {m.group(0)!r}, which is not a role name (a slot is {{role}} "
                    "or {verb}: letters, digits and _)")
    return None


def default_template(roles: dict[str, str]) -> str:
    """The imSitu order: subject, verb, objects, then prepositional roles (place last)."""
    names = list(roles)
    subject = next((r for r in names if r.lower() in SUBJECT_ROLES), names[0] if names else None)
    objects = [r for r in names if r != subject and r.lower() not in PREPOSITIONS]
    preps = [r for r in names if r != subject and r.lower() in PREPOSITIONS]
    preps.sort(key=lambda r: r.lower() in ("place", "location"))
    parts = ([f"{{{subject}}}"] if subject else []) + ["{verb}"] + [f"{{{r}}}" for r in objects]
    parts += [f"{PREPOSITIONS[r.lower()]} {{{r}}}" for r in preps]
    return " ".join(parts)


def render(template: str, roles: dict[str, str], verb: str) -> str:
    """Fill a template: roles get indefinite articles; ``{verb}`` agrees with the subject (first slot)."""
    lower = {k.lower(): v for k, v in roles.items() if str(v).strip()}
    slots = [s for s in SLOT.findall(template) if s.lower() != "verb"]
    missing = [s for s in slots if s.lower() not in lower]
    if missing:
        raise ValueError(f"template {template!r} has slot(s) {', '.join(missing)} that the frame "
                         f"({', '.join(roles) or 'no roles'}) does not fill")
    subject = lower.get(slots[0].lower(), "") if slots else ""
    verb_form = verb.strip().lower() if is_plural(subject) else third_person(verb)

    def fill(m: re.Match[str]) -> str:
        name = m.group(1).lower()
        return verb_form if name == "verb" else noun_phrase(lower[name])

    return _sentence(SLOT.sub(fill, template))


def template_captions(entry: VerbEntry, n: int = 3) -> list[str]:
    """Up to ``n`` distinct SG captions: every frame through every template (frames first); a template whose
    slots a frame does not fill is skipped for that frame, and only when no pair fits is it an error."""
    out: list[str] = []
    first_error: ValueError | None = None
    templates = entry.templates or [None]
    for roles in entry.roles:
        for template in templates:
            try:
                text = render(template or default_template(roles), roles, entry.verb)
            except ValueError as exc:
                first_error = first_error or exc
                continue
            if text not in out:
                out.append(text)
            if len(out) >= n:
                return out
    if not out and first_error is not None:
        raise first_error
    return out


# ---- the paper's constraints -------------------------------------------------------------------

WORD = re.compile(r"[A-Za-z']+")


def check_caption(text: str, verb: str) -> list[str]:
    """What in ``text`` breaks the paper's rules: the verb kept, present tense, indefinite articles only.

    Returns the violations (empty when the caption is fine), each a short phrase naming the word.
    """
    words = [w.lower() for w in WORD.findall(text or "")]
    if not words:
        return ["empty caption"]
    v = verb.strip().lower()
    problems = []
    if v not in words and third_person(v) not in words:
        problems.append(f"the verb {v!r} is missing (expected {third_person(v)!r} or {v!r})")
    past = sorted({w for w in words if w in past_forms(v) or w in PAST_AUXILIARIES})
    if past:
        problems.append(f"not simple present tense: {', '.join(repr(w) for w in past)}")
    definite = sorted({w for w in words if w in DEFINITE})
    if definite:
        problems.append(f"definite article or demonstrative: {', '.join(repr(w) for w in definite)}")
    if len(re.findall(r"[.!?](?=\s+\S)", text.strip())) > 0:
        problems.append("more than one sentence")
    return problems


BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|caption\s*:|rewritten\s*(?:caption)?\s*:)\s*", re.IGNORECASE)


def reply_candidates(reply: str) -> list[str]:
    """The captions a rewording reply offers: one per non-empty line, numbering, bullets and quotes removed."""
    out = []
    for line in (reply or "").splitlines():
        line = BULLET.sub("", line).strip().strip('"\u201c\u201d\'').strip()
        if line:
            out.append(_sentence(line))
    return out


# ---- the verb list -----------------------------------------------------------------------------

def _split(value: Any, sep: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [p.strip() for p in str(value).split(sep) if p.strip()]


def _csv_frames(value: str, path: Path, line: int) -> list[dict[str, str]]:
    frames = []
    for part in _split(value, "|"):
        frame: dict[str, str] = {}
        for pair in part.split(";"):
            if not pair.strip():
                continue
            if "=" not in pair:
                raise InputError(f"role {pair.strip()!r} is not role=noun (e.g. agent=man;place=church)",
                                 path=path, line=line, column="roles")
            role, noun = pair.split("=", 1)
            frame[role.strip()] = noun.strip()
        frames.append(frame)
    return frames


def _json_frames(value: Any, path: Path, line: int) -> list[dict[str, str]]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    frames = []
    for frame in items:
        if not isinstance(frame, dict) or not all(isinstance(v, str) for v in frame.values()):
            raise InputError("roles must be a mapping role -> noun or a list of them, e.g. "
                             '{"agent": "man", "place": "church"}', path=path, line=line, column="roles")
        frames.append({str(k): v for k, v in frame.items()})
    return frames


def _pg_captions(value: Any, jsonl: bool, path: Path, line: int) -> tuple[list[str], list[list[str]] | None]:
    """The entry's PG captions, each once, and their groups per SG image when the list gives them so."""
    if jsonl and isinstance(value, list) and any(isinstance(v, list) for v in value):
        if not all(isinstance(v, list) for v in value):
            raise InputError("pg_captions must be a list of captions or a list of lists (one per SG image), not "
                             "a mix", path=path, line=line, column="pg_captions")
        groups = [_split(v, "|") for v in value]
    elif not jsonl and value and ";" in str(value):
        groups = [_split(part, "|") for part in str(value).split(";")]
    else:
        return _split(value, "|"), None
    return list(dict.fromkeys(c for g in groups for c in g)), groups


def _raw_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for lineno, obj in read_jsonl(path, what="verb list"):
            if not isinstance(obj, dict):
                raise InputError(f"expected a JSON object per line, got {type(obj).__name__}", path=path, line=lineno)
            rows.append((lineno, obj))
        return rows
    text = read_text(path, what="verb list")
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        header = None
        rows = []
        for raw in reader:
            if not raw or all(not v.strip() for v in raw):
                continue
            if header is None:
                header = [h.strip() for h in raw]
                if "verb" not in header:
                    raise InputError(f"missing required column 'verb'; header has: {', '.join(header)}",
                                     path=path, line=reader.line_num, column="verb")
                continue
            if len(raw) != len(header):
                raise InputError(f"{len(raw)} fields where the header has {len(header)}", path=path,
                                 line=reader.line_num)
            rows.append((reader.line_num, dict(zip(header, raw))))
    except csv.Error as exc:
        raise InputError(f"cannot parse CSV: {exc}", path=path, line=reader.line_num) from None
    return rows


def read_verb_list(path: str | Path) -> list[VerbEntry]:
    """Read a verb list (see the module docstring) into entries; per-entry problems stay on the entry."""
    path = Path(path)
    rows = _raw_rows(path)
    if not rows:
        raise InputError("the verb list has no entries", path=path)
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
    entries: list[VerbEntry] = []
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    for lineno, row in rows:
        verb = str(row.get("verb") or "").strip()
        if not verb:
            raise InputError("empty verb", path=path, line=lineno, column="verb")
        if not re.fullmatch(r"[A-Za-z][A-Za-z-]*", verb):
            raise InputError(f"verb {verb!r} is not one word in its base form (e.g. pray)", path=path,
                             line=lineno, column="verb")
        counts[verb] = counts.get(verb, 0) + 1
        entry_id = str(row.get("id") or "").strip() or (verb if counts[verb] == 1 else f"{verb}-{counts[verb]}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", entry_id):
            raise InputError(f"id {entry_id!r} may hold letters, digits, '_', '.', '-' only", path=path,
                             line=lineno, column="id")
        if entry_id in seen:
            raise InputError(f"duplicate id {entry_id!r} (first on line {seen[entry_id]})", path=path,
                             line=lineno, column="id")
        seen[entry_id] = lineno
        frames = (_json_frames(row.get("roles"), path, lineno) if jsonl
                  else _csv_frames(str(row.get("roles") or ""), path, lineno))
        frames = [f for f in frames if any(v.strip() for v in f.values())]
        images = []
        for ref in _split(row.get("sg_images"), ";"):
            images.append(ref if Path(ref).is_absolute() else resolved(path.parent / ref))
        pg, pg_by_image = _pg_captions(row.get("pg_captions"), jsonl, path, lineno)
        entry = VerbEntry(entry_id=entry_id, verb=verb.lower(), line=lineno,
                          frame=str(row.get("frame") or "").strip() or None, roles=frames,
                          templates=_split(row.get("templates"), "|"), sg_images=images,
                          pg_captions=pg, pg_by_image=pg_by_image)
        where = f"{path}:{lineno}: verb {verb!r}"
        bad_template = next((p for p in map(template_problem, entry.templates) if p), None)
        if bad_template:
            entry.error = f"{where}: {bad_template}"
        elif pg_by_image is not None and len(pg_by_image) != len(images):
            entry.error = (f"{where}: pg_captions gives {len(pg_by_image)} per-image group(s) for "
                           f"{len(images)} sg_images (one group per SG image, in its order)")
        elif not frames:
            entry.error = f"{where}: no roles (an imSitu frame, e.g. roles=agent=man;place=church)"
        else:
            try:
                template_captions(entry)
            except ValueError as exc:
                entry.error = f"{where}: {exc}"
        entries.append(entry)
    return entries


# ---- the probe manifest ------------------------------------------------------------------------

MANIFEST_COLUMNS = ["item_id", "image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb",
                    "human_votes", "label", "frame", "grammaticality", "retrieval_score", "retrieved_for"]


def manifest_rows(entry: VerbEntry, sg_caption: str, grammaticality: float | None,
                  candidates: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The probe pairs of one verb: each SG image with the SG caption and its PG captions (those written for it
    when the list gives them per image, as the paper; else every PG caption of the entry); each retrieved PG
    image with the PG caption it was retrieved for (label 1) and the SG caption (label 0, the default).

    ``candidates`` maps a PG caption to its kept images (``{"image", "score"}``)."""
    base = {"caption_simplified": "", "verb": entry.verb, "human_votes": "", "label": "",
            "frame": entry.frame or "", "grammaticality": "" if grammaticality is None else f"{grammaticality:.6f}",
            "retrieval_score": "", "retrieved_for": ""}
    rows = []
    for i, image in enumerate(entry.sg_images, start=1):
        rows.append({**base, "item_id": f"{entry.entry_id}-sg{i}-sg", "image": image, "image_kind": "SG",
                     "caption": sg_caption, "caption_kind": "SG"})
        own = entry.pg_by_image[i - 1] if entry.pg_by_image is not None else entry.pg_captions
        for pg in own:
            j = entry.pg_captions.index(pg) + 1
            rows.append({**base, "item_id": f"{entry.entry_id}-sg{i}-pg{j}", "image": image, "image_kind": "SG",
                         "caption": pg, "caption_kind": "PG", "verb": "", "grammaticality": ""})
    n = 0
    with_sg: set[str] = set()  # an image retrieved for two PG captions gets the SG caption once
    for j, pg in enumerate(entry.pg_captions, start=1):
        for cand in candidates.get(pg, []):
            n += 1
            extra = {"retrieval_score": f"{cand['score']:.6f}", "retrieved_for": f"pg{j}"}
            rows.append({**base, **extra, "item_id": f"{entry.entry_id}-r{n}-pg{j}", "image": cand["image"],
                         "image_kind": "PG", "caption": pg, "caption_kind": "PG", "verb": "", "grammaticality": ""})
            if cand["image"] not in with_sg:
                with_sg.add(cand["image"])
                rows.append({**base, **extra, "item_id": f"{entry.entry_id}-r{n}-sg", "image": cand["image"],
                             "image_kind": "PG", "caption": sg_caption, "caption_kind": "SG"})
    return rows


def write_manifest(path: str | Path, rows: list[dict[str, Any]], columns: list[str] | None = None) -> Path:
    """Write rows as a CSV probe manifest (``connote cv-probes run --data`` reads it); atomic."""
    from connote.runs.store import write_text

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns or MANIFEST_COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buf.getvalue())
    return Path(path)


# ---- the image pool ----------------------------------------------------------------------------

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
POOL_COLUMNS = ("path", "image", "filepath", "file", "url", "URL")


@dataclass
class PoolImage:
    """One image of the pool: where it is (a path or URL) and where it was listed."""

    ref: str
    where: str


def _table_refs(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".parquet":
        from connote.core.registry import require

        pq = require("pyarrow.parquet", "parquet")
        try:
            table = pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            raise InputError(f"cannot read the parquet pool ({type(exc).__name__}: {exc})", path=path) from None
        return [(i + 1, row) for i, row in enumerate(table.to_pylist())]
    text = read_text(path, what="image pool table")
    try:
        rows = list(csv.DictReader(io.StringIO(text), strict=True))
    except csv.Error as exc:
        raise InputError(f"cannot parse CSV: {exc}", path=path) from None
    return [(i + 2, row) for i, row in enumerate(rows)]


def read_pool(pool: str | Path) -> list[PoolImage]:
    """The images of a local pool: a folder (image files in it and below, sorted), or a CSV/parquet table
    with a ``path``/``image``/``url`` column (LAION's parquet has ``URL``), relative paths against the
    table's folder. An empty pool is an empty list (the builder records it per PG caption)."""
    pool = Path(pool)
    if not pool.exists():
        raise InputError("image pool not found (expected a folder of images or a CSV/parquet of paths)", path=pool)
    if pool.is_dir():  # through links, each folder once: a link loop in the pool ends
        files = [p for _, p in reachable_files(pool)[0] if p.suffix.lower() in IMAGE_SUFFIXES]
        return [PoolImage(resolved(p), str(p)) for p in files]
    rows = _table_refs(pool)
    if not rows:
        return []
    names = set().union(*(r.keys() for _, r in rows))
    column = next((c for c in POOL_COLUMNS if c in names), None)
    if column is None:
        raise InputError(f"the pool table has no image column; expected one of {', '.join(POOL_COLUMNS)}, "
                         f"has {', '.join(sorted(map(str, names)))}", path=pool, line=1)
    out = []
    for line, row in rows:
        ref = str(row.get(column) or "").strip()
        if not ref:
            continue
        if not is_url(ref) and not Path(ref).is_absolute():
            ref = resolved(pool.parent / ref)
        out.append(PoolImage(ref, f"{pool}:{line}"))
    return out


# ---- the sample (packaged photos) --------------------------------------------------------------

#: (verb, FrameNet frame, imSitu-style frames, template or None, SG sample photo, PG caption)
SAMPLE_VERBS = [
    ("serve", "Serving_in_capacity", [{"agent": "officer", "place": "navy"}, {"agent": "woman", "place": "navy"},
                                      {"agent": "sailor", "place": "fleet"}],
     "{agent} {verb} in {place}", "grace_hopper", "A woman wears a uniform with a cap."),
    ("represent", "Representative", [{"agent": "astronaut", "item": "country"},
                                     {"agent": "woman", "item": "agency"}], None, "astronaut",
     "A woman in a spacesuit smiles in front of a flag."),
    ("work", "Work", [{"agent": "photographer", "place": "park"}, {"agent": "man", "place": "field"}], None,
     "camera", "A man stands behind a camera on a tripod."),
    ("prepare", "Activity_prepare", [{"agent": "engineers", "item": "rocket"},
                                     {"agent": "team", "item": "launch"}], None, "rocket",
     "A rocket stands on a launch pad."),
]
#: Pool photos beyond the sample probe set's (scikit-image ships them).
SAMPLE_POOL_EXTRA = ("horse", "coins", "clock", "brick", "grass", "gravel", "moon", "page", "text", "colorwheel",
                     "hubble_deep_field", "immunohistochemistry", "cat")


def write_sample_build(folder: str | Path) -> tuple[Path, Path]:
    """Write a verb list for the sample's four SG photos and an image pool of the packaged photos (the nine of
    the sample probe set, more of scikit-image's, a mirrored copy as a near-duplicate) into ``folder``;
    returns (verb list, pool folder). Nothing is downloaded."""
    from PIL import Image, ImageOps

    from connote.core.registry import require
    from connote.media.sample import SAMPLE

    folder = Path(folder)
    pool = folder / "pool"
    pool.mkdir(parents=True, exist_ok=True)
    loaders = {name: load for name, load, *_ in SAMPLE}
    for name, load in loaders.items():
        if not (pool / f"{name}.jpg").exists():
            load().save(pool / f"{name}.jpg", quality=92)
    data = require("skimage.data", "offline")
    for name in SAMPLE_POOL_EXTRA:
        if not (pool / f"{name}.jpg").exists():
            Image.fromarray(getattr(data, name)()).convert("RGB").save(pool / f"{name}.jpg", quality=92)
    mirrored = pool / "coffee_mirrored.jpg"
    if not mirrored.exists():
        ImageOps.mirror(Image.open(pool / "coffee.jpg").convert("RGB")).save(mirrored, quality=92)
    rows = []
    for verb, frame, frames, template, photo, pg in SAMPLE_VERBS:
        rows.append({"verb": verb, "frame": frame, "roles": "|".join(";".join(f"{k}={v}" for k, v in f.items())
                                                                     for f in frames),
                     "templates": template or "", "sg_images": f"pool/{photo}.jpg", "pg_captions": pg})
    verbs = folder / "verbs.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["verb", "frame", "roles", "templates", "sg_images", "pg_captions"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    verbs.write_text(buf.getvalue(), encoding="utf-8")
    return verbs, pool
