"""Training: GIT-LLaVA / GIT-LLaVA-X in two stages on ``accelerate``.

``connote.train.config`` (YAML config, unknown fields rejected), ``connote.train.git_llava``
(the model), ``connote.train.loop.train`` (the loop with exact-resume checkpoints). torch and
transformers are imported only by those submodules.
"""
