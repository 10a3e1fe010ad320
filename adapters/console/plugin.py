"""The console as a tallybot plug-in (the ``tallybot.adapters`` entry point ``console``).

``[console] enabled = true`` turns it on (only where standard input is a terminal);
``admin`` (default true) says whether the person at the terminal may run admin commands: the
terminal is the operator's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.platform import (
    AdminPolicy,
    Asker,
    Context,
    Flag,
    PlatformTable,
    Plugin,
    TerminalPlatform,
    Verdict,
)

if TYPE_CHECKING:
    from adapters.console.adapter import ConsoleAdapter


class ConsoleSettings(PlatformTable):
    enabled: Flag = False
    admin: Flag = True
    """The person at the terminal is an admin."""

    def on(self) -> bool:
        return self.enabled


class ConsoleAdmins(AdminPolicy):
    def __init__(self, settings: ConsoleSettings) -> None:
        self.admin = settings.admin

    def verdict(self, asker: Asker) -> Verdict:
        if self.admin:  # the operator, at the terminal
            return Verdict(True, tenant_admin=True, home=True)
        return Verdict(False, "refused: [console] admin = false", home=True)


def build(settings: ConsoleSettings, context: Context) -> ConsoleAdapter:
    from adapters.console.adapter import ConsoleAdapter

    return ConsoleAdapter(context=context, zone=context.zone)


def terminal() -> TerminalPlatform:
    from adapters.console.adapter import CONSOLE_CHANNEL, ConsoleAdapter

    return TerminalPlatform(
        open=lambda out, zone: ConsoleAdapter(out=out, zone=zone),
        channel=CONSOLE_CHANNEL,
        replay_settings={"enabled": True, "admin": True},
    )


PLUGIN: Plugin[ConsoleSettings] = Plugin(
    name="console",
    settings=ConsoleSettings,
    build=build,
    admins=ConsoleAdmins,
    place="terminal",
    channel_example="console:local/console",
    moved={"console": "admin"},
    needs_terminal=True,
    terminal=terminal,
)
