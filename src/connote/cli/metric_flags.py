"""``connote score``'s metric flags, generated from the registered metrics' typed option classes.

Each field of a metric's options dataclass (:func:`connote.metrics.options.opt`) becomes one flag: its
spelling (``--`` + the name with dashes, or the field's ``flag``), its help, default and range come from
the field, and its value goes to the metric's checker as the text typed, so a bad value gets the checker's
message (the option, the value, what was expected; exit status 2). A metric registered in
:data:`connote.metrics.registry.METRICS` therefore has its options on ``connote score`` with no edit here.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Optional

import typer


class MetricFlag(NamedTuple):
    """One metric option as a command-line flag."""

    name: str  # the option (a keyword of compute_scores)
    metric: str  # the first registered metric declaring it
    flag: str  # its spelling on the command line
    type: Any  # the declared type
    default: Any
    help: str
    meta: typing.Mapping[str, Any]

    @property
    def is_bool(self) -> bool:
        return self.type is bool

    @property
    def value_on(self) -> Any:
        """The option's value when a bool flag is given (the opposite of its default)."""
        return not self.default


def _text_type(tp: Any) -> bool:
    """Whether values of ``tp`` can be typed on a command line (numbers, text, choices, lists of them)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return all(a is type(None) or _text_type(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return _text_type(typing.get_args(tp)[0])
    return origin is Literal or tp in (int, float, str, bool)


def metric_flags() -> list[MetricFlag]:
    """Every registered metric's command-line options, in registration order (imports the option classes)."""
    from connote.metrics.registry import METRICS

    out: dict[str, MetricFlag] = {}
    for metric in METRICS.names():
        cls = METRICS.get(metric).options_class()
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            meta = f.metadata
            on_cli = meta.get("cli")
            if f.name in out or on_cli is False or (on_cli is None and not _text_type(hints[f.name])):
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            flag = meta.get("flag") or "--" + f.name.replace("_", "-")
            out[f.name] = MetricFlag(f.name, metric, flag, hints[f.name], default, meta.get("help", ""), meta)
    return list(out.values())


def _metavar(f: MetricFlag) -> str:
    tp = f.type
    members = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    members = [m for m in members if m is not type(None)]
    m = members[0] if len(members) == 1 else str
    if f.meta.get("path"):
        return "<path>"
    if typing.get_origin(m) is Literal:
        return "[" + "|".join(str(a) for a in typing.get_args(m)) + "]"
    if typing.get_origin(m) in (tuple, list):
        return "<a,b,...>"
    return {int: "<int>", float: "<float>"}.get(m, "<str>")


def _help(f: MetricFlag) -> str:
    text = f"{f.metric}: {f.help}" if f.help else f.metric
    bounds = [f"{s} {f.meta[k]:g}" for k, s in (("gt", ">"), ("ge", ">="), ("le", "<=")) if f.meta.get(k) is not None]
    if bounds:
        text += f" ({' and '.join(bounds)})"
    if f.is_bool:
        return text
    if f.default is not None:
        shown = ",".join(map(str, f.default)) if isinstance(f.default, (tuple, list)) else f.default
        text += f" [default: {shown}]"
    return text


def with_metric_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a command taking ``metric_settings``) with one keyword parameter per metric flag.

    The returned function is what typer reads; it calls ``func`` with ``metric_settings``: the options
    given on the command line (``{name: text or bool}``), unset ones left out (the declared default holds).
    """
    flags = metric_flags()
    hints = typing.get_type_hints(func, include_extras=True)
    sig = inspect.signature(func)
    base = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()
            if p.name != "metric_settings"]
    taken = {p.name for p in base}
    added = []
    for f in flags:
        if f.name in taken:
            raise ValueError(f"metric option {f.name!r} clashes with a parameter of {func.__name__}")
        if f.is_bool:
            annotation, default = bool, typer.Option(False, f.flag, help=_help(f), rich_help_panel="Metric options")
        else:
            annotation = Optional[str]
            default = typer.Option(None, f.flag, help=_help(f), metavar=_metavar(f), show_default=False,
                                   rich_help_panel="Metric options")
        added.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                       annotation=annotation))

    def command(**kwargs: Any) -> Any:
        settings = {}
        for f in flags:
            value = kwargs.pop(f.name)
            if f.is_bool:
                if value:
                    settings[f.name] = f.value_on
            elif value is not None:
                settings[f.name] = value
        return func(**kwargs, metric_settings=settings)

    command.__name__, command.__doc__, command.__module__ = func.__name__, func.__doc__, func.__module__
    params = [p for p in base if p.kind is not p.KEYWORD_ONLY] + [p for p in base if p.kind is p.KEYWORD_ONLY]
    # keyword-only after the others; the generated ones before a trailing --config
    config = [p for p in params if p.name == "config"]
    params = [p for p in params if p.name != "config"]
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params] + added + \
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in config]
    command.__signature__ = sig.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def flag_of(name: str, flags: list[MetricFlag]) -> str:
    """The command-line spelling of option ``name``."""
    return next((f.flag for f in flags if f.name == name), "--" + name.replace("_", "-"))
