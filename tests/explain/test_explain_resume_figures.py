"""A fully resumed ``connote explain`` builds no model and does not redraw figures it drew from the same rows;
new rows redraw them (issue 22, item 2). A tiny random CLIP saved to a folder, MM-SHAP under a small budget."""

from __future__ import annotations

import json

import pytest

from connote.cli import main  # noqa: E402
from tests.support import tiny_models  # noqa: E402
from tests.support.tiny_manifest import write_manifest  # noqa: E402

pytest.importorskip("transformers")


@pytest.mark.slow
def test_resumed_explain_keeps_its_figures_and_model_unbuilt(tmp_path, monkeypatch):
    from connote.explain import plots
    from connote.models import registry

    clip = tiny_models.tiny_clip(tmp_path / "clip")
    drawn: list[str] = []
    built: list[str] = []
    plot_pair, load_model = plots.plot_pair, registry.load_model
    monkeypatch.setattr(plots, "plot_pair", lambda row, image, target: (drawn.append(row["item_id"]),
                                                                         plot_pair(row, image, target)))
    monkeypatch.setattr(registry, "load_model", lambda spec, **kw: (built.append(str(spec)), load_model(spec, **kw))[1])
    out = tmp_path / "run"

    def explain(n_images: int) -> dict:
        data = write_manifest(tmp_path / "data", n_images=n_images)
        assert main(["explain", "--data", str(data), "--model", f"hf-clip:{clip}", "--out", str(out), "--budget",
                     "40", "--grid", "2", "--figures", "2", "-q"]) == 0
        return json.loads((out / "results.json").read_text())

    first = explain(2)
    index = json.loads((out / "figures" / "index.json").read_text())
    assert len(built) == 1 and sorted(drawn) == sorted(index) and len(index) == 2
    again = explain(2)
    assert len(built) == 1 and len(drawn) == 2  # no build, nothing redrawn
    assert again["n_resumed"] == 4 and again["fingerprint"] == first["fingerprint"]
    assert json.loads((out / "figures" / "index.json").read_text()) == index
    explain(3)  # two new pairs: the model is built, and the figures are drawn from the new rows
    assert len(built) == 2 and len(drawn) == 4
    (out / "figures" / index[sorted(index)[0]]).unlink()  # a figure gone: drawn again
    explain(3)
    assert len(built) == 2 and len(drawn) == 6 and (out / "figures" / index[sorted(index)[0]]).is_file()
