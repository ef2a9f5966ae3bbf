"""SugarCrepe (Hsieh et al. 2023) and ARO's VG-Relation / VG-Attribution (Yuksekgonul et al. 2023): one image,
its caption and a hard negative. ``data.py`` reads the released JSONs; ``task.py`` gives accuracy per
category as the released evaluators do."""
