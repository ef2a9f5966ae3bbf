"""Tasks: items x model -> per-item rows -> paper-style tables."""

from connote.registry import Registry

TASKS: Registry = Registry("task")
TASKS.register("cv-probes", "connote.tasks.probe:run_probe",
               help="Contextual verb probes: image-text matching accuracy per SG/PG cell (Tables 3-5).")
