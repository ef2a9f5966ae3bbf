"""The CV-Probes annotation studies on Potato: validation (both / only one / neither) and votes."""
