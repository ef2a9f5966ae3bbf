"""``connote score``: COCO caption metrics (and BERTScore) without Java, with signatures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.commands.config import config_option
from connote.core.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``score`` command to the connote CLI."""
    import os

    # numpy's OpenBLAS starts a pool of threads when numpy is first imported (~0.06 s of start-up on 2 cores),
    # and the caption metrics do no matrix products: one BLAS thread, unless the user chose a number
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from connote.cli.metric_flags import with_metric_flags
    from connote.metrics.registry import METRICS

    @app.command("score")
    @with_metric_flags
    def score(
        hyp: Optional[Path] = typer.Option(None, "--hyp", help='Predictions JSON: {"id": "text"} or {"id": ["text"]}.'),
        ref: Optional[Path] = typer.Option(None, "--refs", help='References JSON: {"id": ["ref1", "ref2", ...]}.'),
        metrics: str = typer.Option("bleu,meteor,rouge_l,cider", "--metrics",
                                    help="Comma-separated (in --config also a list): " + ", ".join(METRICS.names())
                                    + "."),
        tokenize: str = typer.Option("none", "--tokenize",
                                     help="none (text already tokenized) or ptb (pycocoevalcap's PTB step)."),
        per_item: bool = typer.Option(False, "--per-item", help="Also report every item's scores."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        clear_cache: bool = typer.Option(False, "--clear-cache",
                                         help="Delete connote's metric caches (METEOR paraphrase index, WordNet "
                                              "tables; rebuilt on next use) and say what was freed; with no --hyp/"
                                              "--refs, only that."),
        config: Annotated[Optional[Path], _config_option()] = None,
        metric_settings: Optional[dict] = None,
    ) -> None:
        """Score predictions against references: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (pycocoevalcap's numbers)."""
        _skip_exit_collection()
        if clear_cache:
            _clear_caches()
            if hyp is None and ref is None:
                return
        if hyp is None or ref is None:
            raise InputError("--hyp and --refs are both needed (or --clear-cache alone)")
        result = score_files(hyp, ref, metrics, tokenize=tokenize, per_item=per_item,
                             settings=dict(metric_settings or {}))
        if as_json:
            json.dump(result.to_dict(), sys.stdout, ensure_ascii=False)
            sys.stdout.write("\n")
            return
        print_scores(result, per_item=per_item)


def _config_option() -> Any:
    """``--config``: the file's ``metrics`` may be a list of metric names, as ``--metrics`` is a comma-separated one."""
    from connote.commands.config import CommaList
    from connote.metrics.registry import METRICS

    return config_option(lists={"metrics": CommaList("metric", METRICS.names)})


def _clear_caches() -> None:
    """``--clear-cache``: delete connote's metric caches, saying what was freed (stderr)."""
    from connote.metrics.cache import clear_caches

    removed, freed = clear_caches()
    for path in removed:
        typer.echo(f"removed {path}", err=True)
    typer.echo(f"cleared {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'}, "
               f"{freed / 1e6:.1f} MB", err=True)


def checked_settings(names: list[str], tokenize: str, settings: dict) -> dict:
    """The metric options given (``--cider-sigma``, ...) checked before any file is read or model loaded, also
    those of a metric not computed; returns the options of the chosen metrics. Exit 2 naming the flag."""
    from connote.cli.metric_flags import flag_of, metric_flags
    from connote.core.registry import UnknownNameError
    from connote.metrics._core import metric_options
    from connote.metrics.options import OptionError, option_names
    from connote.metrics.registry import METRICS

    if not names:
        raise InputError("--metrics names no metric; valid metrics: " + ", ".join(METRICS.names()))
    if tokenize not in ("none", "ptb"):
        raise InputError(f"--tokenize must be none or ptb, not {tokenize!r}")
    flags = metric_flags()
    for f in flags:  # files the options name, checked before anything is read
        if f.meta.get("path") == "file" and f.name in settings and not Path(settings[f.name]).is_file():
            raise InputError(f"{f.flag}: file not found", path=settings[f.name])
    try:
        # every option given is checked before any file is read or model loaded, also one of a metric not
        # computed (unused then: only the chosen metrics' options go on)
        specs = {n: METRICS.get(n).options_class() for n in names}
        declared = {o for cls in specs.values() for o in option_names(cls)}
        metric_options(names, settings)
        return {k: v for k, v in settings.items() if k in declared}
    except UnknownNameError as exc:
        raise InputError(str(exc)) from None
    except OptionError as exc:  # name the command-line flag beside the option
        msg = str(exc)
        for name in {*declared, *settings}:
            msg = msg.replace(f"option {name}=", f"{flag_of(name, flags)} (option {name}): ")
        raise InputError(msg) from None


def score_files(hyp: Path, ref: Path, metrics: str, *, tokenize: str, per_item: bool, settings: dict) -> Any:
    """The metrics of ``metrics`` (comma-separated) of the predictions in ``hyp`` against the references in
    ``ref``, with the metric options ``settings`` (checked first): a :class:`connote.metrics.ScoreResult`."""
    from connote.core.registry import UnknownNameError
    from connote.metrics._core import compute_scores
    from connote.metrics._inputs import read_json_mapping

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    settings = checked_settings(names, tokenize, settings)
    hyps = read_json_mapping(hyp, "hypotheses")
    refs = read_json_mapping(ref, "references")
    try:
        return compute_scores(hyps, refs, names, tokenize=None if tokenize == "none" else tokenize,
                              per_item=per_item, _hyp_source=str(hyp), _ref_source=str(ref), **settings)
    except (UnknownNameError, ValueError) as exc:
        raise InputError(str(exc)) from None


def print_scores(result: Any, *, per_item: bool) -> None:
    """One line per score, the signatures, every item's scores with ``--per-item``; warnings on stderr."""
    width = max(len(k) for k in result.scores)
    for k, v in result.scores.items():
        typer.echo(f"{k:<{width}}  {v:.6f}")
    for name, sig in result.signatures.items():
        typer.echo(f"# {name}: {sig}")
    if per_item and result.per_item is not None:
        for i, vals in result.per_item.items():
            typer.echo(f"{i}\t" + "\t".join(f"{k}={v:.6f}" for k, v in vals.items()))
    for w in result.warnings:
        typer.echo(f"warning: {w}", err=True)


_EXIT_HOOK = False


def _skip_exit_collection() -> None:
    """At interpreter exit, spare the cyclic collector's last walk over every object the metrics made (their
    n-gram tables, METEOR's tables and caches: ~0.07 s of a 1 s run); the objects are freed as the process
    ends. Registered once; nothing changes while the process runs, so in-process callers are unaffected."""
    global _EXIT_HOOK
    if not _EXIT_HOOK:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _EXIT_HOOK = True
