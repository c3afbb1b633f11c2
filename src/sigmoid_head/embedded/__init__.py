"""embedded."""
