"""The datasets the three papers use: where to get them, their licences, the files connote expects.

Each :class:`Dataset` lists the files of a local copy in connote's layout (:class:`ExpectedFile`):
the relative path, whether a run needs it, which connote command reads it, the connote format it
must be in, and what can be verified about it. Sizes and checksums are recorded only where they were
computed from a real copy of the file (the VIST challenge files in ``../shared/data/vist``); where
none was at hand, counts that a copy can be checked against (rows, videos, images) are recorded
instead, each with where the number comes from. Nothing here is guessed: a licence that the source
does not state in what could be read is "see source", a release that could not be found says so.

:func:`check_copy` verifies a local copy (a folder, or one file of it): which files are present or
missing, their sizes and checksums where known, and their format, by parsing each with connote's own
readers (``connote.vist.data``, ``connote.cv_probes.manifest``, ``connote.vmc.data``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import ConnoteError, InputError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ExpectedFile:
    """One file (or folder) of a local copy, in connote's layout."""

    path: str
    """Relative to the copy's root; a folder ends with ``/``."""
    what: str
    format: str
    """Connote format name, a key of :data:`FORMATS`."""
    read_by: str
    """The connote command(s) that read it."""
    required: bool = True
    size: str | None = None
    """Approximate size as a source states it (not checked)."""
    size_bytes: int | None = None
    """Exact size, measured on a real copy (checked)."""
    sha256: str | None = None
    """Measured on a real copy (checked)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Record counts a copy must have (checked), e.g. ``{"sequences": 1938}``."""
    counts_source: str | None = None
    """Where ``counts`` (and ``size``) come from."""

    @property
    def is_folder(self) -> bool:
        return self.path.endswith("/")


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Dataset:
    """A dataset one of the papers uses, with where to get it and what connote expects of a copy."""

    name: str
    title: str
    paper: str
    used_for: str
    links: tuple[Link, ...]
    licence: str
    release: str
    """What was found of the public release (and what was not)."""
    files: tuple[ExpectedFile, ...]
    convert: str | None = None
    """The ``connote datasets convert`` command that produces connote's format, if any."""
    notes: tuple[str, ...] = ()

    def file(self, path: str) -> ExpectedFile:
        for f in self.files:
            if f.path == path or f.path.rstrip("/") == path.rstrip("/"):
                return f
        raise InputError(f"dataset {self.name!r} has no expected file {path!r}; expected: "
                         f"{', '.join(f.path for f in self.files)}")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


VIST_PAGE = "http://visionandlanguage.net/VIST/dataset.html"
VIST_CHALLENGE_REPO = "https://github.com/windx0303/VIST-Challenge-NAACL-2018"

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="vist",
        title="Visual Storytelling (VIST / SIND v.1)",
        paper="Huang et al. 2016, Visual Storytelling (NAACL); seed 000",
        used_for="story generation and scoring (connote vist, connote story)",
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
                         "vist-sis", "connote story train --sis; connote vist stats; connote vist info"),
            ExpectedFile("sis/val.story-in-sequence.json", "stories in sequence, validation split",
                         "vist-sis", "connote vist stats; connote vist info"),
            ExpectedFile("sis/test.story-in-sequence.json", "stories in sequence, test split (the gold)",
                         "vist-sis", "connote vist score --refs; connote vist info", size="~17 MB",
                         counts_source="size: the challenge repository's README"),
            ExpectedFile("dii/train.description-in-isolation.json", "descriptions in isolation, training",
                         "vist-dii", "connote story train-captioner --dii; connote vist stats"),
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
                         "image-folder", "connote story features --images; connote story demo", required=False,
                         counts_source="the paper: 81,743 unique photos in 20,211 sequences (not checked: "
                         "some photos were removed from Flickr, see the challenge README)"),
        ),
        notes=("The challenge template leaves out ~3% of the test sequences whose photos were removed from Flickr "
               "(challenge README).",
               "example-submission-file-extra.empty.test.json in the challenge repository is byte-identical to "
               "the template (same sha256)."),
    ),
    Dataset(
        name="cv-probes",
        title="Contextual verb probes with human votes",
        paper="Beňová, Gregor, Gatt 2024, CV-Probes (arXiv 2409.01389); seed 001",
        used_for="image-text matching probes and MM-SHAP (connote probe, connote explain)",
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
                         "probe-manifest", "connote probe --data; connote explain --data",
                         counts_source="the paper, Table 2: 117 socially grounded and 171 physically grounded "
                         "image-caption pairs (not checked: the release's row layout is unknown)"),
            ExpectedFile("images/", "the images the manifest names (relative paths resolve against its folder)",
                         "image-folder", "connote probe (through the manifest)"),
        ),
        convert="connote datasets convert cv-probes SRC --out probes.csv",
        notes=("27 SG verbs from imSitu, 5 images per verb (paper, Data selection).",
               "Human votes: each image-caption pair judged by 3 Prolific annotators (paper, Human validation); "
               "connote's human_votes column holds them as '1;1;0'."),
    ),
    Dataset(
        name="vmc",
        title="Video Metaphor Captioning dataset (VMCD)",
        paper="Kalarani, Bhattacharyya, Shekhar 2024 (arXiv 2406.04886); seed 003",
        used_for="metaphor captioning, scoring and GIT-LLaVA stage 2 (connote metaphor)",
        links=(
            Link("code release (GIT-LLaVA)", "https://github.com/abisekrk/video-metaphor-captioning"),
            Link("paper", "https://arxiv.org/abs/2406.04886"),
            Link("GIT-LLaVA weights", "https://huggingface.co/abisekrk/git-llava-13B"),
        ),
        licence=("see source: the code repository has no licence file for the data; its pyproject declares "
                 "Apache-2.0 for the code (inherited from LLaVA). The videos are YouTube advertisements (from "
                 "the Pitt Ads dataset and YouTube search) under their owners' terms."),
        release=("Partly found: the code repository says 'Download the checkpoints and data from the external "
                 "links shared' but the snapshot read holds no data file or link. Its notebooks show the "
                 "caption table the authors used (VMCD_v2.csv: unique_id, annotator_1, annotator_2, annotator_3; "
                 "705 rows, 2115 captions; videos stored as <unique_id>.mp4) and its scripts read LLaVA-style "
                 "train.json/val.json and test_questions.jsonl (question_id, video, text, true_answer). "
                 "`connote datasets convert vmc` reads any of these."),
        files=(
            ExpectedFile("captions.csv", "caption table: unique_id, annotator_1, annotator_2, annotator_3",
                         "vmc-captions", "connote metaphor score --refs; connote metaphor train (data.captions)",
                         counts={"videos": 705, "captions": 2115},
                         counts_source="the paper (705 videos, 2115 captions) and the repository's "
                         "get_data_stats notebook output"),
            ExpectedFile("splits/train.txt", "training video ids, one per line", "vmc-split",
                         "connote metaphor train (data.train_split)", counts={"ids": 400},
                         counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("splits/val.txt", "validation video ids", "vmc-split",
                         "connote metaphor train (data.val_split)", counts={"ids": 55},
                         counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("splits/test.txt", "test video ids", "vmc-split",
                         "connote metaphor caption (select the test videos); connote metaphor score",
                         counts={"ids": 250}, counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("videos/", "the videos, <unique_id>.mp4 (or .webm, .mkv, ...)", "video-folder",
                         "connote metaphor caption --videos; connote metaphor train (data.videos)",
                         counts={"videos": 705}, counts_source="the paper: 705 videos, mean 54.5 s "
                         "(duration: the repository's notebook)"),
        ),
        convert="connote datasets convert vmc SRC --out DIR",
        notes=("The unique_id values in the authors' table have the form of YouTube video ids; the converter "
               "writes youtube_urls.txt for those, so the videos can be fetched (check the ids yourself).",),
    ),
    Dataset(
        name="haivmet",
        title="Human-AI visual metaphors (DALL-E 2 images)",
        paper="Chakrabarty et al. 2023, I Spy a Metaphor (ACL, arXiv 2305.14724); used by seed 003 for stage 1",
        used_for="GIT-LLaVA stage 1 pretraining, the metaphor half (connote metaphor train, stage 1)",
        links=(
            Link("data (Zenodo record named in the repository's README)", "https://zenodo.org/record/8011133"),
            Link("repository", "https://github.com/tuhinjubcse/VisualMetaphors"),
            Link("paper", "https://arxiv.org/abs/2305.14724"),
        ),
        licence="see source (the Zenodo record's licence was not in what could be read).",
        release=("Found: the repository's README points to the Zenodo record; the archive's file list was not "
                 "read. The repository's visual-entailment script reads one folder of images per linguistic "
                 "metaphor (column Folder of VisualEntaiment/data/raw/entailmentsFinal.csv). 6,476 images for "
                 "1,540 linguistic metaphors (paper abstract). No converter: write connote's JSON list from the "
                 "release (the VMC paper uses each image's generation prompt as its caption)."),
        files=(
            ExpectedFile("haivmet.json", "JSON list of {\"image\", \"caption\", \"kind\": \"metaphor\"}, images "
                         "relative to images/", "image-captions",
                         "connote metaphor train, stage 1 (data.metaphor_images, data.image_dir)",
                         counts={"records": 6476},
                         counts_source="the VMC paper: all 6476 HAIVMet images with their prompts"),
            ExpectedFile("images/", "the DALL-E 2 images", "image-folder",
                         "connote metaphor train, stage 1", counts={"images": 6476},
                         counts_source="the HAIVMet paper: 6,476 images"),
        ),
    ),
    Dataset(
        name="coco-captions",
        title="MS COCO captions (the literal half of stage 1)",
        paper="Lin et al. 2014, Microsoft COCO; used by seed 003 for stage 1",
        used_for="GIT-LLaVA stage 1 pretraining, the literal half (connote metaphor train, stage 1)",
        links=(
            Link("download page", "https://cocodataset.org/#download"),
            Link("2014 annotations", "http://images.cocodataset.org/annotations/annotations_trainval2014.zip"),
            Link("2014 training images", "http://images.cocodataset.org/zips/train2014.zip"),
        ),
        licence=("see source (cocodataset.org terms of use); third-party mirrors list the annotations as "
                 "CC BY 4.0; each image is a Flickr photo under the licence in its 'license' field."),
        release=("Found (public, well known). The VMC paper samples 6,476 COCO image-caption pairs to match "
                 "HAIVMet and does not say which release; connote reads any COCO captions file (2014 or 2017), "
                 "and balances the two halves itself."),
        files=(
            ExpectedFile("annotations/captions_train2014.json",
                         "COCO captions: {images: [{id, file_name}], annotations: [{image_id, caption}]}",
                         "coco-captions", "connote metaphor train, stage 1 (data.literal_images)",
                         counts={"images": 82783}, counts_source="COCO 2014 train split: 82,783 images"),
            ExpectedFile("train2014/", "the 2014 training images", "image-folder",
                         "connote metaphor train, stage 1 (data.literal_image_dir)", counts={"images": 82783},
                         counts_source="COCO 2014 train split: 82,783 images"),
        ),
    ),
)

# The probe suites (connote suite run NAME): the same names as their tasks and report kinds.
#: (file, bytes, sha256, items, MTurk-valid items), measured on Heidelberg-NLP/VALSE data/ at commit
#: 2152d90d4aecd11f7f74cf03420abcb63efff9c5 (15 Feb 2024) with connote's reader.
_VALSE_PIECES = (
    ("actant-swap.json", 503017, "915294ac3ade7c4c067b1c6841d0db93b60cb8a61ac8e2fb6b125c2a1c0ca93a", 1042, 949),
    ("action-replacement.json", 664129, "336ba134f29a3475d0508809067218909a6bd30f079c59309d19244eccb7917f", 779, 648),
    ("coreference-hard.json", 95649, "ef54d8d971d9e0f264e07de08d9915c6e3d6129a2f239888f2b938f5c2eb4139", 141, 104),
    ("coreference-standard.json", 592329, "dae1d9eb018acb54e29a1c4983f3563f86ec3b6beb4037a261564270b0473e95", 916,
     708),
    ("counting-adversarial.json", 407394, "0d23529308449c98b37a91048a865a5f377325eceb9accd73f2947bc512d12b0", 756,
     691),
    ("counting-hard.json", 537197, "2cc83615653675fb50914ce2d8ab4041cce1278eed7ac0abf6f319dbce5c967a", 1000, 868),
    ("counting-small-quant.json", 534996, "ca0645885b05738f6c6df2dffec70c669aaff64114017f33425821faab4bc374", 1000,
     900),
    ("existence.json", 420403, "b20fca52eba86c544083d423345a2e28e60e601ef61c56c9ac1c73a95a3a6d18", 534, 505),
    ("foil-it.json", 538911, "6f6f0d7494271ed28f6e6f075c3ba36ba1bc45d00ecf7403920f060915130460", 1000, 943),
    ("plurals.json", 1097122, "43760db7fc8c6f2a21d3536d52f81539cb101f3370e8d2effb09de43d91486a3", 1000, 851),
    ("relations.json", 664587, "061fc557459c318ccd6734d07c21cfa5bf5ae87aa6b1110b8f5ec3d6b2911043", 614, 535),
)
_VALSE_SOURCE = "measured on Heidelberg-NLP/VALSE data/ at commit 2152d90 with connote's reader"
#: (category, bytes, sha256, items), measured on RAIVNLab/sugar-crepe data/ at commit
#: 0047054b243992f0fad63d6f64f7544862daf846 (13 Feb 2024).
_SUGARCREPE_FILES = (
    ("add_att", 158863, "012d88d729693d193760e6f3393b06a1cf874380a9db0062e937201199fe044d", 692),
    ("add_obj", 484593, "1b9d76b93139a937b8dc1ada92a4f05ecc821bb3c291d752428bafadd4bb0682", 2062),
    ("replace_att", 176843, "9fe55fd4c0a9ad1f85d486d9f6d0215b41f867eb025026e7f7b5ce44352545ee", 788),
    ("replace_obj", 361126, "9d299600639947e9d15281a9ded1382b376cf4ea088a8d08a1314bfe76e81898", 1652),
    ("replace_rel", 312629, "356bcc2fc4c6aed3f4d9fd50acc58489bb1fe70c28791f9368d4cbf9ea39cdc9", 1406),
    ("swap_att", 154665, "7a7ce04e5c4c80412b48c6f0c1347fb1a2f5d54c0be6aa429b64d390e442f8d0", 666),
    ("swap_obj", 57569, "073cdb8e253d053614e80710834d9773b09dbc1dd0a412f6f9492262caa1dcad", 245),
)
_SUGARCREPE_SOURCE = "measured on RAIVNLab/sugar-crepe data/ at commit 0047054 with connote's reader"

DATASETS += (
    Dataset(
        name="svo-probes",
        title="SVO-Probes (subject, verb, object probes)",
        paper="Hendricks & Nematzadeh 2021, Probing Image-Language Transformers for Verb Understanding (Findings "
              "of ACL); cited by seed 001 for the positive-bias finding",
        used_for="connote suite run svo-probes",
        links=(Link("repository (svo_probes.csv, image_urls.txt, the scoring notebook)",
                    "https://github.com/google-deepmind/svo_probes"),
               Link("svo_probes.csv as the notebook fetches it", "https://storage.googleapis.com/dm-mmt-models/"
                    "svo_probes.csv")),
        licence="CC BY 4.0, as the repository's README states; the images are Google Image Search results.",
        release=("Found: svo_probes.csv (sentence, pos_triplet, neg_triplet, subj_neg, verb_neg, obj_neg, pos_url, "
                 "neg_url, pos_image_id, neg_image_id) and image_urls.txt; the images are given as URLs only."),
        files=(ExpectedFile("svo_probes.csv", "the probes: one sentence, a positive and a negative image per row",
                            "svo-csv", "connote suite run svo-probes --data"),
               ExpectedFile("images/", "the images fetched from their URLs, saved as <image_id>.<ext>",
                            "image-folder", "connote suite run svo-probes --images", required=False)),
    ),
    Dataset(
        name="valse",
        title="VALSE (caption vs foil per linguistic piece)",
        paper="Parcalabescu et al. 2022, VALSE (ACL); MM-SHAP (Parcalabescu & Frank 2023) was introduced on it",
        used_for="connote suite run valse; connote suite explain valse",
        links=(Link("repository (data/*.json)", "https://github.com/Heidelberg-NLP/VALSE"),),
        licence="see source (the repository's licence for the data was not in what could be read).",
        release=("Found: one JSON per piece in the repository's data/ folder, {id: {dataset, image_file, caption, "
                 "foil, classes, classes_foil, mturk, ...}} (eleven files, measured here from the repository). "
                 "Images come from each piece's source dataset (Visual7W, SWiG, VisDial, "
                 "COCO 2014 for FOIL-it), fetched separately."),
        files=tuple(ExpectedFile(name, f"the {name[:-5]} piece", "valse-piece", "connote suite run valse --data",
                                 size_bytes=size, sha256=sha, counts={"items": n, "MTurk-valid items": valid},
                                 counts_source=_VALSE_SOURCE) for name, size, sha, n, valid in _VALSE_PIECES)
        + (ExpectedFile("images/", "the pieces' images, as images/<piece>/<image_file> or images/<image_file>",
                        "image-folder", "connote suite run valse --images", required=False),),
    ),
    Dataset(
        name="winoground",
        title="Winoground (visio-linguistic compositionality)",
        paper="Thrush et al. 2022, Winoground (CVPR)",
        used_for="connote suite run winoground",
        links=(Link("Hugging Face dataset (gated: accept the terms)", "https://huggingface.co/datasets/facebook/"
                    "winoground"),),
        licence="see source: the hub card's agreement restricts use to research.",
        release="Found: data/examples.jsonl and data/images.zip (unpacked: images/<image_k>.png) on the hub.",
        files=(ExpectedFile("examples.jsonl", "400 examples: id, image_0/1, caption_0/1, tags", "winoground-examples",
                            "connote suite run winoground --data", counts={"examples": 400},
                            counts_source="the paper: 400 examples, 800 images"),
               ExpectedFile("images/", "the 800 images", "image-folder", "connote suite run winoground",
                            counts={"images": 800}, counts_source="the paper: 800 images")),
    ),
    Dataset(
        name="sugarcrepe",
        title="SugarCrepe (and ARO's VG-Relation / VG-Attribution)",
        paper="Hsieh et al. 2023, SugarCrepe (NeurIPS D&B); Yuksekgonul et al. 2023, ARO (ICLR)",
        used_for="connote suite run sugarcrepe",
        links=(Link("SugarCrepe repository (data/*.json)", "https://github.com/RAIVNLab/sugar-crepe"),
               Link("COCO 2017 validation images", "http://images.cocodataset.org/zips/val2017.zip"),
               Link("ARO repository (dataset_zoo/aro_datasets.py names the files and their Google Drive ids)",
                    "https://github.com/mertyg/vision-language-models-are-bows")),
        licence="see source (SugarCrepe: the repository's LICENSE; ARO's images are a subset of GQA / Visual Genome).",
        release=("Found: SugarCrepe's seven category JSONs {id: {filename, caption, negative_caption}} over COCO "
                 "val2017; ARO's visual_genome_relation.json / visual_genome_attribution.json and their image zip "
                 "(downloaded by the ARO loader with gdown). ARO's COCO-Order / Flickr30k-Order are generated "
                 "by perturbing captions, not released as files, and are not read."),
        files=tuple(ExpectedFile(f"{c}.json", f"SugarCrepe {c}", "sugarcrepe-category",
                                 "connote suite run sugarcrepe --data", size_bytes=size, sha256=sha,
                                 counts={"items": n}, counts_source=_SUGARCREPE_SOURCE)
                    for c, size, sha, n in _SUGARCREPE_FILES)
        + (ExpectedFile("visual_genome_relation.json", "ARO VG-Relation", "aro-json",
                        "connote suite run sugarcrepe --data", required=False),
           ExpectedFile("visual_genome_attribution.json", "ARO VG-Attribution", "aro-json",
                        "connote suite run sugarcrepe --data", required=False),
           ExpectedFile("images/", "COCO val2017 images and ARO's images", "image-folder",
                        "connote suite run sugarcrepe --images", required=False)),
    ),
)

BY_NAME: dict[str, Dataset] = {d.name: d for d in DATASETS}


def get(name: str) -> Dataset:
    """The catalog entry ``name``; an unknown name is an ``InputError`` listing the known ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise InputError(f"unknown dataset {name!r}; known: {', '.join(BY_NAME)}") from None


# --------------------------------------------------------------------------- format checks


@dataclass
class FormatResult:
    """What parsing a file with connote's reader found: record counts and problems (not fatal)."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Files the parsed file names that are not on disk: the copy is incomplete."""


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
    from connote.vist.data import read_submission

    sub = read_submission(path)
    return FormatResult({"sequences": len(sub.entries), "albums": len({e.album_id for e in sub.entries})},
                        [str(p) for p in sub.problems])


def _probe_manifest(path: Path) -> FormatResult:
    from connote.cv_probes.manifest import read_probe_manifest
    from connote.media.images import is_url

    items = read_probe_manifest(path)
    problems = [it.error for it in items if it.error]
    missing = sorted({it.image for it in items if it.image and not is_url(it.image) and not Path(it.image).is_file()})
    with_votes = sum(1 for it in items if it.human_votes)
    return FormatResult({"items": len(items), "items with human votes": with_votes}, problems, missing)


def _vmc_captions(path: Path) -> FormatResult:
    from connote.vmc.data import read_caption_table

    table = read_caption_table(path)
    empty = [v for v, caps in table.items() if not caps]
    return FormatResult({"videos": len(table), "captions": sum(len(c) for c in table.values())},
                        [f"video {v}: no captions" for v in empty])


def _vmc_split(path: Path) -> FormatResult:
    from connote.vmc.data import read_split

    ids = read_split(path)
    if isinstance(ids, dict):
        return FormatResult({f"ids ({k})": len(v) for k, v in ids.items()})
    dup = len(ids) - len(set(ids))
    return FormatResult({"ids": len(ids)}, [f"{dup} duplicate id(s)"] if dup else [])


def _video_folder(path: Path) -> FormatResult:
    from connote.vmc.data import find_videos

    return FormatResult({"videos": len(find_videos(path))})


def _image_folder(path: Path) -> FormatResult:
    n = sum(1 for p in path.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())
    return FormatResult({"images": n})


def _image_captions(path: Path) -> FormatResult:
    from connote.vmc.data import read_image_captions

    items = read_image_captions(path, path.parent / "images")
    missing = sorted({str(it.path) for it in items if not it.path.is_file()})
    return FormatResult({"records": len(items)}, missing=missing)


def _coco_captions(path: Path) -> FormatResult:
    from connote.vmc.data import read_image_captions

    items = read_image_captions(path, path.parent)
    return FormatResult({"images": len({it.path for it in items}), "captions": len(items)})


def _suite_reader(reader: str, what: str) -> Callable[[Path], FormatResult]:
    def check(path: Path) -> FormatResult:
        from connote.core.registry import import_target
        from connote.media.images import is_url

        items = import_target(reader)(path)
        missing = sorted({p for it in items for p in it.images if not is_url(p) and not Path(p).is_file()})
        counts = {what: len(items)}
        if any("valid" in it.fields for it in items):  # VALSE: the MTurk-validated subset
            counts["MTurk-valid items"] = sum(bool(it.fields["valid"]) for it in items)
        return FormatResult(counts, [it.error for it in items if it.error], missing)
    return check


FORMATS: dict[str, tuple[str, Callable[[Path], FormatResult]]] = {
    "svo-csv": ("SVO-Probes svo_probes.csv (connote.suites.svo.data.read_svo)",
                _suite_reader("connote.suites.svo.data:read_svo", "rows")),
    "valse-piece": ("VALSE piece JSON (connote.suites.valse.data.read_valse)",
                    _suite_reader("connote.suites.valse.data:read_valse", "items")),
    "winoground-examples": ("Winoground examples.jsonl (connote.suites.winoground.data.read_winoground)",
                            _suite_reader("connote.suites.winoground.data:read_winoground", "examples")),
    "sugarcrepe-category": ("SugarCrepe category JSON (connote.suites.sugarcrepe.data.read_sugarcrepe)",
                            _suite_reader("connote.suites.sugarcrepe.data:read_sugarcrepe", "items")),
    "aro-json": ("ARO VG-Relation / VG-Attribution JSON (connote.suites.sugarcrepe.data.read_sugarcrepe)",
                 _suite_reader("connote.suites.sugarcrepe.data:read_sugarcrepe", "items")),
    "vist-sis": ("official VIST story-in-sequence JSON (connote.vist.data.read_official)", _vist_official("sis")),
    "vist-dii": ("official VIST description-in-isolation JSON (read_official)", _vist_official("dii")),
    "vist-dis": ("VIST description-in-sequence JSON, the SIS layout (read_official)", _vist_official("dis")),
    "vist-challenge": ("VIST challenge format {team_name, evaluation_info, output_stories} (read_submission)",
                       _vist_challenge),
    "probe-manifest": ("CV-Probes manifest, CSV or JSONL (connote.cv_probes.manifest.read_probe_manifest)",
                       _probe_manifest),
    "vmc-captions": ("VMC caption table CSV (connote.vmc.data.read_caption_table)", _vmc_captions),
    "vmc-split": ("split file: one id per line, or a JSON list (connote.vmc.data.read_split)", _vmc_split),
    "video-folder": ("folder of <id>.<video ext> files (connote.vmc.data.find_videos)", _video_folder),
    "image-folder": ("folder of image files (any depth)", _image_folder),
    "image-captions": ("JSON list of {image, caption[, kind]} (connote.vmc.data.read_image_captions)",
                       _image_captions),
    "coco-captions": ("COCO captions JSON (connote.vmc.data.read_image_captions)", _coco_captions),
}


# --------------------------------------------------------------------------- checking a copy


@dataclass
class FileCheck:
    """The outcome for one expected file."""

    path: str
    required: bool
    status: str
    """``ok``, ``missing``, ``absent`` (optional and missing), ``differs`` or ``unreadable``."""
    found_at: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status in ("missing", "differs", "unreadable")


@dataclass
class CopyCheck:
    dataset: str
    root: str
    files: list[FileCheck]

    @property
    def complete(self) -> bool:
        return not any(f.failed for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["complete"] = self.complete
        return out


def _locate(root: Path, expected: ExpectedFile) -> Path | None:
    """The expected file at its place under ``root``, else the first file of that name anywhere below."""
    direct = root / expected.path.rstrip("/")
    if expected.is_folder and direct.is_dir() or not expected.is_folder and direct.is_file():
        return direct
    name = Path(expected.path.rstrip("/")).name
    for hit in sorted(root.rglob(name)):
        if hit.is_dir() if expected.is_folder else hit.is_file():
            return hit
    return None


def check_file(expected: ExpectedFile, path: Path | None) -> FileCheck:
    """Check one expected file found at ``path`` (``None``: not found)."""
    from connote.core.files import file_sha256

    result = FileCheck(expected.path, expected.required, "ok")
    if path is None:
        result.status = "missing" if expected.required else "absent"
        return result
    result.found_at = str(path)
    if not expected.is_folder:
        try:
            result.size_bytes = path.stat().st_size
            if expected.sha256 is not None:
                result.sha256 = file_sha256(path)
        except OSError as exc:
            result.status = "unreadable"
            result.messages.append(f"cannot read: {exc}")
            return result
        if expected.size_bytes is not None and result.size_bytes != expected.size_bytes:
            result.status = "differs"
            result.messages.append(f"size {result.size_bytes} bytes, expected {expected.size_bytes}")
        if expected.sha256 is not None and result.sha256 != expected.sha256:
            result.status = "differs"
            result.messages.append(f"sha256 {result.sha256}, expected {expected.sha256}")
    _, reader = FORMATS[expected.format]
    try:
        found = reader(path)
    except ConnoteError as exc:  # the reader's own message names file, line and what was expected
        result.status = "unreadable"
        result.messages.append(f"not readable as {expected.format}: {exc}")
        return result
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.status = "unreadable"
        result.messages.append(f"not readable as {expected.format}: {type(exc).__name__}: {exc}")
        return result
    result.counts = found.counts
    result.problems = found.problems
    if found.missing:
        result.status = "differs"
        result.messages.append(f"{len(found.missing)} file(s) it names are not on disk, first: {found.missing[0]}")
    for key, want in expected.counts.items():
        got = found.counts.get(key)
        if got != want:
            result.status = "differs"
            result.messages.append(f"{got} {key}, expected {want}")
    return result


def check_copy(name: str, path: str | Path, *, entry: str | None = None) -> CopyCheck:
    """Verify a local copy of dataset ``name`` at ``path`` (a folder, or one of its files).

    A file is matched to the expected file of the same name (or to ``entry``); a folder is searched
    for every expected file, first at its place in connote's layout, then anywhere below it by name.
    """
    ds = get(name)
    root = Path(path)
    if not root.exists():
        raise InputError("no such file or folder", path=root)
    if root.is_file() or entry is not None:
        if entry is not None:
            expected = ds.file(entry)
        else:
            matches = [f for f in ds.files if not f.is_folder and Path(f.path).name == root.name]
            if not matches:
                files = ", ".join(f.path for f in ds.files if not f.is_folder)
                raise InputError(f"{root.name!r} is not one of {name}'s files ({files}); name the one it is "
                                 f"with --file", path=root)
            expected = matches[0]
        target = root if root.is_file() or expected.is_folder and root.is_dir() else _locate(root, expected)
        return CopyCheck(ds.name, str(root), [check_file(expected, target)])
    return CopyCheck(ds.name, str(root), [check_file(f, _locate(root, f)) for f in ds.files])
