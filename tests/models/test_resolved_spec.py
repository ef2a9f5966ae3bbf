"""One resolved spec per run (issue 37, item 3): ``cv-probes run`` checks its model spec once, on a fresh and on a
resumed run, and the built model describes itself once; the lazy loader, the identity and the factory share the
:class:`~connote.models.registry.ResolvedSpec`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from connote.cli import main  # noqa: E402
from connote.models import registry  # noqa: E402
from tests.support import tiny_models  # noqa: E402
from tests.support.tiny_manifest import write_manifest  # noqa: E402


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_clip(tmp_path_factory.mktemp("clip") / "clip")


@pytest.fixture()
def counted(monkeypatch) -> dict[str, int]:
    """Calls of check_spec and of the CLIP backend's describe()."""
    counts = {"check_spec": 0, "describe": 0}
    check = registry.check_spec

    def counting_check(spec):
        counts["check_spec"] += 1
        return check(spec)

    monkeypatch.setattr(registry, "check_spec", counting_check)
    cls = registry.MODELS.get("hf-clip").factory().__self__
    describe = cls.describe

    def counting_describe(self):
        counts["describe"] += 1
        return describe(self)

    monkeypatch.setattr(cls, "describe", counting_describe)
    return counts


def run(data: Path, spec: str, out: Path) -> dict:
    assert main(["cv-probes", "run", "--data", str(data), "--model", spec, "--out", str(out), "--quiet"]) == 0
    return json.loads((out / "results.json").read_text())


def test_a_run_checks_its_spec_once_and_describes_the_model_once(tmp_path, clip_dir, counted):
    data, out = write_manifest(tmp_path / "data"), tmp_path / "run"
    first = run(data, f"hf-clip:{clip_dir}?threshold=0.2", out)
    assert counted == {"check_spec": 1, "describe": 1} and first["n_computed_this_run"] == 6
    counted.update(check_spec=0, describe=0)
    again = run(data, f"hf-clip:{clip_dir}?threshold=0.2", out)
    assert counted == {"check_spec": 1, "describe": 0}  # resumed: described from the store's memory, not built
    assert again["n_resumed"] == 6 and again["model_fingerprint"] == first["model_fingerprint"]


def test_a_task_whose_results_read_its_model_shares_the_runs_spec(tmp_path, counted, capsys):
    """vmc synth records the Batch API answers no request takes (model_results reads them from the run's own
    model): the spec is still checked once, fresh and resumed."""
    for _ in range(2):
        assert main(["vmc", "synth", "--out", str(tmp_path / "synth"), "--max-failed", "1", "--quiet"]) == 0
        assert counted["check_spec"] == 1
        counted.update(check_spec=0)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["unmatched_answers"] == 0


def test_the_resolved_spec_is_what_the_factory_and_the_identity_get(clip_dir, monkeypatch):
    from connote.models.lazy import LazyModel, model_identity

    resolved = registry.check_spec(f"hf-clip:{clip_dir}?threshold=0.2")
    assert resolved.name == "hf-clip" and resolved.weights == str(clip_dir) and resolved.local
    assert str(resolved) == f"hf-clip:{clip_dir}?threshold=0.2"
    monkeypatch.setattr(registry, "check_spec", lambda spec: pytest.fail(f"checked again: {spec}"))
    lazy = LazyModel(resolved, clip_dir.parent / "run")
    assert lazy.resolved is resolved and lazy.identity() == model_identity(resolved)
    assert lazy.model.threshold == pytest.approx(0.2)


def test_spec_options_are_converted_by_the_one_checker():
    resolved = registry.check_spec("openai:m?adaptive=no&top_logprobs=5&backoff=0.5&prompt=x")
    assert resolved.options == {"adaptive": False, "top_logprobs": 5, "backoff": 0.5, "prompt": "x"}
    assert registry.check_spec("openai-video:m").options == {"max_side": 512, "text_first": True}


@pytest.mark.parametrize(("query", "message"), [
    ("adaptive=maybe", "model option adaptive='maybe' of openai: expected true/false"),
    ("top_logprobs=1.5", "model option top_logprobs='1.5' of openai: expected an integer"),
    ("backoff=nan", "model option backoff='nan' of openai: expected a finite number"),
    ("backoff=soon", "model option backoff='soon' of openai: expected a number"),
])
def test_a_bad_option_is_one_line_naming_it_and_what_is_accepted(query, message):
    from connote.core.errors import InputError

    with pytest.raises(InputError) as caught:
        registry.check_spec(f"openai:m?{query}")
    assert str(caught.value) == message
