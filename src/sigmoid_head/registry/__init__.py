"""The registries, torch-free: the scoring methods and aggregations (``methods``), the output
columns (``columns``) and the opt-in baselines' settings (``baseline_settings``)."""

# the two registries come together: a method registered alone is checked against the columns
from . import columns as columns  # noqa: E402,F401
