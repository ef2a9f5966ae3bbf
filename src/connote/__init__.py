"""connote: vision-language research on what images imply.

Three systems share one toolkit: contextual verb probes (image-text matching with social
knowledge), visual storytelling over photo sequences, and video metaphor captioning.
"""

__version__ = "0.1.0"
