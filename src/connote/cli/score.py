"""``connote score``: COCO caption metrics (and BERTScore) without Java, with signatures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from connote.commands.config import config_option
from connote.core.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``score`` command to the connote CLI."""

    @app.command("score")
    def score(
        hyp: Optional[Path] = typer.Option(None, "--hyp", help='Predictions JSON: {"id": "text"} or {"id": ["text"]}.'),
        ref: Optional[Path] = typer.Option(None, "--ref", help='References JSON: {"id": ["ref1", "ref2", ...]}.'),
        metrics: str = typer.Option("bleu,meteor,rouge_l,cider", "--metrics",
                                    help="Comma-separated: bleu, meteor, rouge_l, cider, bertscore."),
        tokenize: str = typer.Option("none", "--tokenize",
                                     help="none (text already tokenized) or ptb (pycocoevalcap's PTB step)."),
        per_item: bool = typer.Option(False, "--per-item", help="Also report every item's scores."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        df_corpus: Optional[Path] = typer.Option(None, "--df-corpus",
                                                 help="CIDEr document frequencies from this references JSON "
                                                      "(or a saved frequency file) instead of the evaluated set."),
        cider_sigma: float = typer.Option(6.0, "--cider-sigma", help="CIDEr-D length-penalty sigma."),
        meteor_task: str = typer.Option("rank", "--meteor-task",
                                        help="METEOR parameters: rank (=default, pycocoevalcap), hter (VIST), "
                                             "adq, util, li, tune."),
        meteor_language: str = typer.Option("en", "--meteor-language", help="METEOR language."),
        meteor_preset: Optional[str] = typer.Option(None, "--meteor-preset",
                                                    help="pycocoevalcap (task rank, -norm) or vist (task hter, "
                                                         "no -norm); overrides --meteor-task/--meteor-no-norm."),
        meteor_no_norm: bool = typer.Option(False, "--meteor-no-norm", help="Skip METEOR's -norm normalization."),
        meteor_modules: Optional[str] = typer.Option(None, "--meteor-modules",
                                                     help="e.g. exact,stem,synonym,paraphrase (default: all)."),
        meteor_data: Optional[Path] = typer.Option(None, "--meteor-data",
                                                   help="Directory with meteor-1.5.jar and data/paraphrase-en.gz "
                                                        "(default: the installed pycocoevalcap)."),
        paraphrase_file: Optional[Path] = typer.Option(None, "--paraphrase-file", help="METEOR paraphrase table."),
        synonyms: str = typer.Option("auto", "--synonyms",
                                     help="METEOR synonyms: auto (the tables inside meteor-1.5.jar - the jar's numbers "
                                          "exactly - and WordNet 3.0 files only where the jar is absent), jar, or "
                                          "wordnet (WordNet 3.0 files, e.g. Debian's; see --wordnet)."),
        wordnet: Optional[Path] = typer.Option(None, "--wordnet", help="WordNet 3.0 dict directory (--synonyms "
                                                                       "wordnet)."),
        jobs: int = typer.Option(0, "--jobs", help="Processes for METEOR alignment (0 = all usable cores; "
                                                   "small inputs always use one)."),
        bertscore_model: Optional[str] = typer.Option(None, "--bertscore-model",
                                                      help="Local model directory, hub id, or 'embedded' (the "
                                                           "shipped all-MiniLM-L6-v2) for BERTScore."),
        bertscore_layer: Optional[int] = typer.Option(None, "--bertscore-layer", help="BERTScore layer."),
        idf: bool = typer.Option(False, "--idf", help="BERTScore IDF weighting from the references."),
        baseline_file: Optional[Path] = typer.Option(None, "--baseline-file", help="BERTScore rescaling baseline."),
        clear_cache: bool = typer.Option(False, "--clear-cache",
                                         help="Delete connote's metric caches (METEOR paraphrase index, WordNet "
                                              "tables; rebuilt on next use) and say what was freed; with no --hyp/"
                                              "--ref, only that."),
        config: Annotated[Optional[Path], config_option()] = None,
    ) -> None:
        """Score predictions against references: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (pycocoevalcap's numbers)."""
        if clear_cache:
            from connote.metrics.cache import clear_caches

            removed, freed = clear_caches()
            for path in removed:
                typer.echo(f"removed {path}", err=True)
            typer.echo(f"cleared {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'}, "
                       f"{freed / 1e6:.1f} MB", err=True)
            if hyp is None and ref is None:
                return
        if hyp is None or ref is None:
            raise InputError("--hyp and --ref are both needed (or --clear-cache alone)")
        from connote.core.registry import UnknownNameError
        from connote.metrics._core import compute_scores, metric_options
        from connote.metrics._inputs import read_json_mapping
        from connote.metrics.options import OptionError, option_names
        from connote.metrics.registry import METRICS

        names = [m.strip() for m in metrics.split(",") if m.strip()]
        if not names:
            raise InputError("--metrics names no metric; valid metrics: " + ", ".join(METRICS.names()))
        if tokenize not in ("none", "ptb"):
            raise InputError(f"--tokenize must be none or ptb, not {tokenize!r}")
        if df_corpus is not None and not df_corpus.is_file():
            raise InputError("document-frequency corpus not found", path=df_corpus)
        for flag, path in (("--paraphrase-file", paraphrase_file), ("--baseline-file", baseline_file)):
            if path is not None and not path.is_file():
                raise InputError(f"{flag}: file not found", path=path)
        settings = {
            "df_corpus": str(df_corpus) if df_corpus else None, "cider_sigma": cider_sigma,
            "meteor_task": meteor_task, "meteor_language": meteor_language, "meteor_preset": meteor_preset,
            "meteor_norm": not meteor_no_norm,
            "meteor_modules": meteor_modules, "meteor_data": str(meteor_data) if meteor_data else None,
            "paraphrase_file": str(paraphrase_file) if paraphrase_file else None,
            "synonym_source": synonyms, "wordnet": str(wordnet) if wordnet else None, "n_jobs": jobs,
            "bertscore_model": bertscore_model, "bertscore_layer": bertscore_layer, "idf": idf,
            "baseline_file": str(baseline_file) if baseline_file else None,
        }
        try:
            # only the chosen metrics' options (a flag of a metric not computed is unused), checked before any
            # file is read or model loaded
            specs = {n: METRICS.get(n).options_class() for n in names}
            declared = {o for cls in specs.values() for o in option_names(cls)}
            settings = {k: v for k, v in settings.items() if k in declared}
            metric_options(names, settings)
        except UnknownNameError as exc:
            raise InputError(str(exc)) from None
        except OptionError as exc:  # name the command-line flag beside the option
            flags = {"synonym_source": "--synonyms", "n_jobs": "--jobs", "meteor_norm": "--meteor-no-norm"}
            msg = str(exc)
            for name in declared:
                flag = flags.get(name, "--" + name.replace("_", "-"))
                msg = msg.replace(f"option {name}=", f"{flag} (option {name}): ")
            raise InputError(msg) from None
        hyps = read_json_mapping(hyp, "hypotheses")
        refs = read_json_mapping(ref, "references")
        try:
            result = compute_scores(hyps, refs, names, tokenize=None if tokenize == "none" else tokenize,
                                    per_item=per_item, _hyp_source=str(hyp), _ref_source=str(ref), **settings)
        except UnknownNameError as exc:
            raise InputError(str(exc)) from None
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if as_json:
            json.dump(result.to_dict(), sys.stdout, ensure_ascii=False)
            sys.stdout.write("\n")
            return
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
