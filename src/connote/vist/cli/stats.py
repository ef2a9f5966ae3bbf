"""``connote vist stats``: the paper's Table 2 (per-tier statistics) and Table 3 (NPMI top words)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connote.commands.config import config_option
from connote.commands.output import echo_columns as _echo_columns
from connote.commands.output import echo_json as _echo_json
from connote.vist.cli import vist_app

# --------------------------------------------------------------------------- vist stats


def _tier_texts(path: Path) -> tuple[str, list[str]]:
    from connote.vist.challenge import parse_submission
    from connote.vist.data import load_json, read_official

    obj, _ = load_json(path)
    if isinstance(obj, dict) and "output_stories" in obj:
        name = path.name.removesuffix(".json")
        return name, [e.text for e in parse_submission(obj, path).entries if e.text.strip()]
    vf = read_official(path)
    return vf.tier.upper(), vf.texts()


@vist_app.command("stats")
def stats_cmd(
    files: Annotated[list[Path], typer.Argument(help="Official VIST files (one per tier) or challenge files.")],
    lm: Annotated[str | None, typer.Option("--lm", help="Causal LM (hub id or local dir) for perplexity.")] = None,
    lexicon: Annotated[Path | None, typer.Option(help="Concreteness lexicon CSV/TSV (word, rating); default: the "
                                                 "suffix/list proxy (see the legend under the table).")] = None,
    threshold: Annotated[float, typer.Option(help="Lexicon rating below which a noun is abstract.")] = 3.0,
    parse: Annotated[bool, typer.Option("--parse/--no-parse",
                                        help="Parse with spaCy (abstract, Frazier, Yngve).")] = True,
    spacy_model: Annotated[str | None, typer.Option("--spacy", help="spaCy pipeline name.")] = None,
    max_parse: Annotated[int, typer.Option(help="Parse at most this many texts per tier (seeded sample).")] = 2000,
    min_count: Annotated[int, typer.Option(help="Exclude words seen fewer times (vocabulary, NPMI).")] = 2,
    top: Annotated[int, typer.Option(help="Top words per tier for Table 3.")] = 10,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    config: Annotated[Path | None, config_option()] = None,
) -> None:
    """Table 2 (pairs, vocabulary, tokens, % abstract, Frazier, Yngve, perplexity) and Table 3 (NPMI)."""
    from connote.core.errors import InputError
    from connote.core.progress import progress_bar
    from connote.vist.stats import load_lexicon, load_spacy, npmi_top_words, table2_legend, tier_stats, tier_work

    seen: set[Path] = set()
    for f in files:
        if f.resolve() in seen:
            raise InputError("the same file is given twice", path=f)
        seen.add(f.resolve())
    read = [(f, *_tier_texts(f)) for f in files]
    names = [name for _, name, _ in read]
    tiers: dict[str, list[str]] = {}
    for f, name, texts in read:  # two files of one tier are labelled by their files (SIS:train), not SIS and SIS'
        label = f"{name}:{f.name.split('.')[0]}" if names.count(name) > 1 else name
        tiers[label if label not in tiers else f"{name}:{f.name}"] = texts
    nlp = load_spacy(spacy_model) if parse else None
    lex = load_lexicon(lexicon) if lexicon else None
    work = sum(tier_work(texts, parse=parse, lm=lm is not None, max_parse=max_parse) for texts in tiers.values())
    label = " + ".join(x for x, on in (("parsing", parse), ("perplexity", lm is not None)) if on)
    with progress_bar(work, f"{label} {len(tiers)} tier(s)", enabled=progress and work > 0) as bar:
        rows = [tier_stats(name, texts, nlp=nlp, lm=lm, lexicon=lex, lexicon_name=lexicon.name if lexicon else "",
                           threshold=threshold, min_count=min_count, max_parse=max_parse, seed=seed,
                           bar=bar).to_dict()
                for name, texts in tiers.items()]
    table3 = npmi_top_words(tiers, k=top, min_count=min_count) if len(tiers) > 1 else {}
    if as_json:
        _echo_json({"table2": rows, "table3": {t: [[w, s] for w, s in ws] for t, ws in table3.items()}})
        return
    cols = ["tier", "pairs", "vocab", "avg_tokens", "pct_abstract", "frazier", "yngve", "perplexity"]
    _echo_columns(cols, [["-" if r[c] is None else (f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]))
                          for c in cols] for r in rows])
    import textwrap

    typer.echo("\n".join(textwrap.wrap(table2_legend(rows, min_count=min_count), 78)))
    if table3:
        typer.echo(f"Table 3, the top {top} words of each tier by normalized PMI:")
    for t, ws in table3.items():
        typer.echo(f"{t}: " + " ".join(w for w, _ in ws))
