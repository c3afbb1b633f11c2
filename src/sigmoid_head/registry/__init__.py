"""The registries, torch-free: the scoring methods and aggregations (``methods``), the output
columns (``columns``) and the opt-in baselines' settings (``baseline_settings``)."""
