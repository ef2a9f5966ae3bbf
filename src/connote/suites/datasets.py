"""The probe suites' datasets in the catalogue (``connote datasets``; the same names as their tasks and report
kinds) and the checks of their file formats, read with each suite's own reader.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from connote.datasets.catalog import Dataset, ExpectedFile, FormatResult, Link

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

DATASETS: tuple[Dataset, ...] = (
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


# --------------------------------------------------------------------------- format checks


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
}
