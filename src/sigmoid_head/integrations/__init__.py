"""Integrations with tools quality-estimation users already work in.

* :mod:`.polygraph`: an LM-Polygraph plugin (stat calculator + estimators); needs the
  ``polygraph`` extra.

An integration imports the library, never the reverse. (The Hub and the paper's released
head format are part of the head's file format and live in the core: :mod:`sigmoid_head.head.hub`,
:mod:`sigmoid_head.head.model_card`, :mod:`sigmoid_head.head.released`.)
"""
