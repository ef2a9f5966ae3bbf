"""The sample photos are cached once as their pixels (issue 40, item 2): a later sample is written without
importing scikit-learn or scikit-image, and every file it writes is byte-identical to the first one's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WRITE = """
import json, sys
from connote.media.sample import write_sample_probes
write_sample_probes(sys.argv[1])
print(json.dumps({m: m in sys.modules for m in ("sklearn", "skimage")}))
"""


def _write(folder: Path, cache: Path) -> dict[str, bool]:
    env = {**os.environ, "CONNOTE_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-c", WRITE, str(folder)], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_cached_sample_imports_neither_package_and_writes_the_same_bytes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _write(tmp_path / "a", cache)
    assert first == {"sklearn": True, "skimage": True}
    assert len(list((cache / "sample-photos").glob("*.png"))) == 9
    again = _write(tmp_path / "b", cache)
    assert again == {"sklearn": False, "skimage": False}
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    (cache / "sample-photos" / "skimage-coffee.png").write_bytes(b"not a png")  # a damaged entry is rebuilt
    assert _write(tmp_path / "c", cache)["skimage"] is True
    assert _files(tmp_path / "c") == _files(tmp_path / "a")
