"""Tasks: items x model -> per-item rows -> paper-style tables (the contract is :mod:`connote.tasks.api`).

One module per task; each is registered here once, lazily, so ``connote tasks`` imports nothing heavy.
"""

from connote.registry import Registry

TASKS: Registry = Registry("task")
TASKS.register("cv-probes", "connote.tasks.probe:ProbeTask",
               help="Contextual verb probes: image-text matching accuracy per SG/PG cell (Tables 3-5).")
TASKS.register("cv-probes-mmshap", "connote.tasks.explain:ExplainTask",
               help="MM-SHAP: T-SHAP/V-SHAP and the verb's share per probe pair (Table 6).")
TASKS.register("vist-storytelling", "connote.tasks.storytelling:StorytellingTask",
               help="Visual storytelling: a story per photo sequence in the VIST challenge format.")
TASKS.register("vmc-captioning", "connote.tasks.metaphor:MetaphorCaptionTask",
               help="Video metaphor captioning: a template caption per video.")
