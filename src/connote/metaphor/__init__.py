"""Video metaphor captioning (VMC): the caption template, data, agreement and generators.

Submodules import their heavy dependencies lazily; importing ``connote.metaphor`` is cheap.
"""

from connote.metaphor.template import Parsed, parse_metaphor

__all__ = ["Parsed", "parse_metaphor"]
