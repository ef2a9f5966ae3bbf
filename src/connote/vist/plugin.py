"""What VIST adds to connote's registries (see :mod:`connote.core.plugins`): declarations only, no imports.

Two story baselines (the paper's GRU seq2seq, from photo ids; the retrieval baseline), the storytelling task,
its report run kind, four Potato studies, its catalogue entry with its format checks, its published tables and
the scoring of released output files for ``connote reproduce``, and its judge rubrics.
"""

MODELS = {
    "retrieval": {"target": "connote.vist.backend_retrieval:retrieval_from_spec", "capabilities": ("generate",),
                  "inputs": "images", "weights": "file",
                  "help": "Offline story baseline: nearest training story in the embedded encoders' space "
                          "(train=SIS.json).",
                  "options": {"train": "the training stories (SIS JSON) the index holds (required, or as weights)",
                              "index_by": "text (stories by their text) or image (by the training photos)",
                              "images": "folder of the training photos (index_by=image)",
                              "cache": "folder where the index is kept; none: not kept; unset: connote's cache"}},
    "seq2seq": {"target": "connote.vist.backend_seq2seq:Seq2SeqStoryGenerator.from_spec",
                "capabilities": ("generate",), "inputs": "photo-ids", "weights": "folder",
                "help": "The VIST paper's GRU baseline (connote vist train), option features=F.npz.",
                "options": {"features": "the photos' features (.npz by photo id) the model was trained on (required)",
                            "decode": "beam, greedy, greedy-dups (-Dups) or greedy-dups-grounded (+Grounded)",
                            "beam_size": "beams with decode=beam",
                            "grounding": "objects (the embedded classifier's labels) or DII.json (an oracle)",
                            "top_k": "labels per photo with grounding=objects",
                            "grounding_dii": "the training descriptions (DII JSON) of the paper's +Grounded",
                            "grounding_sis": "the training stories (SIS JSON) of the paper's +Grounded",
                            "captioner": "folder of connote vist train-captioner for the paper's +Grounded",
                            "n_best": "captions per photo that license words with captioner"}},
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
RUBRICS = {  # judge rubrics (connote.tasks.judge): --rubric of connote vist correlate
    "share": ("connote.vist.rubrics:SHARE", "VIST's question: would you share this story of your photos? (1-5)"),
    "pairwise": ("connote.vist.rubrics:PAIRWISE", "Which of two stories of one photo sequence is better (A or B)."),
}
RATINGS = {  # human-judgement files of connote vist correlate (connote.metrics.correlation)
    "pairwise": "connote.vist.correlate:PREFERENCES",
    "vist": "connote.vist.correlate:STORY_RATINGS",
}
SCORE_NAMES = {  # reference-free story metrics (connote.vist.storyeval): printed names and scales
    "GROOViST": {"display": "GROOViST", "metric": "groovist",
                 "scale": "unbounded, concreteness-weighted (tanh: -1..1)"},
    "RoViST-VG": {"display": "RoViST-VG", "metric": "rovist_vg",
                  "scale": "log-sum-exp of the nouns' best cosines (x idf)"},
    "RoViST-C": {"display": "RoViST-C", "metric": "rovist_c",
                 "scale": "0-1 (SOP probability; cosine for the stand-in)"},
    "RoViST-NR": {"display": "RoViST-NR", "metric": "rovist_nr", "scale": "0-1"},
}
