"""Shared by every test area. Being here puts ``tests/`` on the import path (pytest's default
rootdir-relative import mode), so the shared spec texts in ``tests/specs.py`` import as ``specs``."""
