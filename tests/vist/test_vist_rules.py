"""The VIST workflow's rules without a server: varied text, the two-skip rule, answers posted around the
page, the majority sequence DII and DIS are made from."""

from __future__ import annotations

import json

from connote.cli import main
from connote.collect.importing import import_study
from connote.collect.project import OUTPUT_DIR, read_manifest
from connote.collect.samples import write_sample_album
from connote.vist.data import read_official
from connote.vist.studies.descriptions import majority_sequences
from connote.vist.studies.storytelling import text_problems

STORY = ["The rocket was ready at dawn.", "The astronaut smiled for one last photo.",
         "A photographer caught the moment.", "Back home we all needed a coffee.", "Even the cat was tired."]


def test_varied_text_of_fifteen_words():
    assert text_problems(STORY) == []
    repeated = [STORY[0], STORY[1], "the rocket was READY at dawn!", STORY[3], STORY[4]]
    assert text_problems(repeated) == ["cards 1 and 3 say the same; write a different sentence"]
    assert text_problems(["We had a good day.", "A good day we had.", "Good day, we had.", "We had a day.",
                          "A good good day."]) == [
        "the text repeats itself: it uses 5 different words; use at least 10"]
    assert text_problems(["One two three.", "Four five six.", "Seven eight nine.", "Ten eleven twelve.",
                          "Thirteen fourteen."]) == ["the text has 14 words; it needs at least 15"]
    assert text_problems(STORY[:4] + [""]) == ["card 5 has no sentence"]
    assert text_problems(STORY, min_each=6) == ["card 3 has 5 words; each needs at least 6",
                                                "card 5 has 5 words; each needs at least 6"]


def answers(pairs: dict[str, dict[str, str]]) -> dict[str, list]:
    return {iid: [[{"schema": k.split(":::")[0], "name": k.split(":::")[1]}, v] for k, v in labels.items()]
            for iid, labels in pairs.items()}


def story(photos, sentences, choice=None):
    out = {"story:::order": ",".join(photos)}
    out.update({f"story:::sentence_{k}": s for k, s in enumerate(sentences, start=1)})
    if choice:
        out["story:::choice"] = str(choice)
    return out


def write_state(folder, user, given):
    path = folder / OUTPUT_DIR / user / "user_state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"user_id": user, "instance_id_ordering": list(given),
                                "instance_id_to_label_to_value": answers(given)}))


def test_two_skips_discard_an_album_and_a_story_posted_around_the_page_is_refused(tmp_path):
    sis = write_sample_album(tmp_path / "sample")
    doc = json.loads(sis.read_text())
    for k in range(1, 6):  # a second album of five photos (copies)
        (tmp_path / "sample" / "images" / f"coin{k}.jpg").write_bytes((tmp_path / "sample" / "images" /
                                                                       "coffee.jpg").read_bytes())
        doc["images"].append({"id": f"coin{k}", "album_id": "coins", "datetaken": f"2016-06-01 09:0{k}:00"})
    doc["albums"].append({"id": "coins", "title": "Coins", "photos": 5})
    sis.write_text(json.dumps(doc))
    folder = tmp_path / "story"
    assert main(["collect", "make", "vist-storytelling", "--from", str(sis), "--out", str(folder)]) == 0
    six = ["rocket", "astronaut", "camera", "coffee", "chelsea", "flower"]
    sentences = STORY + ["Someone had left flowers on the doorstep."]
    write_state(folder, "alice", {"album-sample-album": story(six, sentences),
                                  "album-coins": {"story:::order": "skip"}})
    write_state(folder, "bob", {"album-sample-album": story(six[:5], STORY[:3] + [STORY[1], STORY[4]]),
                                "album-coins": {"story:::order": "skip"}})
    report = import_study(folder, tmp_path / "stories.json")
    assert report.extra["discarded_albums"] == ["coins"]
    assert report.extra["skipped_albums"] == {"coins": ["alice", "bob"]}
    assert report.extra["refused"] == ["bob on album-sample-album: cards 2 and 4 say the same; write a different "
                                       "sentence"]
    assert report.incomplete == {"album-sample-album": 1}  # bob's refused story does not count
    vist = read_official(tmp_path / "stories.json")
    assert not vist.problems and [list(s.photo_ids) for s in vist.stories] == [six]
    assert [sl.original_text for sl in vist.stories[0].storylets] == sentences


def sis_file(path, stories):
    """An SIS file of ``(album, worker, photos)`` stories."""
    images = sorted({(a, p) for a, _, photos in stories for p in photos})
    annotations = [[{"album_id": a, "photo_flickr_id": p, "story_id": f"s{n}", "storylet_id": f"s{n}-{k}",
                     "text": f"sentence {k} of {w}", "worker_arranged_photo_order": k, "worker_id": w,
                     "tier": "story-in-sequence"}]
                   for n, (a, w, photos) in enumerate(stories) for k, p in enumerate(photos)]
    path.write_text(json.dumps({"type": "story-in-sequence", "images": [{"id": p, "album_id": a} for a, p in images],
                                "albums": [{"id": a} for a in sorted({a for a, _, _ in stories})],
                                "annotations": annotations}))
    return path


def test_majority_sequence_across_both_stages(tmp_path):
    one, two, other = list("abcde"), list("fghij"), list("vwxyz")
    first = sis_file(tmp_path / "first.json", [("A", "w1", one), ("A", "w2", two), ("B", "w1", other),
                                               ("B", "w2", other[::-1])])
    both = sis_file(tmp_path / "both.json", [("A", "w1", one), ("A", "w2", two), ("A", "r1", two), ("A", "r2", two),
                                             ("A", "r3", one)])
    chosen, left_out = majority_sequences([first])
    assert chosen == [] and left_out == [
        "album A: no photo sequence has stories from a majority of its 2 worker(s) (workers per sequence: 1, 1)",
        "album B: no photo sequence has stories from a majority of its 2 worker(s) (workers per sequence: 1, 1)"]
    # the first stage's stories are in both files and count once: w2, r1, r2 are 3 of A's 5 workers
    chosen, left_out = majority_sequences([first, both])
    assert [(c["album_id"], c["photos"]) for c in chosen] == [("A", two)] and len(left_out) == 1


def test_dii_and_dis_made_from_the_first_stage(tmp_path, capsys):
    sis = write_sample_album(tmp_path / "sample")  # one story: one worker, a majority of one
    for study in ("vist-descriptions", "vist-descriptions-in-sequence"):
        assert main(["collect", "make", study, "--from", str(sis), "--out", str(tmp_path / study)]) == 0
    dii, dis = read_manifest(tmp_path / "vist-descriptions"), read_manifest(tmp_path / "vist-descriptions-in-sequence")
    order = ["astronaut", "grace_hopper", "rocket", "camera", "coffee"]
    assert [dii["sources"][i]["photo_id"] for i in dii["items"]] == order
    assert {s["album_id"] for s in dii["sources"].values()} == {"sample-album"} and dii["per_item"] == 3
    assert [s["photos"] for s in dis["sources"].values()] == [order] and dis["per_item"] == 3
    (tmp_path / "sample" / "images" / "rocket.jpg").unlink()
    capsys.readouterr()
    assert main(["collect", "make", "vist-descriptions-in-sequence", "--from", str(sis), "--out",
                 str(tmp_path / "none")]) == 2
    assert "no image file for photo(s) rocket" in capsys.readouterr().err
    assert main(["collect", "make", "vist-descriptions-in-sequence", "--out", str(tmp_path / "x")]) == 2


def test_retelling_records_the_choice_and_refuses_a_storyboard_that_is_not_the_chosen_one(tmp_path):
    write_sample_album(tmp_path)
    one = ["rocket", "astronaut", "camera", "coffee", "chelsea", "flower"]
    two = ["astronaut", "grace_hopper", "rocket", "camera", "coffee"]
    sis = sis_file(tmp_path / "stories.json", [("sample-album", "alice", one), ("sample-album", "bob", two)])
    folder = tmp_path / "retell"
    assert main(["collect", "make", "vist-retelling", "--from", str(sis), "--out", str(folder)]) == 0
    made = read_manifest(folder)
    assert made["items"] == ["album-sample-album"] and made["sources"]["album-sample-album"]["sequences"] == [one, two]
    item = "album-sample-album"
    write_state(folder, "dave", {item: story(two, STORY, choice=2)})
    write_state(folder, "erin", {item: story(one, STORY + ["Someone had left flowers on the doorstep."], choice=1)})
    write_state(folder, "mallory", {item: story(one[:5], STORY, choice=2)})  # says 2, tells (part of) 1
    report = import_study(folder, tmp_path / "sis.json")
    assert report.extra["choices"] == {"sample-album": {"dave": 2, "erin": 1}}
    assert report.extra["refused"] == [f"mallory on {item}: the storyboard is not sequence 2"]
    # alice+erin on one, bob+dave on two: 2 of 4 workers each, no majority
    assert report.extra["preferred"] == {"sample-album": None}
    assert report.extra["workers_per_sequence"] == {"sample-album": {",".join(one): 2, ",".join(two): 2}}
    vist = read_official(tmp_path / "sis.json")
    assert not vist.problems and sorted(s.id for s in vist.stories) == ["retelling-1", "retelling-2", "storytelling-1",
                                                                        "storytelling-2"]
