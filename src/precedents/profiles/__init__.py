"""The models precedents knows (:mod:`.registry`), under the ids the store records, and
how a model name, a device and a runtime are judged.

Apart from :mod:`precedents.config`, which re-exports the registry's names and
checks the settings with it, because the store and secrets layers import the
settings and must not reach the model layer (tests/test_layout.py); and
apart from :mod:`precedents.models`, which loads what it names and judges a
name the same way (:mod:`precedents.models.hub`).
"""
