"""The reference-free story metrics (GROOViST, RoViST-C, RoViST-NR) that ``vist correlate`` adds to
precomputed scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from connote.core.errors import InputError


def story_metric_scores(stories: Mapping[str, tuple[Sequence[str], str]], names: str, *, images: Path | None,
                        encoder: str, coherence_model: str | None, concreteness: Path | None, theta: float,
                        alignment: str, prefix: str, progress: bool, coherence_albert: str = "albert-large-v1",
                        ) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """GROOViST / RoViST-C / RoViST-NR per story (see :mod:`connote.vist.storyeval`) and their signatures."""
    from connote.core.progress import progress_bar
    from connote.vist.storyeval import STORY_METRICS, SopPairScorer, StoryScorer, read_concreteness

    wanted = [m.strip() for m in names.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in STORY_METRICS]
    if unknown:
        raise InputError(f"--story-metrics: unknown {', '.join(unknown)}; valid: {', '.join(STORY_METRICS)}")
    if "groovist" in wanted and images is None:
        raise InputError("--story-metrics groovist needs --images DIR (the photos of the rated stories)")
    need_encoder = "groovist" in wanted or ("rovist_c" in wanted and not coherence_model)
    enc = None
    if need_encoder:
        from connote.models.embedders import embedder_from_spec

        enc = embedder_from_spec(encoder)
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
                         concreteness_source=concreteness.name if concreteness else None, theta=theta,
                         alignment=alignment, prefix=prefix)
    with progress_bar(len(stories), "story metrics", enabled=progress) as bar:
        res = scorer.score(stories, bar=bar)
    for sid, notes in sorted(res.notes.items())[:5]:
        typer.echo(f"note: story {sid}: {'; '.join(notes)}", err=True)
    if len(res.notes) > 5:
        typer.echo(f"note: {len(res.notes) - 5} more stories have notes", err=True)
    return res.per_story, res.signatures
