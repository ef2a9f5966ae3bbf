"""The reference-free story metrics (GROOViST, RoViST-VG, RoViST-C, RoViST-NR) that ``vist correlate`` adds to
precomputed scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from connote.core.errors import InputError


def vg_encoder_from_spec(spec: str) -> Any:
    """RoViST-VG's encoder: ``rovist-vg:CHECKPOINT?glove=FILE[&vit=ID]`` (its released model,
    :class:`~connote.vist.rovist_vg.RovistVgEncoder`) or any ``--encoder`` spec (a stand-in)."""
    if not spec.startswith("rovist-vg:"):
        from connote.models.embedders import embedder_from_spec

        return embedder_from_spec(spec)
    from urllib.parse import parse_qsl

    from connote.vist.rovist_vg import RovistVgEncoder

    path, _, query = spec[len("rovist-vg:"):].partition("?")
    options = dict(parse_qsl(query))
    unknown = sorted(set(options) - {"glove", "vit", "device"})
    if unknown or "glove" not in options or not Path(path).is_file():
        extra = f" (unknown: {', '.join(unknown)})" if unknown else ""
        raise InputError(f"--vg-encoder {spec!r}: expected rovist-vg:CHECKPOINT?glove=FILE[&vit=ID][&device=D] "
                         f"with an existing checkpoint file{extra}")
    return RovistVgEncoder(path, **options)


def story_metric_scores(stories: Mapping[str, tuple[Sequence[str], str]], names: str, *, images: Path | None,
                        encoder: str, coherence_model: str | None, concreteness: Path | None, theta: float,
                        alignment: str, prefix: str, progress: bool, coherence_albert: str = "albert-large-v1",
                        vg_encoder: str | None = None, idf: Path | None = None,
                        ) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """GROOViST / RoViST-VG / RoViST-C / RoViST-NR per story (see :mod:`connote.vist.storyeval`) and their
    signatures."""
    from connote.core.progress import progress_bar
    from connote.vist.rovist_vg import read_idf
    from connote.vist.storyeval import STORY_METRICS, SopPairScorer, StoryScorer, read_concreteness

    wanted = [m.strip() for m in names.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in STORY_METRICS]
    if unknown:
        raise InputError(f"--story-metrics: unknown {', '.join(unknown)}; valid: {', '.join(STORY_METRICS)}")
    for name in ("groovist", "rovist_vg"):
        if name in wanted and images is None:
            raise InputError(f"--story-metrics {name} needs --images DIR (the photos of the rated stories)")
    own_vg = "rovist_vg" in wanted and vg_encoder is not None
    need_encoder = ("groovist" in wanted or ("rovist_c" in wanted and not coherence_model)
                    or ("rovist_vg" in wanted and not own_vg))
    enc = vg = None
    if need_encoder:
        from connote.models.embedders import embedder_from_spec

        enc = embedder_from_spec(encoder)
    if own_vg:
        vg = vg_encoder_from_spec(str(vg_encoder))
    photo = None
    if images is not None:
        from connote.media.images import load_image
        from connote.media.photos import find_image

        cache: dict[str, Any] = {}

        def photo(pid: str) -> Any:
            if pid not in cache:
                cache[pid] = load_image(find_image(images, pid))
            return cache[pid]

    pair = None
    if coherence_model and "rovist_c" in wanted:
        from connote.vist.storyeval import RovistCheckpointScorer

        pair = (RovistCheckpointScorer(coherence_model, albert=coherence_albert) if Path(coherence_model).is_file()
                else SopPairScorer(coherence_model))
    ratings = read_concreteness(concreteness) if concreteness else None
    scorer = StoryScorer(wanted, encoder=enc, photo=photo, pair_scorer=pair, concreteness=ratings,
                         concreteness_source=concreteness.name if concreteness else None, vg_encoder=vg,
                         idf=read_idf(idf) if idf else None, idf_source=idf.name if idf else None, theta=theta,
                         alignment=alignment, prefix=prefix)
    with progress_bar(len(stories), "story metrics", enabled=progress) as bar:
        res = scorer.score(stories, bar=bar)
    for sid, notes in sorted(res.notes.items())[:5]:
        typer.echo(f"note: story {sid}: {'; '.join(notes)}", err=True)
    if len(res.notes) > 5:
        typer.echo(f"note: {len(res.notes) - 5} more stories have notes", err=True)
    return res.per_story, res.signatures
