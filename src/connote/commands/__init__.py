"""Pieces the commands share: run config files (``config``), option checks (``checks``), metric and judge
measures for the correlation commands (``measures``). Below the paper packages, so each paper's commands use
them; the ``connote`` entry point itself is ``connote.cli``."""
