"""The ``meteor`` metric of :func:`connote.metrics.compute_scores`: options, scorer cache, and the
asynchronous start (worker processes align while the other metrics are computed)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from connote.core.errors import ConnoteError
from connote.metrics.options import OptionError, opt


@dataclass(frozen=True)
class MeteorOptions:
    """Options of the ``meteor`` metric (see :class:`connote.metrics.meteor.Meteor` for their meaning)."""

    meteor_language: str = opt("en", "language (en)")
    meteor_task: str = opt("rank", "parameter set: rank (pycocoevalcap), hter (VIST), adq, util, li, tune")
    meteor_norm: bool = opt(True, "the jar's -norm normalization (and lower-casing); the flag skips it",
                            flag="--meteor-no-norm")
    meteor_modules: tuple[str, ...] | None = opt(None, "subset of exact,stem,synonym,paraphrase (default: all)")
    meteor_beam: int = opt(40, "alignment beam size (the jar's 40)", ge=1)
    meteor_data: str | None = opt(None, "directory with meteor-1.5.jar and data/paraphrase-en.gz", path="dir")
    paraphrase_file: str | None = opt(None, "METEOR paraphrase table (paraphrase-en.gz format)", path="file")
    wordnet: str | None = opt(None, "WordNet 3.0 dict directory (with synonym_source wordnet/auto)",
                             path="dir")
    synonym_source: Literal["auto", "jar", "wordnet"] = opt(
        "auto", "auto (the jar's own tables - its numbers exactly - and WordNet 3.0 files only where the jar is "
                "absent), jar, or wordnet (WordNet 3.0 files, e.g. Debian's)", flag="--synonyms")
    meteor_parameters: tuple[float, ...] | None = opt(None, "override alpha, beta, gamma, delta")
    meteor_weights: tuple[float, ...] | None = opt(None, "override the module weights")
    meteor_preset: Literal["pycocoevalcap", "vist"] | None = opt(
        None, "pycocoevalcap (task rank, -norm) or vist (task hter, no -norm); overrides task and norm")
    n_jobs: int | None = opt(None, "METEOR worker processes (0 or None: all usable cores; small inputs always "
                                   "use one)", flag="--jobs", ge=0)


_KWARGS = {"meteor_language": "language", "meteor_task": "task", "meteor_norm": "norm",
           "meteor_modules": "modules", "meteor_beam": "beam_size", "meteor_data": "meteor_data",
           "paraphrase_file": "paraphrase_file", "wordnet": "wordnet", "synonym_source": "synonym_source",
           "meteor_parameters": "parameters", "meteor_weights": "weights"}
_CACHE: dict[tuple, Any] = {}


def meteor_from_options(options: MeteorOptions | Mapping[str, Any]):
    """A (cached) :class:`~connote.metrics.meteor.Meteor` for these options (a MeteorOptions or the settings)."""
    from connote.metrics.meteor import PRESETS, Meteor
    from connote.metrics.options import parse_options

    if not isinstance(options, MeteorOptions):
        options = parse_options(MeteorOptions, options)
    values = asdict(options)
    kwargs = {v: values[k] for k, v in _KWARGS.items() if values[k] is not None}
    if options.meteor_preset:
        preset = PRESETS[options.meteor_preset]
        kwargs.update(preset)
    # METEOR 1.5 by default means all of the jar's resources: a score computed without one of them must not
    # look like METEOR 1.5. Reduced modules are a choice the user makes by name (meteor_modules), and then
    # the signature says which modules ran and which resources were missing.
    kwargs["strict"] = options.meteor_modules is None
    key = tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in kwargs.items()))
    m = _CACHE.get(key)
    if m is None:
        try:
            m = Meteor(**kwargs)
        except FileNotFoundError as exc:  # strict: a resource of METEOR 1.5 is missing
            raise MeteorResourceError(str(exc)) from None
        except ValueError as exc:  # a value Meteor refuses (unknown task, module, language, table)
            raise OptionError(str(exc)) from None
        _CACHE[key] = m
    return m


class MeteorResourceError(ConnoteError):
    """METEOR 1.5 was asked for, but a resource of the jar's is missing (exit status 2)."""

    exit_code = 2

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what}. METEOR 1.5 needs the tables meteor-1.5.jar ships: install them with "
            "pip install 'connote[metrics]' (pycocoevalcap carries the jar; no Java needed), or ask for "
            "reduced modules by name (e.g. --meteor-modules exact,stem), which the score's signature then names")


def pycoco_meteor_inputs(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[list[str], list[list[str]]]:
    """The text pycocoevalcap's METEOR wrapper actually sends to the jar.

    It deletes ``|||`` from hypotheses (and halves double spaces), while a ``|||`` inside a reference
    splits it into two references on the jar's side.
    """
    out_h = [h.replace("|||", "").replace("  ", " ") for h in hyps]
    out_r = [[part for r in rs for part in r.split("|||")] for rs in refs]
    return out_h, out_r


class _Pending:
    """A started METEOR computation (worker processes may still be aligning)."""

    def __init__(self, inp: Any, meteor: Any, pending: Any, msgs: list[str]) -> None:
        self._inp, self._m, self._pending, self._msgs = inp, meteor, pending, msgs

    def result(self):
        from connote.metrics.registry import MetricOutput

        score, items = self._pending.result()
        per = {i: {"METEOR": v} for i, v in zip(self._inp.ids, items)}
        return MetricOutput({"METEOR": score}, per, f"{self._m.signature()}|tok:{self._inp.tok_tag()}", self._msgs)

    def cancel(self) -> None:
        self._pending.cancel()


def start(inp: Any, options: MeteorOptions) -> _Pending:
    """Start METEOR; with worker processes the caller computes other metrics meanwhile."""
    from connote.metrics.meteor import MeteorResourceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeteorResourceWarning)
        m = meteor_from_options(options)
    msgs = [str(w.message) for w in caught] + [f"METEOR: {x}" for x in m.missing if not caught]
    for msg in msgs:
        warnings.warn(msg, MeteorResourceWarning, stacklevel=4)
    hyps, refs = pycoco_meteor_inputs(inp.hyps, inp.refs)
    return _Pending(inp, m, m._corpus_start(hyps, refs, n_jobs=options.n_jobs), msgs)


def compute(inp: Any, options: MeteorOptions):
    """METEOR in this process's turn (no other metric to overlap with)."""
    return start(inp, options).result()
