"""The studies behind the documented results, importable as a package (``python -m recipes.bible.tables``)."""
