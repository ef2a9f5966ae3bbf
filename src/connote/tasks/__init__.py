"""Tasks: items x model -> per-item rows -> paper-style tables (the contract is :mod:`connote.tasks.api`).

One module per task; each is registered once, lazily, by its paper's plugin module, so ``connote tasks``
imports nothing heavy.
"""

from connote.core.registry import Registry


def _load_plugin_tasks(registry: Registry) -> None:
    from connote.core.plugins import PluginError, declared

    for mod, table in declared("TASKS"):
        for name, (target, help) in table.items():
            try:
                registry.register(name, target, help=help)
            except ValueError as exc:
                raise PluginError(f"connote plugin {mod.__name__}: {exc}") from None


#: The tasks: each paper's, declared by its plugin module (``TASKS`` in ``connote/<paper>/plugin.py``, see
#: :mod:`connote.core.plugins`), registered on the first lookup or listing.
TASKS: Registry = Registry("task", plugins=_load_plugin_tasks)
