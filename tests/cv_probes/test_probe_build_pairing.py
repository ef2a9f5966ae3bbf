"""``cv-probes build``'s SG-image x PG-caption pairs as the paper makes them: its annotators wrote PG captions for
each image ("a curated dataset comprising one SG caption and one or more descriptive PG captions for each
image", seed 001, "Dataset"), so an SG image is paired with the PG captions written for it. A verb list that
gives its PG captions per image gets exactly those pairs; one that gives a single list pairs every SG image of
the entry with every caption (what the builder did before, for every list)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.cv_probes.build import manifest_rows, read_verb_list


def paper_pairs(images: list[str], captions_per_image: list[list[str]]) -> set[tuple[str, str]]:
    """The paper's SG pairs with PG captions: each image with the captions its annotators wrote for it."""
    return {(image, caption) for image, captions in zip(images, captions_per_image) for caption in captions}


def sg_pg_pairs(rows: list[dict]) -> set[tuple[str, str]]:
    return {(r["image"], r["caption"]) for r in rows if r["image_kind"] == "SG" and r["caption_kind"] == "PG"}


def test_pg_captions_given_per_image_pair_each_sg_image_with_its_own(tmp_path: Path) -> None:
    groups = [["A man kneels on a mat.", "A man sits on the floor."], ["A woman stands by a wall."],
              ["A man sits on the floor."]]
    jsonl = tmp_path / "verbs.jsonl"
    jsonl.write_text(json.dumps({"verb": "pray", "roles": {"agent": "man", "place": "church"},
                                 "sg_images": ["a.jpg", "b.jpg", "c.jpg"], "pg_captions": groups}) + "\n")
    csv_file = tmp_path / "verbs.csv"
    csv_file.write_text('verb,roles,sg_images,pg_captions\npray,agent=man;place=church,a.jpg;b.jpg;c.jpg,'
                        '"' + ";".join("|".join(g) for g in groups) + '"\n')
    for path in (jsonl, csv_file):
        (entry,) = read_verb_list(path)
        assert entry.error is None and entry.pg_captions == [
            "A man kneels on a mat.", "A man sits on the floor.", "A woman stands by a wall."]
        cands = {"A woman stands by a wall.": [{"image": "pool/x.jpg", "score": 0.3}]}
        rows = manifest_rows(entry, "A man prays in a church.", 0.8, cands)
        assert sg_pg_pairs(rows) == paper_pairs(entry.sg_images, groups)
        assert len([r for r in rows if r["image_kind"] == "SG" and r["caption_kind"] == "PG"]) == 4
        # a caption keeps one number across the images it was written for and its retrieved images
        ids = {r["item_id"].split("-", 1)[1] for r in rows}
        assert {"sg1-pg1", "sg1-pg2", "sg2-pg3", "sg3-pg2", "r1-pg3", "r1-sg"} <= ids
    # one list for the entry: every SG image with every caption (4 pairs become 9)
    flat = tmp_path / "flat.jsonl"
    flat.write_text(json.dumps({"verb": "pray", "roles": {"agent": "man"}, "sg_images": ["a.jpg", "b.jpg", "c.jpg"],
                                "pg_captions": [c for g in groups for c in g]}) + "\n")
    (entry,) = read_verb_list(flat)
    assert entry.pg_by_image is None and len(sg_pg_pairs(manifest_rows(entry, "A man prays.", None, {}))) == 9


def test_per_image_groups_must_match_the_sg_images(tmp_path: Path) -> None:
    path = tmp_path / "verbs.jsonl"
    path.write_text(json.dumps({"verb": "pray", "roles": {"agent": "man"}, "sg_images": ["a.jpg", "b.jpg"],
                                "pg_captions": [["A man kneels."]]}) + "\n")
    (entry,) = read_verb_list(path)
    assert entry.error == f"{path}:1: verb 'pray': pg_captions gives 1 per-image group(s) for 2 sg_images (one " \
                          "group per SG image, in its order)"
    path.write_text(json.dumps({"verb": "pray", "roles": {"agent": "man"}, "sg_images": ["a.jpg", "b.jpg"],
                                "pg_captions": [["A man kneels."], "A man sits."]}) + "\n")
    with pytest.raises(InputError, match="line 1, column pg_captions: pg_captions must be a list of captions or"):
        read_verb_list(path)
