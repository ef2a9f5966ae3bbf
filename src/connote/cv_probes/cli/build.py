"""``connote cv-probes build``: build a CV-Probes probe set for any verbs from a local image pool."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.commands.config import config_option


def build_cmd(
    verbs: Annotated[Optional[Path], typer.Argument(help="Verb list (CSV or JSONL: verb, frame, roles, templates, "
                                                    "sg_images, pg_captions). Default: the packaged sample.",
                                                    show_default=False)] = None,
    pool: Annotated[Optional[Path], typer.Option("--pool", help="Local image pool: a folder, or a CSV/parquet with "
                                                 "a path/image/url column. Default with the sample: its pool.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumes if it exists).")] = Path("runs/probes"),
    rewriter: Annotated[str, typer.Option(help="none (keep the templates) | hf-chat:ID | openai:MODEL[?base_url=...] | "
                                          "any generate backend.")] = "none",
    prompt: Annotated[Optional[Path], typer.Option("--prompt", help="Rewording prompt file with {caption} and "
                                                   "{verb} (default: connote's, stating the paper's rules).")] = None,
    on_violation: Annotated[str, typer.Option("--on-violation", help="template: keep the template when the reply "
                                              "breaks a rule | next: try the reply's next line first.")] = "template",
    scorer: Annotated[str, typer.Option(help="Grammaticality: none | lm-perplexity:CAUSAL_LM | cola:CLASSIFIER "
                                        "| gruen:GRUEN_COLA_DIR (the paper's).")] = "none",
    candidates: Annotated[int, typer.Option(help="SG candidate captions per verb (the paper: 3).")] = 3,
    encoder: Annotated[str, typer.Option(help="Image-text encoder for retrieval: embedded (offline) | "
                                         "hf-clip:ID.")] = "embedded",
    top_k: Annotated[int, typer.Option("--top-k", help="PG image candidates kept per PG caption.")] = 3,
    duplicate_threshold: Annotated[float, typer.Option("--duplicate-threshold", help="Cosine at or above which "
                                                       "an image is a near-duplicate.")] = 0.95,
    allow_network: Annotated[bool, typer.Option("--allow-network", help="Fetch pool images given as URLs.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Items per stored batch.")] = 8,
    validated: Annotated[Optional[Path], typer.Option("--validated", help="The validation study's import "
                                                      "(`connote collect import`): also write final.csv.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print summary.json instead of the text.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bars on stderr.")] = True,
    config: Annotated[Optional[Path], config_option(run_folder="out")] = None,
) -> int:
    """Build a probe set: templated SG captions, reworded and scored, PG images retrieved from a local pool."""
    from connote.commands.checks import at_least
    from connote.core.errors import InputError
    from connote.cv_probes.build_task import build, render_summary, settings_from_options
    from connote.runs.store import hold_run_folder

    at_least("--batch-size", batch_size, 1)
    settings = settings_from_options(prompt, rewriter=rewriter, on_violation=on_violation, scorer=scorer,
                                     candidates=candidates, encoder=encoder, top_k=top_k,
                                     duplicate_threshold=duplicate_threshold, allow_network=allow_network,
                                     batch_size=batch_size)
    if verbs is not None and pool is None:
        raise InputError("--pool is needed with a verb list (a folder of images or a CSV/parquet of paths)")
    with hold_run_folder(out):
        if verbs is None:
            from connote.cv_probes.build import write_sample_build

            verbs, sample_pool = write_sample_build(out / "sample")
            pool = pool or sample_pool
            print(f"no verb list: using the packaged sample written to {verbs}", file=sys.stderr)
        from connote.media.embedded import quiet_transformers

        quiet_transformers()
        summary = build(verbs, pool, out, settings, validated=validated, progress=progress,
                        make_study=validation_study)
    print(json.dumps(summary, indent=1, default=str) if json_out else render_summary(summary))
    return 0


def validation_study(out: Path, manifest: Path, rows: list[dict[str, Any]], log: Callable[[str], None]) -> str | None:
    """The validation study of the candidates (made once per candidates file; a study with answers is kept)."""
    from connote.core.errors import InputError
    from connote.cv_probes.studies import validation as probes_validation

    kinds = {r["image_kind"] for r in rows}
    if not {"SG", "PG"} <= kinds:
        log("recorded: no validation study: the candidates have no " + ("PG" if "SG" in kinds else "SG") + " image")
        return None
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]
    folder = out / f"validation-{digest}"
    if folder.exists() and any(folder.iterdir()):
        return str(folder)
    try:
        probes_validation.make(manifest, folder, captions="original")
    except InputError as exc:
        log(f"recorded: no validation study: {exc}")
        return None
    return str(folder)


