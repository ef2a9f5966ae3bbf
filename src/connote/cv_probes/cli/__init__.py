"""The CV-Probes commands: ``connote probe`` and ``connote explain``."""
