"""VALSE (Parcalabescu et al. 2022): caption vs foil per linguistic piece. ``data.py`` reads the per-piece
JSONs of Heidelberg-NLP/VALSE (with their ``mturk`` votes); ``task.py`` scores them as the released
evaluation scripts do."""
