"""Collecting the papers' human data on Potato, and importing it back into connote's formats.

``connote collect make <study>`` writes a ready-to-serve Potato project (see ``project.py``);
``serve`` runs Potato on loopback, ``status`` reports progress and ``import`` turns Potato's
output into the files the other connote commands read. One module per study:

============================== ==================================================================
probes-validation              two images + one caption: both / only one / neither
probes-votes                   one image + one caption: match / no match (human_votes)
vist-storytelling              choose 5 or more album photos, order them, one sentence each (SIS)
vist-retelling                 choose one of the album's first-stage sequences, write its story (SIS)
vist-descriptions              one caption per photo in isolation (DII)
vist-descriptions-in-sequence  one caption per photo of a storyboard (DIS)
vmc-annotation                 questions a-h of the VMC paper's appendix A.1 per video
vmc-evaluation                 four binary labels per generated caption (+ kappa, ACD)
vmc-synth-check                fluency and creativity yes/no per synthetic metaphor caption (A.5.2)
============================== ==================================================================
"""

from __future__ import annotations

import importlib
from types import ModuleType

from connote.core.plugins import PluginTable

#: Study name -> the module that makes and imports it: each paper's, declared by its plugin module
#: (``STUDIES`` in ``connote/<paper>/plugin.py``, see :mod:`connote.core.plugins`).
STUDIES: PluginTable = PluginTable("study", "STUDIES")


def study_module(name: str) -> ModuleType:
    """The module that makes and imports study ``name``."""
    from connote.core.errors import InputError

    if name not in STUDIES:
        raise InputError(f"unknown study {name!r}; choose one of {', '.join(STUDIES)}")
    return importlib.import_module(STUDIES[name])
