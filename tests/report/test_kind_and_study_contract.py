"""Every registered report run kind and every registered study, through the public commands (registry-wide).

As ``tests/models/test_backend_contract.py`` does for backends, this module is parametrised over the registries
the plugins fill, as their public listings give them: every run kind a report can recognise
(:func:`connote.report.load.available_kinds`: the kinds of :data:`~connote.report.document.RUN_KINDS` and the
kinds the registered tasks declare through the task contract) and :data:`connote.collect.STUDIES`. A run kind
that no registered task makes needs a builder here (a new one fails ``test_every_run_kind_has_a_builder``); a
task's kind without one gets its folder from ``connote run TASK`` on the task's sample. Each run kind must
recognise the folder its task's command wrote and return None for every other kind's folder (where two kinds
can read one folder, the recognition order must give it to the right one); each study must be made from the
sample inputs by ``connote collect make`` and read back by ``connote collect import``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from connote.cli import main
from connote.collect import STUDIES
from connote.models.registry import MODELS, register_model
from connote.report.document import RUN_KINDS
from connote.report.load import available_kinds, recognise
from tests.support.potato_state import potato_state


class Writer:
    """A backend a test adds: a fixed p(match) rule and a fixed text (both tasks' capabilities, no weights)."""

    backend = "contract-kinds"

    def __init__(self, weights: str | None = None) -> None:
        pass

    def describe(self) -> dict:
        return {"backend": self.backend}

    def match_probability(self, images, captions, pairs):
        return [0.25 + 0.5 * (len(captions[c]) % 2) for _, c in pairs]

    def generate(self, requests):
        return [f"we saw {len(r.images)} things" for r in requests]


def _labels(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"v{i},{r},fluency,{(i + (r == 'B')) % 2}" for i in range(6) for r in "AB"]
    path.write_text("item_id,rater,criterion,label\n" + "\n".join(rows) + "\n")
    return path


def _vmc_human_eval(root: Path, caption_run: Path) -> Path:
    from connote.collect.importing import import_study
    from connote.collect.project import read_manifest
    from connote.vmc.studies.evaluation import CRITERIA, make

    study = make([caption_run], caption_run / "sample" / "videos", root / "vmc-eval-study")
    manifest = read_manifest(study)
    attention = {iid: {c: "no" for c in CRITERIA} for iid in manifest["attention"]}
    for k, rater in enumerate(("r1", "r2")):
        potato_state(study, rater, {**{i: {c: ("yes", "no")[(j + k) % 2] for c in CRITERIA}
                                        for j, i in enumerate(manifest["items"])}, **attention})
    out = root / "vmc-human-eval"
    assert import_study(study, out).imported == 2 * len(manifest["items"])
    return out


def _study_reliability(root: Path) -> Path:
    """A probes-votes import of three raters: its reliability block (what the study kind reads)."""
    from connote.collect.importing import import_study
    from connote.collect.project import read_manifest
    from tests.support.simulated import first_probes

    probes, _ = first_probes(root / "votes-sample", 5)
    study = root / "votes-study"
    assert main(["collect", "make", "probes-votes", "--data", str(probes), "--out", str(study)]) == 0
    manifest = read_manifest(study)
    for k, rater in enumerate(("r1", "r2", "r3")):
        potato_state(study, rater, {**{i: {"match": ("match", "no match")[(j * k) % 2]}
                                        for j, i in enumerate(manifest["items"])}, **manifest["attention"]})
    out = root / "votes" / "votes.csv"
    import_study(study, out, n_boot=50)
    return out.with_name("votes.reliability.json")


def _correlation(root: Path) -> Path:
    ratings = root / "ratings.csv"
    ratings.write_text("story_id,rating,rater\n" + "".join(f"s{k},{1 + k % 5},a\ns{k},{1 + (k * 3) % 5},b\n"
                                                           for k in range(1, 9)))
    scores = root / "scores.json"
    scores.write_text(json.dumps({f"s{k}": {"METEOR": 0.1 * k, "CIDEr": 0.3 * (k % 3)} for k in range(1, 9)}))
    out = root / "correlation"
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--n-boot", "30", "--no-progress",
                 "--out", str(out)]) == 0
    return out


def _story(root: Path) -> Path:
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(root / "vist-sample")
    out = root / "story"
    assert main(["story", "generate", str(paths["template"]), "--images", str(paths["images"]), "--model",
                 "contract-kinds", "--out", str(out), "--no-progress"]) == 0
    return out


#: Run kind -> builder(root, built) of a folder its task's command wrote (``built`` holds the folders so far).
BUILDERS: dict[str, Callable[[Path, dict[str, Path]], Path]] = {
    "cv-probes": lambda root, _: _cmd(["probe", "--model", "contract-kinds", "-q"], root / "probe"),
    "cv-probes-explain": lambda root, _: _cmd(["explain", "--model", "hf-blip-itm:" + _blip(root), "--sample", "2",
                                               "--budget", "20", "--grid", "2", "-q"], root / "explain"),
    "vist-storytelling": lambda root, _: _story(root),
    "vmc-captioning": lambda root, _: _cmd(["metaphor", "caption", "--model", "contract-kinds", "-q"],
                                           root / "captions"),
    "vmc-human-eval": lambda root, built: _vmc_human_eval(root, built["vmc-captioning"]),
    "metric-correlation": lambda root, _: _correlation(root),
    "study": lambda root, _: _study_reliability(root),
    "agreement": lambda root, _: _labels(root / "study" / "labels.csv"),
    **{suite: (lambda s: lambda root, _: _cmd(["suite", "run", s, "--model", "contract-kinds", "-q"], root / s))(suite)
       for suite in ("svo-probes", "valse", "winoground", "sugarcrepe")},
}


def kind_names() -> list[str]:
    """Every run kind a report recognises, in recognition order (the public listing)."""
    return list(available_kinds())


def task_of_kind() -> dict[str, str]:
    """Run kind -> the registered task that makes its folders (the task's ``report_kind``, else its name)."""
    from connote.tasks import TASKS

    return {getattr(TASKS.get(name), "report_kind", None) or name: name for name in TASKS.names()}


def _task_run(task: str, root: Path) -> Path:
    """``connote run TASK`` on the task's own sample: the test's writer, or a tiny BLIP for the MM-SHAP tasks
    (one pair, a small call budget)."""
    from connote.tasks import TASKS
    from connote.tasks.running import option_fields

    cls = TASKS.get(task)
    fields = {f.name for f in option_fields(cls)}
    small = {"sample": "1", "budget": "40", "grid": "2"}
    sets = [arg for key, value in small.items() if key in fields for arg in ("--set", f"{key}={value}")]
    model = "hf-blip-itm:" + _blip(root) if cls.capability == "mask" else "contract-kinds"
    return _cmd(["run", task, "--model", model, "--no-progress", *sets], root / task)


def builder(kind: str) -> Callable[[Path, dict[str, Path]], Path] | None:
    """The builder of a kind's folder: its own in BUILDERS, else a run of the task that declares it."""
    if kind in BUILDERS:
        return BUILDERS[kind]
    task = task_of_kind().get(kind)
    return None if task is None else (lambda root, _: _task_run(task, root))


def _cmd(args: list[str], out: Path) -> Path:
    assert main([*args, "--out", str(out)]) == 0, args
    return out


def _blip(root: Path) -> str:
    from tests.support import tiny_models

    folder = root / "tiny-blip"
    return str(folder if (folder / "config.json").is_file() else tiny_models.tiny_blip(folder))


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("torch")
    pytest.importorskip("av")
    register_model("contract-kinds", Writer, capabilities={"match", "generate"}, weights="none")
    root = tmp_path_factory.mktemp("kinds")
    built: dict[str, Path] = {}
    try:
        for name in [*BUILDERS, *(k for k in kind_names() if k not in BUILDERS)]:  # a builder may use an earlier
            made = builder(name)                                                    # builder's folder
            assert made is not None, f"no builder for run kind {name}"
            built[name] = made(root, built)
    finally:
        MODELS._entries.pop("contract-kinds", None)
        MODELS._help.pop("contract-kinds", None)
    return built


def test_every_run_kind_has_a_builder() -> None:
    """A kind of the report's table without a builder here, or a builder for a kind no longer listed, fails; the
    kinds the tasks declare are built by ``connote run`` unless they have a builder of their own."""
    assert set(RUN_KINDS) <= set(kind_names())
    assert [k for k in kind_names() if builder(k) is None] == []
    assert sorted(set(BUILDERS) - set(kind_names())) == []


def test_every_registered_task_declares_a_kind_a_report_recognises() -> None:
    assert sorted(set(task_of_kind()) - set(kind_names())) == []


@pytest.mark.slow  # builds a run folder of every kind (a tiny BLIP explained, clips captioned): minutes here
@pytest.mark.parametrize("name", kind_names())
def test_a_run_kind_recognises_its_folder_and_no_other(name: str, folders: dict[str, Path]) -> None:
    kind = available_kinds()[name]
    mine = kind.recognise(folders[name])
    assert mine is not None and mine.kind == name
    assert recognise(folders[name]).kind == name  # in recognition order, through the registry
    section = kind.section([mine])
    assert section.kind == name and (section.tables or section.figures)
    for other, folder in folders.items():
        if other == name:
            continue
        try:
            theirs = kind.recognise(folder)
        except Exception as exc:  # noqa: BLE001 - a kind may refuse a folder it half-recognises, never crash
            pytest.fail(f"{name} on a {other} folder raised {type(exc).__name__}: {exc}")
        if theirs is not None:  # two kinds read one folder: the recognition order must settle it
            order = kind_names()
            assert order.index(other) < order.index(name), f"{name} takes {other}'s folder before {other} does"
            assert recognise(folder).kind == other


def _damaged(root: Path) -> dict[str, Path]:
    """Folders no kind may claim: empty, unreadable JSON, another task's results, the wrong JSON shapes, a file."""
    folders = {name: root / name for name in ("empty", "malformed", "other-task", "wrong-shapes")}
    for folder in folders.values():
        folder.mkdir()
    for name in ("results.json", "run.json", "correlation.json", "reliability.json"):
        (folders["malformed"] / name).write_text('{"task": ', encoding="utf-8")
        (folders["wrong-shapes"] / name).write_text("[1, 2]", encoding="utf-8")
    (folders["other-task"] / "results.json").write_text(json.dumps({"task": "no-such-task", "task_version": 1}))
    (folders["other-task"] / "run.json").write_text(json.dumps({"task": "no-such-task"}))
    (folders["wrong-shapes"] / "labels.csv").write_text("", encoding="utf-8")
    folders["a file"] = root / "notes.txt"
    folders["a file"].write_text("not a run", encoding="utf-8")
    return folders


@pytest.mark.parametrize("name", kind_names())
def test_a_run_kind_claims_no_damaged_or_foreign_folder(name: str, tmp_path: Path) -> None:
    """Each kind returns None for such a folder, or refuses it with one line naming the file (InputError);
    through the registry the folder is an InputError, never another exception."""
    from connote.core.errors import InputError

    kind = available_kinds()[name]
    for what, folder in _damaged(tmp_path).items():
        try:
            assert kind.recognise(folder) is None, f"{name} claims the {what} folder"
        except InputError as exc:
            assert len(str(exc).splitlines()) == 1 and str(tmp_path) in str(exc), (what, str(exc))
        with pytest.raises(InputError):
            recognise(folder)


# ---- studies --------------------------------------------------------------------------------------------

#: Study -> the `connote collect make` arguments from the sample inputs (docs/collect.md's runnable example).
def _synth_table(sample: Path) -> Path:
    """A two-row ``metaphors.json`` (the table ``vmc synth`` writes) over the sample's photos."""
    import json

    photos = sorted(p.name for p in (sample / "images").iterdir())[:2]
    rows = [{"id": f"s{k}", "image": name, "caption": "the dog is as loyal as a friend", "kind": "metaphor",
             "source_caption": "a dog sits"} for k, name in enumerate(photos)]
    table = sample / "metaphors.json"
    table.write_text(json.dumps(rows), encoding="utf-8")
    return table


STUDY_ARGS: dict[str, Callable[[Path], list[str]]] = {
    "probes-validation": lambda s: ["--from", str(s / "probes.csv")],
    "probes-votes": lambda s: ["--from", str(s / "probes.csv"), "--per-item", "3"],
    "vist-storytelling": lambda s: ["--from", str(s / "sample.story-in-sequence.json"), "--images",
                                    str(s / "images")],
    "vist-retelling": lambda s: ["--from", str(s / "sample.story-in-sequence.json"), "--images", str(s / "images")],
    "vist-descriptions": lambda s: ["--from", str(s / "images")],
    "vist-descriptions-in-sequence": lambda s: ["--from", str(s / "sample.story-in-sequence.json")],
    "vmc-annotation": lambda s: ["--videos", str(s / "cap" / "sample" / "videos")],
    "vmc-evaluation": lambda s: ["--from", str(s / "cap"), "--videos", str(s / "cap" / "sample" / "videos")],
    "vmc-synth-check": lambda s: ["--data", str(_synth_table(s)), "--images", str(s / "images")],
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("study-sample")
    assert main(["collect", "sample", str(root)]) == 0
    register_model("contract-kinds", Writer, capabilities={"match", "generate"}, weights="none")
    try:
        assert main(["metaphor", "caption", "--model", "contract-kinds", "--out", str(root / "cap"), "-q"]) == 0
    finally:
        MODELS._entries.pop("contract-kinds", None)
        MODELS._help.pop("contract-kinds", None)
    return root


def test_every_study_has_a_builder() -> None:
    assert sorted(STUDIES) == sorted(STUDY_ARGS)


@pytest.mark.slow  # makes every study (the sample clips captioned first)
@pytest.mark.parametrize("name", sorted(STUDY_ARGS))
def test_a_study_is_made_from_the_sample_and_read_back(name: str, sample: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("av")
    from connote.collect.project import read_manifest

    study = tmp_path / name
    assert main(["collect", "make", name, *STUDY_ARGS[name](sample), "--out", str(study)]) == 0
    manifest = read_manifest(study)
    assert manifest["study"] == name and manifest["items"], name
    assert (study / "config.yaml").is_file()
    capsys.readouterr()
    assert main(["collect", "status", str(study), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["study"] == name, status
    # no annotator has answered: the import reads the study back and says so (exit 1, nothing written)
    assert main(["collect", "import", str(study), "--out", str(tmp_path / "imported"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["study"] == name and report["imported"] == 0
