"""Potato's answer files written as Potato writes them, for import tests that need no server."""

from __future__ import annotations

import json
from pathlib import Path


def potato_state(folder: Path, name: str, answers: dict[str, dict[str, str]]) -> None:
    """One annotator's ``annotation_output/<name>/user_state.json`` as Potato writes it (radio answers)."""
    state = {"user_id": name, "instance_id_ordering": list(answers),
             "instance_id_to_label_to_value": {iid: [[{"schema": c, "name": v}, v] for c, v in by.items()]
                                               for iid, by in answers.items()}}
    out = folder / "annotation_output" / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "user_state.json").write_text(json.dumps(state))
