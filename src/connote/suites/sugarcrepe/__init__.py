"""sugarcrepe suite: reader (data.py) and task with its published metrics (task.py)."""
