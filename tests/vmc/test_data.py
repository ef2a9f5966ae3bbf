"""VMC data formats: caption table, folders, splits, QA JSONL, pretraining sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.core.errors import InputError
from connote.runs import write_jsonl
from connote.vmc.data import (
    LITERAL_PROMPT,
    METAPHOR_PROMPT,
    answers_for,
    balance_pretraining,
    load_vmc,
    questions_for,
    read_answers,
    read_caption_table,
    read_image_captions,
    read_questions,
    read_split,
    read_video_list,
)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    table = tmp_path / "vmc.csv"
    table.write_text("unique_id,annotator_1,annotator_2,annotator_3\n"
                     "v1,The car is as fast as a cheetah,The car is as quick as wind,\n"
                     "v2,The tea is as calming as rain,a,b\n"
                     "v3,x,y,z\n")
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("v1.mp4", "v2.webm", "extra.mp4", "notes.txt"):
        (videos / name).write_bytes(b"x")
    return table, videos


def test_caption_table_and_matching(tmp_path: Path) -> None:
    table, videos = _setup(tmp_path)
    caps = read_caption_table(table)
    assert caps["v1"] == ["The car is as fast as a cheetah", "The car is as quick as wind"]
    data = load_vmc(table, videos)
    assert [it.video_id for it in data.items] == ["v1", "v2"]
    assert data.items[1].path == videos / "v2.webm"
    assert data.missing_videos == ["v3"]
    assert data.unlabelled_videos == ["extra"]
    assert [i.video_id for i in data.subset(["v2", "v3", "v1"])] == ["v2", "v1"]


def test_caption_table_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,annotator_1\nv1,a\n")
    with pytest.raises(InputError, match="missing column unique_id"):
        read_caption_table(bad)
    dup = tmp_path / "dup.csv"
    dup.write_text("unique_id,annotator_1\nv1,a\nv1,b\n")
    with pytest.raises(InputError, match="line 3.*duplicate"):
        read_caption_table(dup)


def test_splits(tmp_path: Path) -> None:
    (tmp_path / "train.txt").write_text("v1\n# comment\n\nv2\n")
    assert read_split(tmp_path / "train.txt") == ["v1", "v2"]
    (tmp_path / "s.json").write_text(json.dumps({"train": ["v1"], "val": ["v2"], "test": ["v3"]}))
    assert read_split(tmp_path / "s.json", "val") == ["v2"]
    assert set(read_split(tmp_path / "s.json")) == {"train", "val", "test"}
    with pytest.raises(InputError, match="no split 'dev'"):
        read_split(tmp_path / "s.json", "dev")


def test_qa_jsonl_round_trip(tmp_path: Path) -> None:
    table, videos = _setup(tmp_path)
    data = load_vmc(table, videos)
    write_jsonl(tmp_path / "q.jsonl", questions_for(data.items))
    qs = read_questions(tmp_path / "q.jsonl")
    assert qs[0] == {"question_id": "v1", "video": "v1.mp4", "text": METAPHOR_PROMPT}
    write_jsonl(tmp_path / "a.jsonl", answers_for(data.items, {"v1": "The car is as red as a rose"}))
    ans = read_answers(tmp_path / "a.jsonl")
    assert ans == [{"question_id": "v1", "video_id": "v1", "text": "The car is as red as a rose",
                    "true_caption": "The car is as fast as a cheetah"}]
    assert read_video_list(tmp_path / "q.jsonl")[1] == ("v2", tmp_path / "v2.webm")
    (tmp_path / "bad.jsonl").write_text('{"question_id": 1, "video": "a"}\n')
    with pytest.raises(InputError, match="line 1.*missing field"):
        read_questions(tmp_path / "bad.jsonl")


def test_video_lists(tmp_path: Path) -> None:
    _, videos = _setup(tmp_path)
    assert [v for v, _ in read_video_list(videos)] == ["extra", "v1", "v2"]
    (tmp_path / "m.csv").write_text("video_id,path\na,videos/v1.mp4\n")
    assert read_video_list(tmp_path / "m.csv") == [("a", tmp_path / "videos" / "v1.mp4")]


def test_pretraining_sets(tmp_path: Path) -> None:
    (tmp_path / "haivmet.json").write_text(json.dumps(
        [{"image": f"m{i}.png", "caption": f"The city is as busy as a hive {i}"} for i in range(5)]))
    (tmp_path / "coco.json").write_text(json.dumps({
        "images": [{"id": 1, "file_name": "c1.jpg"}, {"id": 2, "file_name": "c2.jpg"}],
        "annotations": [{"image_id": 1, "caption": "A dog on a sofa."},
                        {"image_id": 2, "caption": "Two cats. "}, {"image_id": 2, "caption": "Cats."}]}))
    met = read_image_captions(tmp_path / "haivmet.json", tmp_path)
    lit = read_image_captions(tmp_path / "coco.json", tmp_path)
    assert met[0].kind == "metaphor" and met[0].prompt == METAPHOR_PROMPT
    assert lit[1].path == tmp_path / "c2.jpg" and lit[1].caption == "Two cats." and lit[1].prompt == LITERAL_PROMPT
    mixed = balance_pretraining(met, lit, seed=1)
    assert len(mixed) == 6 and sum(m.kind == "metaphor" for m in mixed) == 3
    assert [m.image_id for m in mixed] == [m.image_id for m in balance_pretraining(met, lit, seed=1)]
