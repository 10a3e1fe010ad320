"""The console as a tallybot plug-in (the ``tallybot.adapters`` entry point ``console``).

``[console] enabled = true`` turns it on (only where standard input is a terminal);
``admin`` (default true) says whether the person at the terminal may run admin commands: the
terminal is the operator's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config_reader import Reader
from bot.platform import AdminPolicy, Asker, Context, Plugin, Verdict

if TYPE_CHECKING:
    from adapters.console.adapter import ConsoleAdapter

KEYS = ("enabled", "admin")


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    admin: bool = True
    """The person at the terminal is an admin."""


def read(r: Reader) -> ConsoleSettings | None:
    if not r.get("enabled", bool, False):
        return None
    return ConsoleSettings(admin=r.get("admin", bool, True))


class ConsoleAdmins(AdminPolicy):
    def __init__(self, settings: ConsoleSettings) -> None:
        self.admin = settings.admin

    def verdict(self, asker: Asker) -> Verdict:
        if self.admin:
            return Verdict(True)
        return Verdict(False, "refused: [console] admin = false")


def build(settings: ConsoleSettings, context: Context) -> ConsoleAdapter:
    from adapters.console.adapter import ConsoleAdapter

    return ConsoleAdapter(context=context, zone=context.zone)


PLUGIN: Plugin[ConsoleSettings] = Plugin(
    name="console",
    keys=KEYS,
    read=read,
    build=build,
    admins=ConsoleAdmins,
    place="terminal",
    channel_example="console:local/console",
    moved={"console": "admin"},
    needs_terminal=True,
)
