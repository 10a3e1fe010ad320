"""An instance's identity: ``HOST-PID-RANDOM`` unless the operator names it."""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass, field

from bot.errors import ConfigError

INSTANCE_ENV = "TALLYBOT_INSTANCE_ID"
"""The variable that names the instance (above ``[cluster] instance_id``)."""
_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")


def _check(name: str, where: str) -> str:
    if not _SHAPE.fullmatch(name):
        raise ConfigError(
            f"{where}: {name!r} is not an instance id: 1 to 100 letters, digits, '.', '_', ':' "
            "or '-', starting with a letter or digit"
        )
    return name


def new_instance_id() -> str:
    """``HOST-PID-RANDOM``: unique among the instances of one store, even on one host."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:60] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def instance_id_from(configured: str | None) -> str:
    """The id of this process: ``$TALLYBOT_INSTANCE_ID``, else ``configured`` (``[cluster]
    instance_id``), else a new ``HOST-PID-RANDOM``. A set id is checked (:class:`ConfigError`)."""
    given = os.environ.get(INSTANCE_ENV)
    if given:
        return _check(given, INSTANCE_ENV)
    if configured:
        return _check(configured, "[cluster] instance_id")
    return new_instance_id()


@dataclass
class Instance:
    """This process among the instances of its store, and what it holds right now."""

    id: str = field(default_factory=new_instance_id)
    counts: set[str] = field(default_factory=set)
    """The counts whose poll lease it holds."""
    shards: set[int] = field(default_factory=set)
    """The gateway shards whose sessions it runs (``bot.cluster.shards``)."""

    def holds(self) -> dict[str, object]:
        """What the ops endpoints show: the id and how much it holds (``/healthz`` answers
        anyone: how many counts it polls, not which, as a count's id may be a place's)."""
        return {"id": self.id, "counts": len(self.counts), "shards": sorted(self.shards)}
