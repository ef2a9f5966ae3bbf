"""Table 1's BERT-F1, ACS and ACD columns through the metrics engine, with the shipped MiniLM."""

import json

import pytest

from connote.cli import main
from connote.media.embedded import load_text_encoder, minilm_path
from connote.vmc.scoring import score_captions

REFS = {
    "v1": ["the burger is as comforting as a relationship", "the burger is as warm as a hug"],
    "v2": ["the city is as busy as a beehive", "the street is as crowded as an anthill"],
    "v3": ["the runner is as fast as a cheetah", "the man is as quick as lightning"],
}
CAPTIONS = {
    "v1": "the burger is as comforting as a hug",
    "v2": "a busy city street at night",          # outside the template: CS = 1, so ACS 1 and ACD 0 for it
    "v3": "the runner is as fast as the wind",
}


def test_acs_acd_and_bert_f1_columns():
    encoder = load_text_encoder()
    res = score_captions(CAPTIONS, REFS, metrics=("bleu", "rouge_l", "cider", "acs_acd"), n_boot=200,
                         bertscore_model=minilm_path(), concept_encoder=encoder)
    assert res.outside_template == ["v2"]
    pv = res.per_video
    assert pv["v2"]["ACS"] == 1.0 and pv["v2"]["ACD"] == 0.0
    for v in ("v1", "v3"):
        assert -1.0 <= pv[v]["ACS"] < 1.0
        assert pv[v]["ACD"] == pytest.approx(pv[v]["BERTScore_F1"] * (1 - pv[v]["CS"]))
    assert res.table["ACS"] == pytest.approx(sum(pv[v]["ACS"] for v in REFS) / 3)
    assert res.table["ACD"] == pytest.approx(sum(pv[v]["ACD"] for v in REFS) / 3)
    assert res.table["BERT-F1"] == pytest.approx(sum(pv[v]["BERTScore_F1"] for v in REFS) / 3)
    lo, hi = res.intervals["ACD"]
    assert lo <= res.table["ACD"] <= hi
    assert any(k.startswith("acs_acd") or "acs_acd" in v for k, v in res.signatures.items())


def test_cli_embedded_encoders(tmp_path, capsys):
    from connote.runs import RunStore

    run = tmp_path / "run"
    with RunStore(run) as store:  # a caption run as `connote metaphor caption` leaves it
        fp = store.register({"backend": "fixed"})
        store.put(fp, [{"item_id": v, "video_id": v, "caption": c, "error": None} for v, c in CAPTIONS.items()])
    (run / "run.json").write_text(json.dumps({"fingerprint": fp}))
    (run / "captions.jsonl").write_text("".join(json.dumps({"question_id": v, "video_id": v, "text": c}) + "\n"
                                                for v, c in CAPTIONS.items()))  # what `metaphor score` reads
    table = tmp_path / "vmc.csv"
    table.write_text("unique_id,annotator_1,annotator_2,annotator_3\n"
                     + "".join(f"{v},{r[0]},{r[1]},{r[0]}\n" for v, r in REFS.items()))
    assert main(["metaphor", "score", str(run), "--refs", str(table), "--bootstrap", "0", "--json",
                 "--bertscore-model", "embedded", "--concept-encoder", "embedded"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["table"]["ACS"] is not None and row["table"]["ACD"] is not None
    assert row["table"]["BERT-F1"] is not None
    assert main(["metaphor", "score", str(run), "--refs", str(table), "--concept-encoder", "embedded"]) == 2
