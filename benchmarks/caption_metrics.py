"""Speed: connote's caption metrics vs pycocoevalcap (Java) on the same real corpus, in one run.

Corpus: the 2,019 human VIST test stories in ``../shared/data/vist/example-submission-file.test.json``
(or ``--vist``). For each album with two stories, the first story is the hypothesis; the album's
other story and the next album's first story are the two references (1,008 multi-sentence items,
2 references each). Both tools compute BLEU-1..4, METEOR, ROUGE-L and CIDEr-D once on already
tokenized text. pycocoevalcap's time includes starting its METEOR JVM (as every user pays it);
connote's includes loading its METEOR resources (function words, WordNet synonyms, the paraphrase
table's cache). connote's one-time paraphrase-table cache build is done before timing if absent
(reported separately). METEOR's alignment runs in connote's compiled extension (``_calign``, built
at install) unless CONNOTE_METEOR_COMPILED=0 or it is not built (then in pure Python; printed).

    python benchmarks/caption_metrics.py [--vist DIR] [--jobs N]
    python benchmarks/caption_metrics.py --whole-process [--repeat 3] [--compare /path/to/other/checkout]

``--whole-process`` times both tools as the shell runs them, each a fresh process from start to exit
(interpreter start, imports, resources, the four metrics, output): ``connote score --hyp H --ref R
--metrics bleu,meteor,rouge_l,cider --json`` against a script that runs pycocoevalcap's four scorers
on the same JSON files (its JVM start included); best of ``--repeat`` runs each, then the ratio, with the
load average before and after. ``--compare DIR`` also times ``connote score`` from another checkout (say,
main before a change) in the same run, each of its runs next to this tree's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_corpus(vist: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from connote.vist.challenge import album_story_pairs

    return album_story_pairs(vist / "example-submission-file.test.json")


def run_pycocoevalcap(res, gts) -> tuple[dict[str, float], dict[str, float]]:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge

    times, scores = {}, {}
    t = time.perf_counter()
    b, _ = Bleu(4).compute_score(gts, res, verbose=0)
    times["bleu"] = time.perf_counter() - t
    scores.update({f"Bleu_{k + 1}": b[k] for k in range(4)})
    t = time.perf_counter()
    m = Meteor()
    scores["METEOR"], _ = m.compute_score(gts, res)
    times["meteor"] = time.perf_counter() - t
    del m
    t = time.perf_counter()
    scores["ROUGE_L"], _ = Rouge().compute_score(gts, res)
    times["rouge_l"] = time.perf_counter() - t
    t = time.perf_counter()
    scores["CIDEr"], _ = Cider().compute_score(gts, res)
    times["cider"] = time.perf_counter() - t
    return times, {k: float(v) for k, v in scores.items()}


_PYCOCO_SCRIPT = """
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
res = {k: v if isinstance(v, list) else [v] for k, v in json.load(open(sys.argv[1])).items()}
gts = json.load(open(sys.argv[2]))
out = {}
b, _ = Bleu(4).compute_score(gts, res, verbose=0)
out.update({f"Bleu_{k + 1}": b[k] for k in range(4)})
out["METEOR"], _ = Meteor().compute_score(gts, res)
out["ROUGE_L"], _ = Rouge().compute_score(gts, res)
out["CIDEr"], _ = Cider().compute_score(gts, res)
print(json.dumps({k: float(v) for k, v in out.items()}))
"""


def whole_process(res, gts, repeat: int, compare: list[Path] | None = None) -> int:
    """Both tools as fresh processes from the shell: best wall-clock of ``repeat`` runs each, and the ratio.

    ``compare``: other connote source trees (e.g. main's checkout) timed the same way in the same run, each
    ``connote score`` run right after this tree's, so that both meet the same load on a shared machine."""
    import json
    import subprocess
    import tempfile

    def env_for(root: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root / "src"), os.environ.get("PYTHONPATH", "")) if p)
        return env

    with tempfile.TemporaryDirectory() as tmp:
        hyp, ref = Path(tmp) / "hyp.json", Path(tmp) / "ref.json"
        hyp.write_text(json.dumps({k: v[0] for k, v in res.items()}), encoding="utf-8")
        ref.write_text(json.dumps(gts), encoding="utf-8")
        script = Path(tmp) / "pycoco_score.py"
        script.write_text(_PYCOCO_SCRIPT, encoding="utf-8")
        score = [sys.executable, "-m", "connote", "score", "--hyp", str(hyp), "--ref", str(ref),
                 "--metrics", "bleu,meteor,rouge_l,cider", "--json"]
        commands = {"pycocoevalcap": ([sys.executable, str(script), str(hyp), str(ref)], env_for(ROOT)),
                    "connote score": (score, env_for(ROOT))}
        for other in compare or []:
            commands[f"connote score ({other})"] = (score, env_for(other))
        for name, (cmd, env) in commands.items():
            if name != "pycocoevalcap":
                subprocess.run(cmd, env=env, check=True, capture_output=True)  # cache check/build
        best: dict[str, float] = {}
        scores: dict[str, dict[str, float]] = {}
        load = [os.getloadavg()[0]]
        for _ in range(repeat):
            for name, (cmd, env) in commands.items():
                t = time.perf_counter()
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=tmp)
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t)
                data = json.loads(out.stdout)
                scores[name] = data.get("scores", data)
        load.append(os.getloadavg()[0])
    print(f"\nwhole process (best of {repeat}, wall clock, started from the shell; load average (1 min) "
          f"{load[0]:.1f} -> {load[1]:.1f}):")
    for name, (cmd, _env) in commands.items():
        print(f"  {name:<15}{best[name]:>8.2f} s   {' '.join(Path(c).name if i < 2 else c for i, c in enumerate(cmd))}")
    for name in commands:
        if name != "pycocoevalcap":
            label = "ratio" if name == "connote score" else f"ratio {name[len('connote score '):]}"
            print(f"  {label:<15}{best['pycocoevalcap'] / best[name]:>8.1f}x")
    for name in commands:
        if name == "pycocoevalcap":
            continue
        diffs = {k: abs(scores["pycocoevalcap"][k] - scores[name][k]) for k in scores["pycocoevalcap"]}
        print(f"  largest score difference{'' if name == 'connote score' else ' (' + name + ')'}: "
              + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    return 0


def _reset_connote() -> None:
    """Forget loaded METEOR resources, so that every timed connote run loads them again."""
    from connote.metrics.meteor import _resources, metric

    metric._CACHE.clear()
    _resources._TABLES.clear()
    _resources.function_words.cache_clear()
    _resources.synonym_tables.cache_clear()


def run_connote(res, gts, jobs: int) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    from connote.metrics import compute_scores

    times, scores, sigs = {}, {}, {}
    for name in ("bleu", "meteor", "rouge_l", "cider"):
        t = time.perf_counter()
        out = compute_scores(res, gts, [name], n_jobs=jobs)
        times[name] = time.perf_counter() - t
        scores.update(out.scores)
        sigs.update(out.signatures)
    return times, scores, sigs


def run_connote_together(res, gts, jobs: int) -> tuple[float, dict[str, float]]:
    """All four metrics in one ``compute_scores`` call (as ``connote score`` runs them), resources reloaded."""
    from connote.metrics import compute_scores

    _reset_connote()
    t = time.perf_counter()
    out = compute_scores(res, gts, ["bleu", "meteor", "rouge_l", "cider"], n_jobs=jobs)
    return time.perf_counter() - t, dict(out.scores)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_vist = next((p for p in (ROOT.parent / "shared" / "data" / "vist",
                                     ROOT.parent.parent / "shared" / "data" / "vist") if p.is_dir()),
                        ROOT.parent / "shared" / "data" / "vist")
    ap.add_argument("--vist", type=Path, default=default_vist)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="connote METEOR processes")
    ap.add_argument("--whole-process", action="store_true",
                    help="time both tools as fresh processes from the shell (start-up included)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool with --whole-process (best is kept)")
    ap.add_argument("--compare", type=Path, action="append", default=[],
                    help="with --whole-process: also time connote from this source tree (a checkout; repeatable)")
    args = ap.parse_args(argv)
    if not (args.vist / "example-submission-file.test.json").is_file():
        print(f"VIST stories not found under {args.vist}", file=sys.stderr)
        return 2
    res, gts = load_corpus(args.vist)
    n_refs = sum(len(v) for v in gts.values())
    words = sum(len(v[0].split()) for v in res.values()) / len(res)
    print(f"corpus: {len(res)} stories (avg {words:.1f} tokens), {n_refs} references "
          f"({n_refs / len(res):.1f} per story); cpus: {os.cpu_count()}")
    if args.whole_process:
        return whole_process(res, gts, args.repeat, args.compare)

    t = time.perf_counter()
    from connote.metrics.meteor import Meteor

    Meteor()  # builds the one-time caches (paraphrase table, WordNet) if they are absent
    print(f"connote one-time cache check/build: {time.perf_counter() - t:.2f} s (not timed below)")
    from connote.metrics.meteor import _align

    print("connote METEOR alignment: " + ("compiled extension (_calign)" if _align.COMPILED else
                                          "pure Python (extension not built or CONNOTE_METEOR_COMPILED=0)"))
    _reset_connote()

    pt, ps = run_pycocoevalcap(res, gts)
    ct, cs, sigs = run_connote(res, gts, args.jobs)
    together, cs_together = run_connote_together(res, gts, args.jobs)
    if cs_together != cs:
        print("connote scores differ between separate calls and one call", file=sys.stderr)
        return 1
    print(f"\n{'metric':<10}{'pycocoevalcap s':>17}{'connote s':>12}{'speed-up':>10}")
    for k in ("bleu", "meteor", "rouge_l", "cider"):
        print(f"{k:<10}{pt[k]:>17.2f}{ct[k]:>12.2f}{pt[k] / ct[k]:>9.1f}x")
    tp, tc = sum(pt.values()), sum(ct.values())
    print(f"{'total':<10}{tp:>17.2f}{tc:>12.2f}{tp / tc:>9.1f}x   (connote METEOR jobs={args.jobs})")
    print(f"{'one call':<10}{tp:>17.2f}{together:>12.2f}{tp / together:>9.1f}x   "
          f"(connote: the four in one compute_scores call, METEOR resources loaded again)")
    print("\nscores (pycocoevalcap vs connote, |diff|):")
    for k in ps:
        print(f"  {k:<8} {ps[k]:.9f} {cs[k]:.9f} {abs(ps[k] - cs[k]):.1e}")
    print("\nconnote signatures:")
    for k, v in sigs.items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
