"""VMC's datasets in the catalogue (``connote datasets``: VMCD and the stage-1 HAIVMet and COCO captions) and
the checks of their file formats.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from connote.datasets.catalog import Dataset, ExpectedFile, FormatResult, Link

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="vmc",
        title="Video Metaphor Captioning dataset (VMCD)",
        paper="Kalarani, Bhattacharyya, Shekhar 2024 (arXiv 2406.04886); seed 003",
        used_for="metaphor captioning, scoring and GIT-LLaVA stage 2 (connote vmc caption, connote vmc score, "
                 "connote vmc train)",
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
                         "vmc-captions", "connote vmc score --refs; connote vmc train (data.captions)",
                         counts={"videos": 705, "captions": 2115},
                         counts_source="the paper (705 videos, 2115 captions) and the repository's "
                         "get_data_stats notebook output"),
            ExpectedFile("splits/train.txt", "training video ids, one per line", "vmc-split",
                         "connote vmc train (data.train_split)", counts={"ids": 400},
                         counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("splits/val.txt", "validation video ids", "vmc-split",
                         "connote vmc train (data.val_split)", counts={"ids": 55},
                         counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("splits/test.txt", "test video ids", "vmc-split",
                         "connote vmc caption (select the test videos); connote vmc score",
                         counts={"ids": 250}, counts_source="the paper: 400/55/250 videos"),
            ExpectedFile("videos/", "the videos, <unique_id>.mp4 (or .webm, .mkv, ...)", "video-folder",
                         "connote vmc caption --videos; connote vmc train (data.videos)",
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
        used_for="GIT-LLaVA stage 1 pretraining, the metaphor half (connote vmc train, stage 1)",
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
                         "connote vmc train, stage 1 (data.metaphor_images, data.image_dir)",
                         counts={"records": 6476},
                         counts_source="the VMC paper: all 6476 HAIVMet images with their prompts"),
            ExpectedFile("images/", "the DALL-E 2 images", "image-folder",
                         "connote vmc train, stage 1", counts={"images": 6476},
                         counts_source="the HAIVMet paper: 6,476 images"),
        ),
    ),
    Dataset(
        name="coco-captions",
        title="MS COCO captions (the literal half of stage 1)",
        paper="Lin et al. 2014, Microsoft COCO; used by seed 003 for stage 1",
        used_for="GIT-LLaVA stage 1 pretraining, the literal half (connote vmc train, stage 1)",
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
                         "coco-captions", "connote vmc train, stage 1 (data.literal_images)",
                         counts={"images": 82783}, counts_source="COCO 2014 train split: 82,783 images"),
            ExpectedFile("train2014/", "the 2014 training images", "image-folder",
                         "connote vmc train, stage 1 (data.literal_image_dir)", counts={"images": 82783},
                         counts_source="COCO 2014 train split: 82,783 images"),
        ),
    ),
)


# --------------------------------------------------------------------------- format checks


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


def _image_captions(path: Path) -> FormatResult:
    from connote.vmc.data import read_image_captions

    items = read_image_captions(path, path.parent / "images")
    missing = sorted({str(it.path) for it in items if not it.path.is_file()})
    return FormatResult({"records": len(items)}, missing=missing)


def _coco_captions(path: Path) -> FormatResult:
    from connote.vmc.data import read_image_captions

    items = read_image_captions(path, path.parent)
    return FormatResult({"images": len({it.path for it in items}), "captions": len(items)})


FORMATS: dict[str, tuple[str, Callable[[Path], FormatResult]]] = {
    "vmc-captions": ("VMC caption table CSV (connote.vmc.data.read_caption_table)", _vmc_captions),
    "vmc-split": ("split file: one id per line, or a JSON list (connote.vmc.data.read_split)", _vmc_split),
    "video-folder": ("folder of <id>.<video ext> files (connote.vmc.data.find_videos)", _video_folder),
    "image-captions": ("JSON list of {image, caption[, kind]} (connote.vmc.data.read_image_captions)",
                       _image_captions),
    "coco-captions": ("COCO captions JSON (connote.vmc.data.read_image_captions)", _coco_captions),
}
