"""Fixtures of the collect tests; the Potato/Chromium drivers live in ``potato_driver`` (a uniquely named
module, so that ``import`` finds it whatever other test folder's conftest was imported first)."""

from potato_driver import studies  # noqa: F401 - the session fixture: every study made and served at once
