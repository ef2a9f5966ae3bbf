"""Winoground (Thrush et al. 2022): two images and two captions with the same words in another order.
``data.py`` reads the Hugging Face release (``data/examples.jsonl`` + ``images/``); ``task.py`` gives the
paper's text, image and group scores."""
