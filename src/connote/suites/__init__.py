"""The field's verb and compositional probe suites on connote's engine, one small package per suite.

Each package holds a reader of the suite's released files (``data.py``, with a generated offline sample in
the same layout) and its task with the suite's own published metrics (``task.py``); what they share is in
:mod:`connote.suites.base`. The tasks are registered in :data:`connote.tasks.TASKS` under the suite's
name, which is also its run kind in ``connote report``, its name in ``connote suite`` and in the dataset
catalogue.
"""

from connote.core.plugins import PluginTable

#: Suite name -> (matching task, MM-SHAP task, sample writer), as lazy ``module:attr`` targets: the four here
#: and any a plugin adds, declared as ``SUITES`` in its plugin module (``connote/suites/plugin.py`` for these;
#: see :mod:`connote.core.plugins` and docs/architecture.md, "Recipe: add a probe suite").
SUITES: PluginTable = PluginTable("probe suite", "SUITES")


def suite_names() -> list[str]:
    return list(SUITES)


def target(suite: str, which: int):
    """The class or function ``which`` (0 task, 1 explain task, 2 sample writer) of ``suite``."""
    from connote.core.errors import InputError
    from connote.core.registry import import_target

    if suite not in SUITES:
        raise InputError(f"unknown suite {suite!r}; valid: {', '.join(SUITES)}")
    return import_target(SUITES[suite][which])
