"""docs/architecture.md's "Recipe: add a task", run exactly as written (its code blocks extracted from the page).

The module block is written into a temporary package on ``sys.path`` (its ``connote.tasks.my_task`` path
becomes that package's), the registration line is executed against the real :data:`connote.tasks.TASKS`, the
run block runs the task with the embedded ``objects`` matcher on a CSV built from the packaged sample photos,
and ``connote report`` shows the run folder through the contract's section, with the numbers of a direct
call of the same model on the same pairs.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
PACKAGE = "recipe_task_pkg"


def recipe_blocks() -> tuple[str, str, str, list[str]]:
    """(module, registration, run, bash lines) of the recipe section."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Recipe: add a task")
    end = text.find("\n## ", start + 5)
    section = text[start:end if end != -1 else None]
    python = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    bash = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    module = next(b for b in python if b.startswith("# src/connote/tasks/my_task.py"))
    register = next(b for b in python if "TASKS.register(" in b)
    run = next(b for b in python if "run_task(" in b)
    return module, register, run, [line for b in bash for line in b.splitlines() if line.strip()]


def as_package(code: str) -> str:
    return code.replace("connote.tasks.my_task", f"{PACKAGE}.my_task")


@pytest.fixture
def recipe(tmp_path, monkeypatch):
    from connote.tasks import TASKS

    module, register, run, bash = recipe_blocks()
    pkg = tmp_path / "pkgs" / PACKAGE
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "my_task.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    assert "my-task" not in TASKS
    exec(as_package(register), {"TASKS": TASKS})  # noqa: S102 - the page's own line
    try:
        yield {"run": as_package(run), "bash": bash}
    finally:
        TASKS._entries.pop("my-task", None)
        TASKS._help.pop("my-task", None)
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def write_pairs(folder: Path) -> list[dict[str, str]]:
    """Three sample photos, each with its own SG caption (label 1) and the next photo's (label 0)."""
    from connote.media.sample import write_sample_probes

    manifest = write_sample_probes(folder / "sample")
    with open(manifest, newline="", encoding="utf-8") as f:
        sg = [r for r in csv.DictReader(f) if r["caption_kind"] == "SG"][:3]
    rows = []
    for k, r in enumerate(sg):
        image = str((manifest.parent / r["image"]).resolve())
        other = sg[(k + 1) % len(sg)]
        rows.append({"id": f"{k}-own", "image": image, "caption": r["caption"], "label": "1"})
        rows.append({"id": f"{k}-other", "image": image, "caption": other["caption"], "label": "0"})
    with open(folder / "pairs.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "image", "caption", "label"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


@pytest.mark.slow
def test_the_task_recipe_runs_as_written_and_gets_a_report_section(recipe, tmp_path, monkeypatch, capsys) -> None:
    from connote.cli import main
    from connote.media.images import load_image
    from connote.models.registry import load_model

    monkeypatch.chdir(tmp_path)
    rows = write_pairs(tmp_path)
    assert main(["tasks"]) == 0
    assert "my-task" in capsys.readouterr().out  # listed from the registration line, lazily

    namespace: dict = {}
    exec(recipe["run"], namespace)  # noqa: S102 - the page's run block, as written
    result = namespace["result"]
    printed = capsys.readouterr().out
    run = tmp_path / "runs" / "my-task"
    stored = json.loads((run / "results.json").read_text())
    items = [json.loads(x) for x in (run / "items.jsonl").read_text().splitlines()]

    # the reference: the same model asked directly for the same pairs
    model = load_model("objects")
    images = [load_image(r["image"]) for r in rows]
    ps = model.match_probability(images, [r["caption"] for r in rows], [(k, k) for k in range(len(rows))])
    expected = sum((p > 0.5) == (r["label"] == "1") for p, r in zip(ps, rows)) / len(rows)
    assert [i["p"] for i in items] == pytest.approx([float(p) for p in ps], abs=1e-6)
    assert stored["accuracy"] == pytest.approx(expected) and stored["n"] == 6 and stored["n_errors"] == 0
    assert result.results["accuracy"] == stored["accuracy"] and result.outcome.computed == 6
    assert printed.startswith(f"{stored['accuracy']} pairs: 6 item(s): 0 resumed, 6 computed now, 0 failed")
    assert stored["task"] == "my-task" and stored["task_version"] == 1 and stored["fingerprint"]

    # the page's connote run line: the same run from the shell, every row resumed, the same numbers
    run_line, line = recipe["bash"]
    assert main(run_line.split("#", 1)[0].split()[1:]) == 0
    assert f"run folder: {Path('runs/my-task')} (results.json)" in capsys.readouterr().out
    again = json.loads((run / "results.json").read_text())
    assert again["n_resumed"] == 6 and again["n_computed_this_run"] == 0 and again["accuracy"] == stored["accuracy"]

    # the page's bash line, marked as needing the run above, now runs: the contract's section
    command = line.split("#", 1)[0].split()
    assert command == ["connote", "report", "runs/my-task"]
    assert main([*command[1:], "--json"]) == 0
    (section,) = json.loads(capsys.readouterr().out)["sections"]
    assert section["kind"] == "my-task" and section["title"] == "My task: accuracy of p(match) > 0.5."
    table, speed = section["tables"]  # the contract's table, then the run's speed
    assert table["header"] == ["Run", "Accuracy", "n", "errors"] and "speed" in speed["title"].lower()
    assert table["rows"] == [["objects", f"{expected:.4f}", "6", "0"]]
    assert table["values"][0]["accuracy"] == pytest.approx(expected)
    assert main(command[1:]) == 0 and f"{expected:.4f}" in capsys.readouterr().out

    # rerun: every row is resumed from the store, the numbers are the same
    exec(recipe["run"], namespace)  # noqa: S102
    assert namespace["result"].outcome.resumed == 6 and namespace["result"].results["accuracy"] == stored["accuracy"]

    # connote runs: the run is complete while the task's code is the code installed; an edit of the task's module
    # (the page's file, here in its package on sys.path) makes it stale, naming what changed
    from connote.core import code

    capsys.readouterr()
    assert main(["runs", "runs", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert (entry["task"], entry["state"], entry["changed"]) == ("my-task", "complete", [])
    assert set(stored["code"]) == {"task", "model"}
    source = tmp_path / "pkgs" / PACKAGE / "my_task.py"
    source.write_text(source.read_text() + "\n# an edit of the task's code\n")
    code.code_digest.cache_clear()
    assert main(["runs", "runs", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert (entry["state"], entry["changed"]) == ("stale", ["task code"])
