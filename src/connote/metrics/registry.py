"""The metric registry and the one table of score names.

Adding a metric is one module plus one registration: here for a generic metric, or, for a paper's own metric,
in the ``METRICS`` table of its plugin module (:mod:`connote.core.plugins`; VMC's ACS/ACD is declared there,
with its printed names in the plugin's ``SCORE_NAMES``). The module defines

* an options dataclass (fields typed, with defaults; see :mod:`connote.metrics.options`), and
* ``compute(inp: MetricInput, options) -> MetricOutput``;

and, where the metric can run in the background while the others are computed (METEOR's worker
processes), ``start(inp, options)`` returning an object with ``result() -> MetricOutput`` and
``cancel()``: that is the *asynchronous* capability, declared by naming ``start`` in the
registration. Registrations name code as ``"module:attr"`` strings, so listing metrics, or choosing
some, imports only what those metrics need.

:data:`SCORE_NAMES` is the table of score names: the engine's key (pycocoevalcap's name, as in
``ScoreResult.scores``), the name papers print, the metric that computes it and its scale; the papers add
their own (``SCORE_NAMES`` in their plugin modules: GROOViST/RoViST, ACS/ACD), and :func:`score_names` is
the whole table. :func:`display_name` and :func:`score_keys` look names up in it (used by the VIST and VMC
tables).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from connote.core.plugins import PluginTable, track
from connote.core.registry import Registry


# ---------------------------------------------------------------------------------- score names
@dataclass(frozen=True)
class ScoreName:
    """One score: engine key, printed name, the metric computing it, its scale, accepted aliases."""

    key: str
    display: str
    metric: str
    scale: str
    aliases: tuple[str, ...] = ()


_UNIT = "0-1"
SCORE_NAMES: tuple[ScoreName, ...] = (
    *(ScoreName(f"Bleu_{k}", f"BLEU-{k}", "bleu", _UNIT) for k in range(1, 5)),
    ScoreName("METEOR", "METEOR", "meteor", _UNIT),
    ScoreName("ROUGE_L", "ROUGE-L", "rouge_l", _UNIT),
    ScoreName("CIDEr", "CIDEr-D", "cider", "0-10 (pycocoevalcap's CIDEr-D, x10)", ("cider_d",)),
    ScoreName("BERTScore_P", "BERT-P", "bertscore", "cosine, -1..1 (0-1 in practice)"),
    ScoreName("BERTScore_R", "BERT-R", "bertscore", "cosine, -1..1 (0-1 in practice)"),
    ScoreName("BERTScore_F1", "BERT-F1", "bertscore", "cosine, -1..1 (0-1 in practice)",
              ("BERTScore-F1", "bertscore_f1", "F1")),
)
# display name of a metric family (a registry key) where it is one printed name
_FAMILY = {"bleu": "BLEU", "meteor": "METEOR", "rouge_l": "ROUGE-L", "cider": "CIDEr-D"}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _declared_names(mod: Any, table: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ScoreName]]:
    return [(key, ScoreName(key, row["display"], row["metric"], row["scale"], tuple(row.get("aliases", ()))))
            for key, row in table.items()]


#: The papers' score names: ``SCORE_NAMES`` in their plugin modules, engine key -> ``{"display", "metric",
#: "scale", "aliases"}``.
PLUGIN_SCORE_NAMES: PluginTable = PluginTable("score name", "SCORE_NAMES", entries=_declared_names)


def score_names() -> tuple[ScoreName, ...]:
    """Every score name: the generic ones (:data:`SCORE_NAMES`), then the papers' (:data:`PLUGIN_SCORE_NAMES`)."""
    return (*SCORE_NAMES, *PLUGIN_SCORE_NAMES.values())


class _Index:
    """Score names by every spelling, built on the first lookup and again after :func:`connote.core.plugins.reset`."""

    def __init__(self) -> None:
        self._by_name: dict[str, ScoreName] | None = None
        track(self)

    def _forget_plugins(self) -> None:
        self._by_name = None

    def get(self, name: str) -> ScoreName | None:
        if self._by_name is None:
            out: dict[str, ScoreName] = {}
            for s in score_names():
                for n in (s.key, s.display, *s.aliases):
                    out.setdefault(_norm(n), s)
            self._by_name = out
        return self._by_name.get(_norm(name))


_BY_NAME = _Index()


def lookup(name: str) -> ScoreName | None:
    """The table row of a score name (engine key, printed name or alias; case and punctuation ignored)."""
    return _BY_NAME.get(name)


def display_name(name: str) -> str:
    """Printed name of a score or metric key (``Bleu_4`` -> ``BLEU-4``, ``cider`` -> ``CIDEr-D``); other
    names come back unchanged.

    >>> [display_name(x) for x in ("Bleu_1", "bleu-4", "METEOR", "rouge_l", "CIDEr", "cider_d", "bleu")]
    ['BLEU-1', 'BLEU-4', 'METEOR', 'ROUGE-L', 'CIDEr-D', 'CIDEr-D', 'BLEU']
    """
    row = lookup(name)
    if row is not None:
        return row.display
    fam = {_norm(k): v for k, v in _FAMILY.items()}.get(_norm(name))
    return fam or name


def score_keys(name: str) -> tuple[str, ...]:
    """The engine key and aliases under which a score may appear in results (``BERT-F1`` ->
    ``("BERTScore_F1", "BERTScore-F1", "F1")``)."""
    row = lookup(name)
    if row is None:
        raise KeyError(f"unknown score name {name!r}; known: {', '.join(s.display for s in score_names())}")
    return (row.key, *row.aliases)


def display_names(metrics: Sequence[str]) -> tuple[str, ...]:
    """Printed names of every score the given metrics produce, in table order."""
    return tuple(s.display for s in score_names() if s.metric in metrics)


# ---------------------------------------------------------------------------------- the registry
@dataclass
class MetricInput:
    """What a metric computes on: aligned ids, hypotheses and reference lists (already tokenized),
    the tokenization applied, whether per-item scores are wanted, and every option given (a metric
    that builds on another, as ACD on BERTScore, parses that metric's options from ``settings``)."""

    ids: list[str]
    hyps: list[str]
    refs: list[list[str]]
    tokenize: str
    per_item: bool
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """No metric sees an empty or unaligned input (a zip would score a truncated corpus in silence)."""
        from connote.core.errors import InputError

        if not len(self.ids) == len(self.hyps) == len(self.refs):
            raise InputError(f"metric input: {len(self.ids)} ids, {len(self.hyps)} hypotheses and {len(self.refs)} "
                             "reference lists; they must be aligned, one of each per item")
        if not self.ids:
            raise InputError("metric input: no items to score")

    def tok_tag(self) -> str:
        """The tokenization as signatures write it."""
        return "ptb-connote" if self.tokenize == "ptb" else "none"


class MetricOutput(NamedTuple):
    """Corpus scores, per-item scores ``{id: {name: value}}``, the signature, warnings."""

    scores: dict[str, float]
    per_item: dict[str, dict[str, float]]
    signature: str
    warnings: list[str]


def version_tag() -> str:
    """``connote-<version>``, the last field of every signature."""
    from connote import __version__

    return f"connote-{__version__}"


def _resolve(ref: Any) -> Any:
    from connote.core.registry import import_target

    return import_target(ref) if isinstance(ref, str) and ":" in ref else ref


@dataclass
class MetricSpec:
    """A registered metric: its code (``"module:attr"`` strings, imported on first use) and capabilities."""

    name: str
    compute: Any
    options: Any
    help: str = ""
    start: Any = None  # asynchronous capability: start(inp, options) -> pending with result() and cancel()

    def options_class(self) -> type:
        self.options = _resolve(self.options)
        return self.options

    def compute_fn(self) -> Any:
        self.compute = _resolve(self.compute)
        return self.compute

    def start_fn(self) -> Any:
        self.start = _resolve(self.start)
        return self.start

    @property
    def asynchronous(self) -> bool:
        """Whether the metric can work in the background while other metrics are computed."""
        return self.start is not None


def _plugin_metrics(registry: Registry[MetricSpec]) -> None:
    """The papers' metrics: ``METRICS`` in their plugin modules, name -> ``{"compute", "options", "help", "start"}``
    (``"module:attr"`` strings, as :func:`register` takes them; nothing is imported until the metric is used)."""
    from connote.core.plugins import PluginError, declared

    for mod, table in declared("METRICS"):
        for name, decl in table.items():
            try:
                spec = MetricSpec(name, decl["compute"], decl["options"], decl.get("help", ""), decl.get("start"))
                registry.register(name, spec, help=spec.help)
            except (KeyError, TypeError, ValueError) as exc:
                raise PluginError(f"connote plugin {mod.__name__}: metric {name!r}: {exc}") from None


#: The metrics: the generic ones registered below, and the papers' (read from their plugin modules on the first
#: lookup or listing).
METRICS: Registry[MetricSpec] = Registry("metric", plugins=_plugin_metrics)


def register(name: str, compute: Any, options: Any, *, help: str, start: Any = None) -> MetricSpec:
    """Register a metric (see the module docstring)."""
    spec = MetricSpec(name, compute, options, help, start)
    METRICS.register(name, spec, help=help)
    return spec


register("bleu", "connote.metrics.bleu:compute", "connote.metrics.bleu:BleuOptions",
         help="BLEU-1..4, corpus level, closest reference length (pycocoevalcap)")
register("meteor", "connote.metrics.meteor.metric:compute", "connote.metrics.meteor.metric:MeteorOptions",
         start="connote.metrics.meteor.metric:start",
         help="METEOR 1.5 without Java (default: -l en -norm, task rank, as pycocoevalcap)")
register("rouge_l", "connote.metrics.rouge:compute", "connote.metrics.rouge:RougeOptions",
         help="ROUGE-L F-measure, beta 1.2 (pycocoevalcap)")
register("cider", "connote.metrics.cider:compute", "connote.metrics.cider:CiderOptions",
         help="CIDEr-D (sigma 6, clipping, length penalty, x10; pycocoevalcap 'CIDEr')")
register("bertscore", "connote.metrics.bertscore:compute", "connote.metrics.bertscore:BERTScoreOptions",
         help="BERTScore P/R/F1 with any Hugging Face encoder (max over references)")

DEFAULT_METRICS = ("bleu", "meteor", "rouge_l", "cider")


def all_option_names() -> set[str]:
    """Every option any registered metric declares (imports every metric's module)."""
    from connote.metrics.options import option_names

    return {o for n in METRICS.names() for o in option_names(METRICS.get(n).options_class())}
