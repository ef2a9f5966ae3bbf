"""``python -m connote.vmc.train --config c.yaml``: the same as ``connote vmc train``.

For launchers that run modules: ``torchrun --nproc_per_node N -m connote.vmc.train --config c.yaml``
or ``accelerate launch -m connote.vmc.train --config c.yaml``.
"""

import sys

from connote.cli import main

sys.exit(main(["metaphor", "train", *sys.argv[1:]]))
