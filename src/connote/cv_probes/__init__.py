"""CV-Probes (seed 001): contextual verb probes and their MM-SHAP explanations.

One package for the paper: the manifest format (``manifest``), the records (``records``), the probe task
(``task``) and the explain task (``explain``), their report sections (``report``, ``report_explain``), the
annotation studies (``studies``), the commands (``cli``) and the published tables (``published.json``).
"""
