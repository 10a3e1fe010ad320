"""The store's Alembic revisions, one file each (``vNNNN_slug.py``), oldest first.

A package so that the wheel ships them; Alembic itself skips this file.
"""
