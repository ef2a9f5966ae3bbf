"""What VIST adds to connote's registries (see :mod:`connote.core.plugins`): declarations only, no imports.

Two story baselines (the paper's GRU seq2seq, from photo ids; the retrieval baseline), the storytelling task,
its report run kind, four Potato studies, its catalogue entry with its format checks, its published tables and
the scoring of released output files for ``connote reproduce``.
"""

MODELS = {
    "retrieval": {"target": "connote.vist.backend_retrieval:retrieval_from_spec", "capabilities": ("generate",),
                  "inputs": "images", "weights": "file",
                  "help": "Offline story baseline: nearest training story in the embedded encoders' space "
                          "(train=SIS.json)."},
    "seq2seq": {"target": "connote.vist.backend_seq2seq:Seq2SeqStoryGenerator.from_spec",
                "capabilities": ("generate",), "inputs": "photo-ids", "weights": "folder",
                "help": "The VIST paper's GRU baseline (connote vist train), option features=F.npz."},
}
TASKS = {
    "vist-storytelling": ("connote.vist.task:StorytellingTask",
                          "Visual storytelling: a story per photo sequence in the VIST challenge format."),
}
RUN_KINDS = {"vist-storytelling": "connote.vist.report:KIND"}
STUDIES = {
    "vist-storytelling": "connote.vist.studies.storytelling",
    "vist-retelling": "connote.vist.studies.retelling",
    "vist-descriptions": "connote.vist.studies.descriptions",
    "vist-descriptions-in-sequence": "connote.vist.studies.dis",
}
DATASETS = "connote.vist.datasets:DATASETS"
FORMATS = "connote.vist.datasets:FORMATS"
PUBLISHED = {"vist": "published.json"}
REPRODUCE = {"vist-storytelling": "connote.vist.reproduce:score_file"}
