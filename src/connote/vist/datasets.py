"""VIST's entry in the datasets catalogue (``connote datasets``) and the checks of its file formats.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from connote.core.errors import InputError
from connote.datasets.catalog import Dataset, ExpectedFile, FormatResult, Link

VIST_PAGE = "http://visionandlanguage.net/VIST/dataset.html"
VIST_CHALLENGE_REPO = "https://github.com/windx0303/VIST-Challenge-NAACL-2018"

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="vist",
        title="Visual Storytelling (VIST / SIND v.1)",
        paper="Huang et al. 2016, Visual Storytelling (NAACL); seed 000",
        used_for="story generation and scoring (connote vist generate, connote vist score)",
        links=(
            Link("dataset page (annotations, images)", VIST_PAGE),
            Link("SIS annotations", "http://visionandlanguage.net/VIST/json_files/story-in-sequence/"
                 "SIS-with-labels.tar.gz"),
            Link("DII annotations", "http://visionandlanguage.net/VIST/json_files/description-in-isolation/"
                 "DII-with-labels.tar.gz"),
            Link("challenge template and example submissions (NAACL 2018 challenge)", VIST_CHALLENGE_REPO),
        ),
        licence=("annotations and images: see source (the dataset page's terms were not in what could be "
                 "read); the paper says the albums are CC-licensed Flickr photos. Challenge repository "
                 "files (template, example submissions): GPL-3.0, as its LICENSE file states."),
        release=("Found: the annotation archives on the VIST page (SIS-with-labels.tar.gz, DII-with-labels.tar.gz; "
                 "they unpack to sis/ and dii/ with {train,val,test}.<tier>.json) and the challenge repository "
                 "(template in src/main/resources/, example submissions in example_submission_json/). The "
                 "photos are offered on the same page as archives per split; their sizes and file lists "
                 "were not verified here."),
        files=(
            ExpectedFile("sis/train.story-in-sequence.json", "stories in sequence, training split",
                         "vist-sis", "connote vist train --sis; connote vist stats; connote vist info"),
            ExpectedFile("sis/val.story-in-sequence.json", "stories in sequence, validation split",
                         "vist-sis", "connote vist stats; connote vist info"),
            ExpectedFile("sis/test.story-in-sequence.json", "stories in sequence, test split (the gold)",
                         "vist-sis", "connote vist score --refs; connote vist info", size="~17 MB",
                         counts_source="size: the challenge repository's README"),
            ExpectedFile("dii/train.description-in-isolation.json", "descriptions in isolation, training",
                         "vist-dii", "connote vist train-captioner --dii; connote vist stats"),
            ExpectedFile("dii/val.description-in-isolation.json", "descriptions in isolation, validation",
                         "vist-dii", "connote vist stats"),
            ExpectedFile("dii/test.description-in-isolation.json", "descriptions in isolation, test",
                         "vist-dii", "connote vist stats"),
            ExpectedFile("dis/description-in-sequence.json", "descriptions in sequence (the paper's DIS tier; not "
                         "in the public release: collected with connote collect make vist-descriptions-in-sequence)",
                         "vist-dis", "connote vist stats; connote vist info", required=False),
            ExpectedFile("vist-challenge-template.json", "the photo sequences a challenge submission must cover",
                         "vist-challenge", "connote vist validate --template; connote vist score --template",
                         size_bytes=435180,
                         sha256="3d8c8a8011c0fc4f6c7524965f8db24825d2548019aab898239039d0bc2c816d",
                         counts={"sequences": 1938, "albums": 971},
                         counts_source="measured on the challenge repository's file (../shared/data/vist)"),
            ExpectedFile("example-submission-file.test.json",
                         "2,019 real human test stories in the challenge format (an example submission)",
                         "vist-challenge", "connote vist score (as a submission or as gold); metric benchmarks",
                         required=False, size_bytes=1009956,
                         sha256="56e18b87bdb92774c1637195205f008cbf8b4933ecbd35a12fab066e5cdd292c",
                         counts={"sequences": 2019, "albums": 1011},
                         counts_source="measured on the challenge repository's file (../shared/data/vist)"),
            ExpectedFile("images/", "the photos, <photo id>.<ext> in any subfolder (train/, val/, test/)",
                         "image-folder", "connote vist features --images; connote vist demo", required=False,
                         counts_source="the paper: 81,743 unique photos in 20,211 sequences (not checked: "
                         "some photos were removed from Flickr, see the challenge README)"),
        ),
        notes=("The challenge template leaves out ~3% of the test sequences whose photos were removed from Flickr "
               "(challenge README).",
               "example-submission-file-extra.empty.test.json in the challenge repository is byte-identical to "
               "the template (same sha256)."),
    ),
)


# --------------------------------------------------------------------------- format checks


def _vist_official(tier: str) -> Callable[[Path], FormatResult]:
    def check(path: Path) -> FormatResult:
        from connote.vist.data import TIER_NAMES, read_official

        vf = read_official(path)
        if vf.tier != tier:
            raise InputError(f"expected a {TIER_NAMES[tier]} file, this is {TIER_NAMES[vf.tier]}", path=path)
        counts = {"images": len(vf.images), "albums": len(vf.albums)}
        if tier == "dii":
            counts["descriptions"] = sum(len(v) for v in vf.descriptions.values())
        else:
            counts["stories"] = len(vf.stories)
        return FormatResult(counts, [str(p) for p in vf.problems])
    return check


def _vist_challenge(path: Path) -> FormatResult:
    from connote.vist.challenge import read_submission

    sub = read_submission(path)
    return FormatResult({"sequences": len(sub.entries), "albums": len({e.album_id for e in sub.entries})},
                        [str(p) for p in sub.problems])


FORMATS: dict[str, tuple[str, Callable[[Path], FormatResult]]] = {
    "vist-sis": ("official VIST story-in-sequence JSON (connote.vist.data.read_official)", _vist_official("sis")),
    "vist-dii": ("official VIST description-in-isolation JSON (read_official)", _vist_official("dii")),
    "vist-dis": ("VIST description-in-sequence JSON, the SIS layout (read_official)", _vist_official("dis")),
    "vist-challenge": ("VIST challenge format {team_name, evaluation_info, output_stories} (read_submission)",
                       _vist_challenge),
}
