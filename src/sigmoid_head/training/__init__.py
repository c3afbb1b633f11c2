"""Training: settings by concern (:mod:`.config`), the loop in phases (:mod:`.loop`), one
step's loss (:mod:`.step`), the optimizer and schedule (:mod:`.optim`), resumable
checkpoints (:mod:`.checkpoint`) and the hidden-state cache (:mod:`.cache`).

``train`` is :func:`sigmoid_head.training.loop.train` (also ``sigmoid_head.train``).
"""
