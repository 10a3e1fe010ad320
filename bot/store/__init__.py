"""The store: counts, tallies, subscriptions, the audit log and the delivery queue.

Open it with ``async with Database(url) as db:``; the repository modules (``counts``,
``tallies``, ``subscriptions``, ``audit``, ``outbox``) hold functions that take the
``AsyncConnection`` from ``db.begin()`` or ``db.connect()``, so one transaction can span several.
"""

from bot.store.db import Database

__all__ = ["Database"]
