"""Training: GIT-LLaVA / GIT-LLaVA-X in two stages on ``accelerate``.

``connote.vmc.train.config`` (YAML config, unknown fields rejected), ``connote.vmc.train.git_llava``
(the model), ``connote.vmc.train.loop.train`` (the loop with exact-resume checkpoints). torch and
transformers are imported only by those submodules.
"""
