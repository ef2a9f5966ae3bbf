"""SVO-Probes (Hendricks & Nematzadeh 2021): a sentence with a positive and a negative image that differ in
its subject, verb or object. ``data.py`` reads ``svo_probes.csv``; ``task.py`` scores it as the released
notebook does."""
