"""The scripts of ``benchmarks/`` as modules, for the tests that call into them.

``benchmarks/`` is a folder of scripts run as files (``python benchmarks/x.py``), not a package, so a test
loads one from its path; a script that needs its neighbours puts its own folder on ``sys.path`` as it does
when run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported once under the name ``name`` (as running it would)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
