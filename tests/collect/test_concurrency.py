"""Many annotators at once on one Potato server over loopback: nothing lost, nothing duplicated."""

from __future__ import annotations

import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from connote.collect.importing import import_study
from connote.collect.project import read_manifest
from connote.collect.status import study_status
from connote.cv_probes.manifest import read_probe_manifest
from tests.support.potato_driver import Annotator

pytestmark = [pytest.mark.browser, pytest.mark.slow]
N_ANNOTATORS = 24  # the study asks for 24 annotators per item
LIMIT_SECONDS = 150


def vote(k: int, item: str) -> str:
    return "match" if (k + len(item)) % 2 else "no match"


def test_two_dozen_annotators_at_once(studies, tmp_path):
    server = studies["servers"]["crowd"]
    manifest = read_manifest(server.folder)
    items = manifest["items"]
    names = [f"worker{k:02d}" for k in range(N_ANNOTATORS)]
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(N_ANNOTATORS)

    def annotate(k: int) -> list[str]:
        name = names[k]
        ann = Annotator(server, name)
        start.wait(timeout=60)  # everyone submits at the same time

        def answers(inst):
            iid = inst["instance_id"]
            want = manifest["attention"].get(iid, {}).get("match")
            if want and k == N_ANNOTATORS - 1:  # the last worker fails every attention check
                want = "match" if want == "no match" else "no match"
            want = want or vote(k, iid)
            return {f"match:::{want}": want}

        def timed(inst):
            t = time.monotonic()
            out = answers(inst)
            with lock:
                latencies.append(time.monotonic() - t)
            return out

        t0 = time.monotonic()
        done = ann.work(timed)
        with lock:
            latencies.append(time.monotonic() - t0)
        return done

    t0 = time.monotonic()
    with ThreadPoolExecutor(N_ANNOTATORS) as pool:
        done = list(pool.map(annotate, range(N_ANNOTATORS)))
    wall = time.monotonic() - t0
    answers = sum(len(d) for d in done)
    per_worker = [x for x in latencies if x > 0.001]
    print(f"\nconcurrency: {N_ANNOTATORS} annotators at once, {answers} answers ({len(items)} items each + "
          f"attention checks, 3 requests per answer) in {wall:.1f} s = {3 * answers / wall:.1f} requests/s; "
          f"per annotator {statistics.median(per_worker):.1f} s median, {max(per_worker):.1f} s max")
    assert wall < LIMIT_SECONDS
    for d in done:
        assert set(items) <= set(d) and len(d) == len(set(d))  # every item, none twice
    # what Potato stored: each item answered once per annotator, with the answer given
    for k, name in enumerate(names):
        state = json.loads((server.folder / "annotation_output" / name / "user_state.json").read_text())
        stored = state["instance_id_to_label_to_value"]
        for iid in items:
            pairs = stored[iid]
            assert len(pairs) == 1 and pairs[0][0]["name"] == vote(k, iid), (name, iid, pairs)
    # import: the last worker is excluded (attention checks), so every item is one answer short
    out = tmp_path / "crowd.csv"
    report = import_study(server.folder, out)
    assert [r.split(":")[0] for r in report.excluded] == [names[-1]]
    assert report.incomplete == {iid: N_ANNOTATORS - 1 for iid in items}
    votes = {it.item_id: it.human_votes for it in read_probe_manifest(out)}
    for iid in items:
        assert votes[iid] == [1 if vote(k, iid) == "match" else 0 for k in range(N_ANNOTATORS - 1)]
    status = study_status(server.folder)
    assert status["in_progress"] == len(items) and status["answers"] == (N_ANNOTATORS - 1) * len(items)
