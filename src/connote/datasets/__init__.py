"""The datasets catalogue (where to get each paper's data, checking a local copy) and release converters."""
