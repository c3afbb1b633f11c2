"""Evaluation of score files against gold quality; numpy only (no torch).

:mod:`.readers` (score, gold and external-score files), :mod:`.metrics` (correlations,
BCE, ROC-AUC, PRR, ECE), :mod:`.bootstrap` (confidence intervals), :mod:`.word_metrics`,
:mod:`.metric_inputs` (array checks), :mod:`.report` (tables and plots) and
:mod:`.evaluate` (:func:`~.evaluate.evaluate_scores`, what ``sigmoid-head evaluate`` runs);
for word tags and error spans :mod:`.gold_formats` (WMT tags, ESA/MQM, RAGTruth),
:mod:`.span_metrics` (MCC, AP, MPP, source-clustered bootstrap) and :mod:`.gold_eval`.
"""
