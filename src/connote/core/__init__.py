"""The shared vocabulary every layer uses: errors, the registry, progress, JSON/YAML I/O, the cache root, the
published tables' machinery. Nothing here names a paper or imports another connote package."""
