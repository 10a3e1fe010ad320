"""The rigs of the adapter contract (``tests/adapters/contract.py``): each runs one platform's
real adapter inside the whole bot (``bot.runtime.app.App`` on SQLite, the real dispatcher, virtual
time) against that platform's loopback fake, makes things happen on the platform's side
(an answer lost, a channel removed, a message deleted, the connection down) and reads back
what the members of a channel see."""

from tests.adapters.rigs.base import Rig, Seen

__all__ = ["Rig", "Seen"]
