"""What CV-Probes adds to connote's registries (see :mod:`connote.core.plugins`): declarations only, no imports.

Its models are the generic matching backends (``connote.models``); it adds two tasks, two report run kinds,
two Potato studies, its catalogue entry with its manifest check, its release converter and its published tables.
"""

TASKS = {
    "cv-probes": ("connote.cv_probes.task:ProbeTask",
                  "Contextual verb probes: image-text matching accuracy per SG/PG cell (Tables 3-5)."),
    "cv-probes-mmshap": ("connote.cv_probes.explain:ExplainTask",
                         "MM-SHAP: T-SHAP/V-SHAP and the verb's share per probe pair (Table 6)."),
}
RUN_KINDS = {
    "cv-probes": "connote.cv_probes.report:KIND",
    "cv-probes-explain": "connote.cv_probes.report_explain:KIND",
}
STUDIES = {
    "probes-validation": "connote.cv_probes.studies.validation",
    "probes-votes": "connote.cv_probes.studies.votes",
}
DATASETS = "connote.cv_probes.datasets:DATASETS"
FORMATS = "connote.cv_probes.datasets:FORMATS"
CONVERTERS = {"cv-probes": "connote.cv_probes.convert:command"}
PUBLISHED = {"cv-probes": "published.json"}
