"""The VMC annotation studies on Potato: annotation (appendix A.1) and evaluation (four labels)."""
