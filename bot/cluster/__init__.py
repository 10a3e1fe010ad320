"""Several instances on one store: who each is, and what it holds.

Every ``tallybot run`` is one :class:`~bot.cluster.identity.Instance` with an id of its own. On
SQLite only one may run (:mod:`bot.cluster.single`); on PostgreSQL any number share the work:
deliveries are claimed with a claim that expires (:mod:`bot.store.outbox`), each count is
polled by the holder of its lease (:mod:`bot.cluster.polls`), and PostgreSQL is the only thing
they coordinate through.
"""

from bot.cluster.identity import Instance, instance_id_from

__all__ = ["Instance", "instance_id_from"]
