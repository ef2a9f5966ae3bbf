"""The field's verb and compositional probe suites on connote's engine, one small package per suite.

Each package holds a reader of the suite's released files (``data.py``, with a generated offline sample in
the same layout) and its task with the suite's own published metrics (``task.py``); what they share is in
:mod:`connote.suites.base`. The tasks are registered in :data:`connote.tasks.TASKS` under the suite's
name, which is also its run kind in ``connote report``, its name in ``connote suite`` and in the dataset
catalogue.
"""

#: Suite name -> (matching task, MM-SHAP task, sample writer), as lazy ``module:attr`` targets.
SUITES: dict[str, tuple[str, str, str]] = {
    "svo-probes": ("connote.suites.svo.task:SvoTask", "connote.suites.svo.task:SvoExplainTask",
                   "connote.suites.svo.data:write_sample"),
    "valse": ("connote.suites.valse.task:ValseTask", "connote.suites.valse.task:ValseExplainTask",
              "connote.suites.valse.data:write_sample"),
    "winoground": ("connote.suites.winoground.task:WinogroundTask",
                   "connote.suites.winoground.task:WinogroundExplainTask",
                   "connote.suites.winoground.data:write_sample"),
    "sugarcrepe": ("connote.suites.sugarcrepe.task:SugarCrepeTask",
                   "connote.suites.sugarcrepe.task:SugarCrepeExplainTask",
                   "connote.suites.sugarcrepe.data:write_sample"),
}


def suite_names() -> list[str]:
    return list(SUITES)


def target(suite: str, which: int):
    """The class or function ``which`` (0 task, 1 explain task, 2 sample writer) of ``suite``."""
    from connote.core.errors import InputError
    from connote.core.registry import import_target

    if suite not in SUITES:
        raise InputError(f"unknown suite {suite!r}; valid: {', '.join(SUITES)}")
    return import_target(SUITES[suite][which])
