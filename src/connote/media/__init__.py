"""Media: images, photo lookup, video frames, synthetic videos, the packaged sample photos and the offline
encoders that packages ship (``media.embedded``)."""
