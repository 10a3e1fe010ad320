"""Several instances on one store: who each is, and what it holds.

Every ``tallybot run`` is one :class:`~bot.cluster.identity.Instance` with an id of its own. On
SQLite only one may run (:mod:`bot.cluster.single`); on PostgreSQL any number share the work:
deliveries are claimed with a claim that expires (:mod:`bot.store.outbox`), and what one
instance at a time holds is a lease (:mod:`bot.cluster.lease`, one type with one renewal rule):
each count's polling (:mod:`bot.cluster.polls`), each gateway shard (:mod:`bot.cluster.shards`),
each platform's sending budget (:mod:`bot.delivery.shared`). PostgreSQL is the only thing they
coordinate through.
"""

from bot.cluster.identity import Instance, instance_id_from

__all__ = ["Instance", "instance_id_from"]
