"""The webhook plug-in's Alembic branch (``webhook``): the revisions of its own tables
(:mod:`adapters.webhook.tables`), run by the store after the core's."""
