"""Video metaphor captioning (VMC): the caption template, data, agreement and generators.

Submodules import their heavy dependencies lazily; importing ``connote.vmc`` is cheap.
"""

from connote.vmc.template import Parsed, parse_metaphor

__all__ = ["Parsed", "parse_metaphor"]
