"""The recipes of ``docs/architecture.md`` for a model backend and a probe suite, run exactly as written.

Each fenced block whose first line is ``# file: PATH`` is written to PATH in a package folder of its own
(one per recipe), as a contributor would copy it. Installing the package is what ``pip install -e .`` does
for discovery: its ``pyproject.toml`` (the block as written) gives the ``connote.plugins`` entry points,
written here as the ``entry_points.txt`` of a ``.dist-info`` folder on ``sys.path``, which
``importlib.metadata`` reads like any installed distribution. Then the commands the recipe names run
in-process, and the numbers they print are checked.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

from connote.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def files_of(title: str) -> dict[str, str]:
    """``# file: PATH`` -> the block's text (the marker line left out)."""
    found = {}
    for _lang, body in FENCE.findall(section(title)):
        first, _, rest = body.partition("\n")
        if first.startswith("# file: "):
            found[first[len("# file: "):].strip()] = rest
    return found


def install(files: dict[str, str], root: Path) -> Path:
    """Write the recipe's files under ``root`` and the distribution metadata ``pip install`` would write."""
    root.mkdir(parents=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    project = tomllib.loads(files["pyproject.toml"])["project"]
    info = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    eps = project["entry-points"]["connote.plugins"]
    (info / "entry_points.txt").write_text("[connote.plugins]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    return root


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Install recipes by title; afterwards connote forgets them (their modules and registrations)."""
    from connote.core import plugins

    def _install(*titles: str) -> None:
        for k, title in enumerate(titles):
            monkeypatch.syspath_prepend(str(install(files_of(title), tmp_path / f"pkg{k}")))
        plugins.reset()

    yield _install
    for name in [m for m in sys.modules if m.split(".")[0] in ("my_vlm", "my_suite")]:
        del sys.modules[name]
    monkeypatch.undo()
    plugins.reset()


def test_the_recipes_name_their_files() -> None:
    assert sorted(files_of("Recipe: add a model backend")) == ["my_vlm/backend.py", "my_vlm/plugin.py",
                                                                "pyproject.toml"]
    assert sorted(files_of("Recipe: add a probe suite")) == ["my_suite/data.py", "my_suite/plugin.py",
                                                              "my_suite/task.py", "pyproject.toml"]


def test_the_model_recipe_as_written(installed, tmp_path, capsys) -> None:
    installed("Recipe: add a model backend")
    from connote.core.plugins import entry_point_modules

    assert "my_vlm.plugin" in entry_point_modules()
    assert main(["models", "--capability", "match", "--json"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["my-vlm"] == {"name": "my-vlm", "capabilities": ["match"], "inputs": "images", "weights": "none",
                                "help": "Colour matcher: p(match) is high when the caption names the image's "
                                        "dominant colour."}
    assert main(["models", "--capability", "match"]) == 0
    assert any(line.split()[:2] == ["my-vlm", "match"] for line in capsys.readouterr().out.splitlines())

    out = tmp_path / "runs" / "my-vlm"
    assert main(["probe", "--model", "my-vlm?high=0.8", "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert rows and results["n_errors"] == 0
    for r in rows:  # no caption of the sample probe set names a colour: every pair scores 1 - high
        assert not {"red", "green", "blue"} & set(r["caption"].lower().split())
        assert r["p_match"] == pytest.approx(0.2), r
    for cell, c in results["cells"].items():  # results.json's accuracies are the rows', and they are printed
        mine = [r["correct"] for r in rows if f"{r['image_kind']}-{r['caption_kind']}" == cell]
        assert c["accuracy"] == pytest.approx(np.mean(mine)), cell
    assert "| Accuracy (%) | 0.00 | 0.00 | 100.00 | 0.00 | 0.00 |" in printed  # only PG images / SG captions
    assert main(["probe", "--model", "my-vlm?high=x", "--out", str(tmp_path / "bad"), "-q"]) == 2
    assert "model option high='x' of my-vlm: expected a number" in capsys.readouterr().err


def test_the_probe_suite_recipe_as_written(installed, tmp_path, capsys) -> None:
    installed("Recipe: add a model backend", "Recipe: add a probe suite")
    assert main(["tasks", "--json"]) == 0
    tasks = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert tasks["my-suite"]["capability"] == "match" and tasks["my-suite-mmshap"]["capability"] == "mask"

    out = tmp_path / "runs" / "my-suite"
    assert main(["suite", "run", "my-suite", "--model", "my-vlm", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["accuracy"]["correct"] == 3 and results["accuracy"]["n"] == 4
    assert results["accuracy"]["accuracy"] == 0.75
    assert re.search(r"\|\s*75\.00\s*\|\s*3\s*\|\s*4\s*\|", printed), printed
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert [p for r in rows for p in r["scores"]] == pytest.approx([0.9, 0.1] * 3 + [0.1, 0.1])

    assert main(["report", str(out), "--json"]) == 0
    (sec,) = json.loads(capsys.readouterr().out)["sections"]
    assert sec["kind"] == "my-suite" and sec["tables"][0]["rows"][0][1:] == ["75.00"]
    # a foreign folder is not this kind's
    from connote.core.registry import import_target
    from connote.report.document import RUN_KINDS

    assert import_target(RUN_KINDS["my-suite"]).recognise(tmp_path) is None
