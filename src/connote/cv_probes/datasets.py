"""CV-Probes' entry in the datasets catalogue (``connote datasets``) and the check of its manifest.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from connote.datasets.catalog import Dataset, ExpectedFile, FormatResult, Link

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="cv-probes",
        title="Contextual verb probes with human votes",
        paper="Beňová, Gregor, Gatt 2024, CV-Probes (arXiv 2409.01389); seed 001",
        used_for="image-text matching probes and MM-SHAP (connote cv-probes run, connote cv-probes explain)",
        links=(
            Link("release announced in the paper", "https://github.com/ivana-13/CV-Probes"),
            Link("paper", "https://arxiv.org/abs/2409.01389"),
        ),
        licence=("see source: the release could not be read, so no licence is known. Images come from imSitu "
                 "(SG images) and LAION (retrieved PG images), each under its own terms."),
        release=("NOT FOUND: the paper says 'The code and dataset will be available "
                 "https://github.com/ivana-13/CV-Probes'; no copy of that repository was available to read, so "
                 "its file names and columns are unknown. `connote datasets convert cv-probes` reads the shape "
                 "the paper describes (one SG and PG caption per image, simplified captions, 3 human votes per "
                 "image-caption pair) in either a long or a wide table; see its --help."),
        files=(
            ExpectedFile("probes.csv", "the probe manifest in connote's format (connote datasets convert cv-probes)",
                         "probe-manifest", "connote cv-probes run --data; connote cv-probes explain --data",
                         counts_source="the paper, Table 2: 117 socially grounded and 171 physically grounded "
                         "image-caption pairs (not checked: the release's row layout is unknown)"),
            ExpectedFile("images/", "the images the manifest names (relative paths resolve against its folder)",
                         "image-folder", "connote cv-probes run (through the manifest)"),
        ),
        convert="connote datasets convert cv-probes SRC --out probes.csv",
        notes=("27 SG verbs from imSitu, 5 images per verb (paper, Data selection).",
               "Human votes: each image-caption pair judged by 3 Prolific annotators (paper, Human validation); "
               "connote's human_votes column holds them as '1;1;0'."),
    ),
)


# --------------------------------------------------------------------------- format checks


def _probe_manifest(path: Path) -> FormatResult:
    from connote.cv_probes.manifest import read_probe_manifest
    from connote.media.images import is_url

    items = read_probe_manifest(path)
    problems = [it.error for it in items if it.error]
    missing = sorted({it.image for it in items if it.image and not is_url(it.image) and not Path(it.image).is_file()})
    with_votes = sum(1 for it in items if it.human_votes)
    return FormatResult({"items": len(items), "items with human votes": with_votes}, problems, missing)


FORMATS: dict[str, tuple[str, Callable[[Path], FormatResult]]] = {
    "probe-manifest": ("CV-Probes manifest, CSV or JSONL (connote.cv_probes.manifest.read_probe_manifest)",
                       _probe_manifest),
}
