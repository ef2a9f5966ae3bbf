"""Small hand-built VIST files in the official and challenge formats."""

from __future__ import annotations

import json
from pathlib import Path

DATES = {  # photo id -> datetaken; file order deliberately differs from time order
    "13": "2010-05-01 12:00:00", "11": "2010-05-01 09:00:00", "12": "2010-05-01 10:30:00",
    "15": "2010-05-01 18:00:00", "14": "2010-05-01 15:00:00", "16": "2010-05-02 08:00:00",
    "21": "2011-07-04 10:00:00", "22": "2011-07-04 11:00:00", "23": "2011-07-04 12:00:00",
    "24": "2011-07-04 13:00:00", "25": "2011-07-04 14:00:00",
}
ALBUM_OF = {p: ("A1" if p.startswith("1") else "A2") for p in DATES}


def story_anns(story_id: str, album: str, photos: list[str], texts: list[str], *, order: list[int] | None = None,
               tier: str = "story-in-sequence", start: int = 0) -> list[list[dict]]:
    order = order if order is not None else list(range(len(photos)))
    return [[{"album_id": album, "photo_flickr_id": p, "story_id": story_id, "storylet_id": str(start + i),
              "text": t, "original_text": t.capitalize(), "tier": tier, "worker_arranged_photo_order": o,
              "worker_id": "W", "setting": "first-2-pick-and-tell"}]
            for i, (p, t, o) in enumerate(zip(photos, texts, order))]


def official(annotations: list, *, tier: str = "story-in-sequence") -> dict:
    return {
        "images": [{"id": p, "album_id": ALBUM_OF[p], "datetaken": d, "license": "5",
                    "url_o": f"https://x/{p}.jpg", "title": f"photo {p}", "tags": "t"}
                   for p, d in DATES.items()],
        "info": {"version": "test"},
        "albums": [{"id": "A1", "title": "beach day", "description": "d", "photos": "6", "vist_label": "beach"},
                   {"id": "A2", "title": "fourth", "description": "d", "photos": "5", "vist_label": "july"}],
        "type": "corpus", "annotations": annotations,
    }


def make_sis(tmp_path: Path) -> Path:
    """Two albums; A1 has two stories (one written in reverse annotation order), A2 a 4-storylet story."""
    anns = []
    # story S1: annotations listed out of order; worker order says 11,12,13,14,15
    s1 = story_anns("S1", "A1", ["13", "11", "15", "12", "14"],
                    ["we ate lunch .", "we arrived early .", "the sun set .", "the sea was calm .",
                     "we swam ."], order=[2, 0, 4, 1, 3])
    anns += s1
    anns += story_anns("S2", "A1", ["16", "15", "14", "13", "12"],
                       ["morning came .", "we left .", "goodbye beach .", "it was fun .", "the end ."],
                       start=5)
    anns += story_anns("S3", "A2", ["21", "22", "23", "24"],
                       ["the parade started .", "flags everywhere .", "[male] waved .", "fireworks !"],
                       start=10)
    p = tmp_path / "test.story-in-sequence.json"
    p.write_text(json.dumps(official(anns)), encoding="utf-8")
    return p


def challenge(entries: list[tuple[str, list[str], str]]) -> dict:
    return {"team_name": "t", "evaluation_info": {"additional_description": ""},
            "output_stories": [{"album_id": a, "photo_sequence": s, "story_text_normalized": t}
                               for a, s, t in entries]}


def write(path: Path, obj: object) -> Path:
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")
    return path
