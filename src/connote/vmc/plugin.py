"""What VMC adds to connote's registries (see :mod:`connote.core.plugins`): declarations only, no imports.

Two video generators (GIT-LLaVA, trained by ``connote vmc train``; the nearest-caption baseline), the
captioning and synthetic-metaphor (A.5.2) tasks, two report run kinds, three Potato studies, three
catalogue entries (VMCD and the stage-1 data) with their format checks, the release converter, its published
tables and the scoring of released answer files for ``connote reproduce``, and its judge rubric.
"""

MODELS = {
    "git-llava": {"target": "connote.vmc.backend_git_llava:GitLlavaGenerator.from_spec",
                  "capabilities": ("generate",), "inputs": "video", "frames": ("segments", 6, 6),
                  "weights": "folder",
                  "help": "A trained GIT-LLaVA / GIT-LLaVA-X folder (connote vmc train).",
                  "options": {"batch_size": "videos per generate call"}},
    "nearest": {"target": "connote.vmc.backend_nearest:NearestCaptionGenerator.from_spec",
                "capabilities": ("generate",), "inputs": "video", "frames": ("segments", 6, 6), "weights": "file",
                "help": "Offline metaphor default: caption of the nearest training video (embedded encoders).",
                "options": {"videos": "folder of the training videos (required)",
                            "split": "file of the video ids to index (e.g. train.txt); unset: every captioned video",
                            "strategy": "frame sampling: uniform, segments (2 from each third) or clips"}},
}
TASKS = {
    "vmc-captioning": ("connote.vmc.task:MetaphorCaptionTask",
                       "Video metaphor captioning: a template caption per video."),
    "vmc-synth": ("connote.vmc.synth_task:MetaphorSynthTask",
                  "VMC A.5.2: image captions converted to template metaphors, those outside the template dropped."),
}
RUN_KINDS = {
    "vmc-captioning": "connote.vmc.report:CAPTIONS",
    "vmc-human-eval": "connote.vmc.report:HUMAN_EVAL",
}
STUDIES = {
    "vmc-annotation": "connote.vmc.studies.annotation",
    "vmc-evaluation": "connote.vmc.studies.evaluation",
    "vmc-synth-check": "connote.vmc.studies.synth_check",
}
DATASETS = "connote.vmc.datasets:DATASETS"
FORMATS = "connote.vmc.datasets:FORMATS"
CONVERTERS = {"vmc": "connote.vmc.convert:command"}
PUBLISHED = {"vmc": "published.json"}
REPRODUCE = {"vmc-captioning": "connote.vmc.reproduce:score_file"}
RUBRICS = {  # judge rubrics (connote.tasks.judge): connote vmc correlate --judge
    "vmc-a7": ("connote.vmc.rubrics:VMC_A7", "VMC appendix A.7: fluency, primary concept, consistency, creativity."),
}
RATINGS = {"vmc-labels": "connote.vmc.correlate:LABELS"}  # human judgements (connote.metrics.correlation)
METRICS = {  # connote.metrics.registry: compute_scores(..., ["acs_acd"]) and connote score --metrics acs_acd
    "acs_acd": {"compute": "connote.metrics.concepts:compute", "options": "connote.metrics.concepts:ConceptOptions",
                "help": "ACS / ACD concept similarity and distance of metaphor captions"},
}
SCORE_NAMES = {  # engine key -> printed name, metric and scale (connote.metrics.registry)
    "ACS": {"display": "ACS", "metric": "acs_acd", "scale": "cosine, -1..1"},
    "ACD": {"display": "ACD", "metric": "acs_acd", "scale": "0-1"},
}
