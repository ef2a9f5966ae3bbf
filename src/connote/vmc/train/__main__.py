"""``python -m connote.vmc.train --config c.yaml``: the same as ``connote vmc train``.

For launchers that run modules: ``torchrun --nproc_per_node N -m connote.vmc.train --config c.yaml``
or ``accelerate launch -m connote.vmc.train --config c.yaml``. The command is VMC's own (``connote.vmc.cli``), run
as ``connote`` runs it (:func:`connote.commands.entry.run_module`), without the ``connote`` entry point above the
papers.
"""

import sys

from connote.commands.entry import run_module

sys.exit(run_module("connote.vmc.cli", ["vmc", "train", *sys.argv[1:]], prog_name="connote"))
