"""The Slack plug-in's Alembic branch (``slack``): the revisions of its own tables
(:mod:`adapters.slack.tables`), run by the store after the core's (``bot.store.migrations``)."""
