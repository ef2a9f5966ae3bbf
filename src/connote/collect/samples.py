"""Sample inputs for trying the studies offline: the bundled sample photos as a VIST album, and one caption run.

``write_sample_album(folder)`` writes the sample probe set's photos (``connote.media.sample``) as
``images/<photo id>.jpg`` and ``sample.story-in-sequence.json``: one album of the nine photos (taken one
minute apart) with one story, in the official SIS layout, so the storytelling (albums) and re-telling
(its story's storyboard) studies can be made from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from connote.media.sample import SAMPLE, write_sample_probes

ALBUM_ID = "sample-album"
STORY = ["The crew got ready for the big day.", "An officer in a neat uniform came to watch.",
         "The rocket stood tall on its pad.", "A photographer set up his camera.",
         "Then everyone went home and drank coffee."]
STORY_PHOTOS = ["astronaut", "grace_hopper", "rocket", "camera", "coffee"]


def write_sample_album(folder: str | Path) -> Path:
    """Write the sample album (photos + SIS JSON) into ``folder``; returns the JSON's path."""
    folder = Path(folder)
    write_sample_probes(folder)  # writes images/<name>.jpg
    names = [row[0] for row in SAMPLE]
    images = [{"id": n, "album_id": ALBUM_ID, "datetaken": f"2016-05-01 10:{i:02d}:00", "license": "5",
               "title": n.replace("_", " "), "tags": "", "url_o": f"images/{n}.jpg"} for i, n in enumerate(names)]
    album = {"id": ALBUM_ID, "title": "A day at the space centre", "description": "connote's sample photos",
             "photos": len(names), "vist_label": "sample"}
    annotations = [[{"album_id": ALBUM_ID, "photo_flickr_id": pid, "story_id": "sample-story-1",
                     "storylet_id": f"sample-story-1-{k + 1}", "text": text.lower(), "original_text": text,
                     "tier": "story-in-sequence", "worker_arranged_photo_order": k, "worker_id": "sample",
                     "setting": ""}] for k, (pid, text) in enumerate(zip(STORY_PHOTOS, STORY))]
    doc = {"info": {"description": "connote sample album"}, "type": "story-in-sequence", "images": images,
           "albums": [album], "annotations": annotations}
    path = folder / "sample.story-in-sequence.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path
