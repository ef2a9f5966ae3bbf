"""Tasks: items x model -> per-item rows -> paper-style tables (the contract is :mod:`connote.tasks.api`).

One module per task; each is registered here once, lazily, so ``connote tasks`` imports nothing heavy.
"""

from connote.core.registry import Registry

TASKS: Registry = Registry("task")
TASKS.register("cv-probes", "connote.cv_probes.task:ProbeTask",
               help="Contextual verb probes: image-text matching accuracy per SG/PG cell (Tables 3-5).")
TASKS.register("cv-probes-mmshap", "connote.cv_probes.explain:ExplainTask",
               help="MM-SHAP: T-SHAP/V-SHAP and the verb's share per probe pair (Table 6).")
TASKS.register("vist-storytelling", "connote.vist.task:StorytellingTask",
               help="Visual storytelling: a story per photo sequence in the VIST challenge format.")
TASKS.register("vmc-captioning", "connote.vmc.task:MetaphorCaptionTask",
               help="Video metaphor captioning: a template caption per video.")
TASKS.register("vmc-synth", "connote.vmc.synth_task:MetaphorSynthTask",
               help="VMC A.5.2: image captions converted to template metaphors, those outside the template dropped.")
# the field's probe suites (connote.suites): one matching task and one MM-SHAP task per suite
TASKS.register("svo-probes", "connote.suites.svo.task:SvoTask",
               help="SVO-Probes: positive/negative/average accuracy per subject/verb/object negative.")
TASKS.register("svo-probes-mmshap", "connote.suites.svo.task:SvoExplainTask",
               help="MM-SHAP on SVO-Probes: T-SHAP and the changed word's share per negative type.")
TASKS.register("valse", "connote.suites.valse.task:ValseTask",
               help="VALSE: acc_r, acc, p_c, p_f per piece, on the MTurk-validated subset.")
TASKS.register("valse-mmshap", "connote.suites.valse.task:ValseExplainTask",
               help="MM-SHAP on VALSE: T-SHAP on caption and foil per piece, with the foiled word's share.")
TASKS.register("winoground", "connote.suites.winoground.task:WinogroundTask",
               help="Winoground: text, image and group scores (two images x two captions).")
TASKS.register("winoground-mmshap", "connote.suites.winoground.task:WinogroundExplainTask",
               help="MM-SHAP on Winoground: T-SHAP of each matching pair with the swapped word's share.")
TASKS.register("sugarcrepe", "connote.suites.sugarcrepe.task:SugarCrepeTask",
               help="SugarCrepe (+ ARO VG-Relation/VG-Attribution): caption vs hard negative accuracy.")
TASKS.register("sugarcrepe-mmshap", "connote.suites.sugarcrepe.task:SugarCrepeExplainTask",
               help="MM-SHAP on SugarCrepe/ARO: T-SHAP on caption and negative with the changed word's share.")
