"""Locate (and prepare) WordNet 3.0 without a network connection.

METEOR's synonym module needs, for every word form, the WordNet synsets it belongs to and the
base forms of irregular inflections. Both come from the plain WordNet 3.0 database files
(``index.{noun,verb,adj,adv}`` and ``{noun,verb,adj,adv}.exc``), which Debian ships in
``wordnet-base`` (``/usr/share/wordnet``) and NLTK keeps under ``corpora/wordnet``.

``find_wordnet()`` returns the first directory holding those files, searching, in order: an
explicit path, ``$CONNOTE_WORDNET``, ``$WNSEARCHDIR``, every NLTK data path (``corpora/wordnet``),
and ``/usr/share/wordnet``. ``prepare_nltk_wordnet()`` copies a Debian installation into an NLTK
data directory (adding the ``lexnames`` file Debian lacks) so ``nltk.corpus.wordnet`` works too.
``noun_lemmatizer()`` gives nouns' base forms from the same files, as nltk's WordNet lemmatizer (GROOViST's
concreteness weights use it).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

POS_FILES = ("noun", "verb", "adj", "adv")
_REQUIRED = tuple(f"index.{p}" for p in POS_FILES) + tuple(f"{p}.exc" for p in POS_FILES)

# The 45 lexicographer file names of WordNet 3.0, in file-number order (a fixed public format).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather "
    "adj.ppl"
).split()


def nltk_data_paths() -> list[str]:
    """NLTK's default data search path, computed without importing NLTK (a multi-second import)."""
    paths = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    paths.append(os.path.expanduser("~/nltk_data"))
    for base in (sys.prefix, getattr(sys, "base_prefix", sys.prefix)):
        paths += [os.path.join(base, "nltk_data"), os.path.join(base, "share", "nltk_data"),
                  os.path.join(base, "lib", "nltk_data")]
    paths += ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return list(dict.fromkeys(paths))


def _candidates(explicit: str | os.PathLike[str] | None) -> list[Path]:
    out: list[Path] = []
    if explicit:
        out.append(Path(explicit))
    for var in ("CONNOTE_WORDNET", "WNSEARCHDIR"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]))
    out.extend(Path(p) / "corpora" / "wordnet" for p in nltk_data_paths())
    out.append(Path("/usr/share/wordnet"))
    return out


def find_wordnet(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The first directory with the WordNet 3.0 index and exception files, or ``None``."""
    if path:  # an explicit location is authoritative
        p = Path(path)
        return p if all((p / name).is_file() for name in _REQUIRED) else None
    for cand in _candidates(path):
        if all((cand / name).is_file() for name in _REQUIRED):
            return cand
    return None


@dataclass
class SynonymTables:
    """Word -> synset ids and inflected form -> base forms (METEOR's synonym dictionary)."""

    synsets: Mapping[str, tuple[int, ...]]
    bases: dict[str, list[str]]
    source: str


def _cache_file(d: Path) -> Path:
    stamp = "-".join(str(int((d / n).stat().st_mtime)) + ":" + str((d / n).stat().st_size) for n in _REQUIRED)
    import hashlib

    tag = hashlib.sha1(f"{d.resolve()}|{stamp}".encode()).hexdigest()[:16]
    from connote.core.cachedir import cache_root

    return cache_root() / "wordnet" / f"synonyms-v3-{tag}.json"


def load_wordnet_tables(directory: str | os.PathLike[str]) -> SynonymTables:
    """Read lemma -> synset offsets and the exception lists from WordNet database files.

    Synsets are identified by their byte offset without the part of speech, as METEOR 1.5 does.
    The parsed tables are cached as JSON (``~/.cache/connote/wordnet``, never a pickle) keyed by the
    files' sizes and times.
    """
    d = Path(directory)
    cache = _cache_file(d)
    if cache.is_file():
        try:  # JSON only: nothing read from the cache can run code
            with open(cache, encoding="utf-8") as fh:
                data = json.load(fh)
            synsets = {w: tuple(int(o) for o in offs) for w, offs in data["synsets"].items()}
            bases = {w: [str(b) for b in bs] for w, bs in data["bases"].items()}
            return SynonymTables(synsets, bases, f"wordnet-3.0:{d}")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # unreadable or not ours: parse the WordNet files again and rewrite it
    tables = _parse_wordnet(d)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"synsets": tables.synsets, "bases": tables.bases}, fh, separators=(",", ":"))
        os.replace(tmp, cache)
    except OSError:
        pass
    return tables


def _parse_wordnet(d: Path) -> SynonymTables:
    synsets: dict[str, set[int]] = {}
    for pos in POS_FILES:
        with open(d / f"index.{pos}", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(" "):
                    continue  # licence header
                parts = line.split()
                n_pointers = int(parts[3])
                offsets = parts[4 + n_pointers + 2:]
                synsets.setdefault(parts[0], set()).update(int(o) for o in offsets)
    bases: dict[str, list[str]] = {}
    for pos in POS_FILES:
        with open(d / f"{pos}.exc", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2:
                    bases.setdefault(parts[0], []).extend(parts[1:])
    return SynonymTables({w: tuple(sorted(s)) for w, s in synsets.items()}, bases, f"wordnet-3.0:{d}")


def prepare_nltk_wordnet(target: str | os.PathLike[str], source: str | os.PathLike[str] | None = None) -> Path:
    """Copy WordNet database files into ``<target>/corpora/wordnet`` so NLTK can read them.

    ``source`` defaults to the first directory :func:`find_wordnet` finds (Debian's
    ``/usr/share/wordnet`` after ``apt-get install wordnet-base wordnet-sense-index``). Writes the
    ``lexnames`` file Debian does not ship. Returns the ``corpora/wordnet`` directory.
    """
    src = Path(source) if source else find_wordnet()
    if src is None or not src.is_dir():
        raise FileNotFoundError(
            "no WordNet 3.0 files found; install them with: apt-get install -y wordnet-base wordnet-sense-index"
        )
    dest = Path(target) / "corpora" / "wordnet"
    dest.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_file():
            shutil.copy2(item, dest / item.name)
    lexnames = dest / "lexnames"
    if not lexnames.exists():
        lines = []
        for number, name in enumerate(LEXNAMES):
            pos = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}[name.split(".")[0]]
            lines.append(f"{number:02d}\t{name}\t{pos}")
        lexnames.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


# ---- nouns' base forms (WordNet's morphy), as GROOViST lemmatises its phrases' words ------------------------

#: morphy(7WN)'s detachment rules for nouns, in nltk's order (its ``MORPHOLOGICAL_SUBSTITUTIONS["n"]``).
NOUN_SUBSTITUTIONS = (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
                      ("shes", "sh"), ("men", "man"), ("ies", "y"))


@dataclass(frozen=True)
class NounLemmatizer:
    """A noun's base form from the WordNet 3.0 database: nltk's ``WordNetLemmatizer().lemmatize(word)`` (pos
    ``n``) as nltk 3.8.1 computes it, the version GROOViST pins.

    WordNet's morphy: a form listed in ``noun.exc`` gives itself and its listed bases; otherwise the detachment
    rules are applied once to the form and, while nothing found is a noun of ``index.noun``, again to what they
    produced (nltk 3.8.2 and later stop after the first pass). Of the forms that are nouns, in that order, the
    shortest is the lemma; a word with none is its own lemma.
    """

    nouns: frozenset[str]
    exceptions: Mapping[str, tuple[str, ...]]
    source: str

    def base_forms(self, form: str) -> list[str]:
        """Every base form of ``form`` that is a WordNet noun (nltk's ``_morphy(form, "n")``)."""

        def detach(forms: list[str]) -> list[str]:
            return [f[: -len(old)] + new for f in forms for old, new in NOUN_SUBSTITUTIONS if f.endswith(old)]

        def nouns(forms: list[str]) -> list[str]:
            return list(dict.fromkeys(f for f in forms if f in self.nouns))

        if form in self.exceptions:
            return nouns([form, *self.exceptions[form]])
        forms = detach([form])
        found = nouns([form, *forms])
        while not found and forms:
            forms = detach(forms)
            found = nouns(forms)
        return found

    def __call__(self, word: str) -> str:
        forms = self.base_forms(word)
        return min(forms, key=len) if forms else word


def noun_lemmatizer(path: str | os.PathLike[str] | None = None) -> NounLemmatizer:
    """The :class:`NounLemmatizer` of the first WordNet :func:`find_wordnet` finds (read once per directory);
    ``FileNotFoundError`` naming how to install one when there is none."""
    found = find_wordnet(path)
    if found is None:
        raise FileNotFoundError("no WordNet 3.0 files found (index.noun, noun.exc); install them with: "
                                "apt-get install -y wordnet-base (or nltk.download('wordnet'))")
    return _noun_lemmatizer(str(found.resolve()))


@functools.lru_cache(maxsize=4)
def _noun_lemmatizer(directory: str) -> NounLemmatizer:
    d = Path(directory)
    nouns = set()
    with open(d / "index.noun", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.startswith(" "):  # the licence header is indented
                nouns.add(line.split(" ", 1)[0])
    exceptions: dict[str, tuple[str, ...]] = {}
    with open(d / "noun.exc", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.split()
            if parts:
                exceptions[parts[0]] = tuple(parts[1:])  # a later line for the same form replaces it, as nltk
    return NounLemmatizer(frozenset(nouns), exceptions, f"wordnet-3.0:{d}")
