"""``docs/architecture.md``'s "Recipe: add a metric", run as written: its code blocks are taken from the page,
the module is written to a temporary folder searched by ``connote.metrics``, the registration line is run
in ``connote.metrics.registry``, and ``connote score`` takes the new metric and its option with no other edit."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import connote.metrics
import connote.metrics.registry as registry
from connote.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
HYP = {"1": "a cat sits", "2": "two dogs play in the snow"}
REF = {"1": ["a cat sits on the mat", "a dog"], "2": ["dogs play"]}


def recipe_blocks() -> list[tuple[str, str]]:
    """(file named by the block's first line, code) of each python block of the metric recipe."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Recipe: add a metric", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    out = []
    for code in blocks:
        first = code.splitlines()[0]
        assert first.startswith("# src/"), f"a recipe block must name its file on its first line: {first!r}"
        out.append((first[2:].split()[0], code))
    return out


@pytest.fixture
def recipe_metric(tmp_path, monkeypatch):
    """The recipe applied: its module importable as ``connote.metrics.<name>``, its registration run."""
    blocks = recipe_blocks()
    ext = tmp_path / "metrics"
    ext.mkdir()
    registered, written = [], []
    for path, code in blocks:
        if path == "src/connote/metrics/registry.py":
            before = set(registry.METRICS.names())
            exec(compile(code, f"{PAGE}:{path}", "exec"), dict(vars(registry)))  # noqa: S102 - the page's own line
            registered += sorted(set(registry.METRICS.names()) - before)
        else:
            assert path.startswith("src/connote/metrics/"), path
            (ext / Path(path).name).write_text(code, encoding="utf-8")
            written.append("connote.metrics." + Path(path).stem)
    monkeypatch.setattr(connote.metrics, "__path__", [*connote.metrics.__path__, str(ext)])
    yield [p for p, _ in blocks], registered
    for name in registered:
        registry.METRICS._entries.pop(name, None)
        registry.METRICS._help.pop(name, None)
    for module in written:
        sys.modules.pop(module, None)


def _files(tmp_path):
    hyp, ref = tmp_path / "h.json", tmp_path / "r.json"
    hyp.write_text(json.dumps(HYP), encoding="utf-8")
    ref.write_text(json.dumps(REF), encoding="utf-8")
    return ["--hyp", str(hyp), "--ref", str(ref)]


def test_the_recipe_touches_two_files_and_registers_one_metric(recipe_metric) -> None:
    files, registered = recipe_metric
    assert files == ["src/connote/metrics/mymetric.py", "src/connote/metrics/registry.py"]
    assert registered == ["my"]


def test_connote_score_takes_the_new_metric_and_its_option(recipe_metric, tmp_path, capsys) -> None:
    args = _files(tmp_path)
    # item 1: P = 3/3, R = 3/6 (best reference); item 2: P = 2/6, R = 2/2
    assert main(["score", *args, "--metrics", "my", "--my-alpha", "0.3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"MY  {(0.3 * 1 + 0.7 * 0.5 + 0.3 * 2 / 6 + 0.7 * 1) / 2:.6f}" == "MY  0.725000"
    assert "# my: my|alpha:0.3|tok:none|connote-" in out
    # the declared default (0.5) when the flag is not given
    assert main(["score", *args, "--metrics", "my,bleu"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "MY      0.708333" and "Bleu_1  0.555556" in out


def test_the_new_option_is_documented_and_checked_from_its_declaration(recipe_metric, tmp_path, capsys) -> None:
    assert main(["score", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--my-alpha <float> my: weight of word precision against recall (>= 0 and <= 1) [default: 0.5]" \
        in help_text
    assert main(["score", *_files(tmp_path), "--metrics", "my", "--my-alpha", "2"]) == 2
    err = capsys.readouterr().err
    assert "--my-alpha (option my_alpha): '2': must be a finite number >= 0 and <= 1" in err
    assert "Traceback" not in err


def test_the_recipe_metric_keeps_the_metric_contract(recipe_metric, tmp_path) -> None:
    """The recipe's metric passes what tests/metrics/test_contract.py asks of every registered metric."""
    from tests.metrics import test_contract as contract

    case = contract.Case(varied={"my_alpha": lambda stand: 0.3}, means={"MY": "MY"})
    for check in contract.CHECKS:
        check("my", case, contract.Stand(tmp_path, tmp_path))
