"""Recipe tests import the recipes as the package they are (``from recipes.bible import
tables``): the repository root is on ``sys.path`` through pytest's ``pythonpath`` setting
(pyproject.toml), so nothing here edits it."""
