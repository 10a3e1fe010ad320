"""Telegram for tallybot, built on aiogram 3 (docs/telegram.md says why).

The parts, each small and self-contained, for the plug-in contract to wire together:

- ``settings``: the ``[telegram]`` table (``read_settings``) and the secret names.
- ``limits``: Telegram's flood limits as pacing buckets, and ``route`` for a request.
- ``render``: ``Message`` / ``Notice`` / ``Reply`` as Telegram HTML, shown as typed, within
  4,096 characters (1,024 for a caption), no mention, link or command found in it.
- ``errors``: aiogram's errors as ``bot.errors`` delivery errors; ``MaybeSent``.
- ``send``: one paced request each: send, edit, probe, delete.
- ``once``: posting exactly once after a lost answer (probe and repair), with its ledger
  (``StoreLedger`` in the store, ``MemoryLedger`` without one).
- ``commands``: ``/count`` updates into the core's ``Request``, the admin policy, replies.
- ``lifecycle``: the aiogram ``Bot``, long polling or the webhook route, health.
"""
