"""Scoring: every per-token score from one frozen pass (:mod:`.token_scores`), the one
force-decode path for given outputs (:mod:`.force_decode`, Eval Other), generation-time
capture (:mod:`.generate`, Eval Self), token -> word -> sequence aggregation
(:mod:`.aggregate`) with character offsets (:mod:`.offsets`), the fields' directions
(:mod:`.fields`), the further baselines (:mod:`.baselines`), the methods that read the
pass's attention (:mod:`.captured`; RAUQ, :mod:`.rauq`), and whole corpora as ``score`` / ``generate`` do them
(:mod:`.corpus` with the settings of :mod:`.corpus_config`, written by
:mod:`.corpus_output`). The methods and aggregations are those registered in
:mod:`sigmoid_head.registry.methods`, the output columns those of :mod:`sigmoid_head.registry.columns`.
"""
