"""What a test does when something it needs is absent: skip on a user's machine, fail under CI.

CI (``CI=true``) installs everything the suite needs and has ``../shared/data``; there a missing
requirement is a broken set-up, not a reason to skip, so it fails loudly.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip the test (fail it under ``CI=true``) because ``reason``."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)
