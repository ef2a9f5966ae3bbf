"""What the field's probe suites add to connote's registries (see :mod:`connote.core.plugins`): declarations only.

One matching task and one MM-SHAP task per suite, a report run kind per suite, and the suites' catalogue
entries with the checks of their files (each read by the suite's own reader).
"""

SUITES = {  # suite -> (matching task, MM-SHAP task, sample writer): ``connote suite run|explain NAME``
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
TASKS = {
    "svo-probes": ("connote.suites.svo.task:SvoTask",
                   "SVO-Probes: positive/negative/average accuracy per subject/verb/object negative."),
    "svo-probes-mmshap": ("connote.suites.svo.task:SvoExplainTask",
                          "MM-SHAP on SVO-Probes: T-SHAP and the changed word's share per negative type."),
    "valse": ("connote.suites.valse.task:ValseTask",
              "VALSE: acc_r, acc, p_c, p_f per piece, on the MTurk-validated subset."),
    "valse-mmshap": ("connote.suites.valse.task:ValseExplainTask",
                     "MM-SHAP on VALSE: T-SHAP on caption and foil per piece, with the foiled word's share."),
    "winoground": ("connote.suites.winoground.task:WinogroundTask",
                   "Winoground: text, image and group scores (two images x two captions)."),
    "winoground-mmshap": ("connote.suites.winoground.task:WinogroundExplainTask",
                          "MM-SHAP on Winoground: T-SHAP of each matching pair with the swapped word's share."),
    "sugarcrepe": ("connote.suites.sugarcrepe.task:SugarCrepeTask",
                   "SugarCrepe (+ ARO VG-Relation/VG-Attribution): caption vs hard negative accuracy."),
    "sugarcrepe-mmshap": ("connote.suites.sugarcrepe.task:SugarCrepeExplainTask",
                          "MM-SHAP on SugarCrepe/ARO: T-SHAP on caption and negative with the changed word's share."),
}
RUN_KINDS = {
    "svo-probes": "connote.suites.report:SVO",
    "valse": "connote.suites.report:VALSE",
    "winoground": "connote.suites.report:WINOGROUND",
    "sugarcrepe": "connote.suites.report:SUGARCREPE",
}
DATASETS = "connote.suites.datasets:DATASETS"
FORMATS = "connote.suites.datasets:FORMATS"
