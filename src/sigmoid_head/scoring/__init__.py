"""Scoring: every per-token score from one frozen pass (:mod:`.token_scores`), the one
force-decode path for given outputs (:mod:`.force_decode`, Eval Other), generation-time
capture (:mod:`.generate`, Eval Self), token -> word -> sequence aggregation
(:mod:`.aggregate`) with character offsets (:mod:`.offsets`), the fields' directions
(:mod:`.fields`), the further baselines (:mod:`.baselines`) and RAUQ from the same
pass's attention weights (:mod:`.rauq`).
"""
