"""Tasks: items x model -> per-item rows -> paper-style tables (the contract is :mod:`connote.tasks.api`).

One module per task; each is registered once, lazily, by its paper's plugin module, so ``connote tasks``
imports nothing heavy.
"""

from connote.core.plugins import named_targets
from connote.core.registry import Registry

#: The tasks: each paper's, declared by its plugin module (``TASKS`` in ``connote/<paper>/plugin.py``, see
#: :mod:`connote.core.plugins`), registered on the first lookup or listing.
TASKS: Registry = Registry("task", plugins=named_targets("TASKS"))
