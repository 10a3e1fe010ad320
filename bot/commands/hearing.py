"""The grammar of what a subscription hears: ``[events|all|live] [final] [calls] [leads]
[remind] [close=50|close=2%] [mention=@role] [thread] [pin] [publish]``, in any order, or
``via=#channel`` alone (see ``bot.domain.subscription``).

A platform with typed options gets two: ``mode`` (events, all or live, as before filters) and
``options`` (the rest, as typed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.commands.args import NUMBER, Arg, ChoiceArg, Command, Option, Value
from bot.domain.limits import MAX_WANTS, too_long
from bot.domain.model import CEILING_RULE, figure_value
from bot.domain.subscription import Close, Hear, Wants
from bot.errors import CommandError

PERCENT = re.compile(r"^([0-9]{1,3})(?:\.([0-9]))?%$")
HEARS = {h.value: h for h in Hear}
FLAGS = ("live", "thread", "pin", "publish")
KNOWN = (
    "events, all, live, final, calls, leads, remind, close=50 or close=2%, mention=@role, thread, "
    "pin, publish or via=#channel"
)
OPTIONS_HELP = (
    "Also: final, calls, leads, remind, close=50 or close=2%, mention=@role, thread, pin, "
    "publish, via=#channel"
)
CHANNEL = re.compile(r"^(?:<#([0-9]{1,20})>|#?([0-9]{1,20}))$")


def parse_close(raw: str) -> Close:
    """``50``, ``1,000`` (votes), ``2%`` or ``2.5%`` (of the valid votes)."""
    percent = PERCENT.match(raw)
    if percent is not None:
        tenths = int(percent.group(1)) * 10 + int(percent.group(2) or 0)
        if not 0 < tenths <= 1000:
            raise CommandError(f"close={raw}: a share above 0% and at most 100%")
        return Close(tenths=tenths)
    if not NUMBER.match(raw):
        raise CommandError(f"close={raw[:20]}: write close=50 (votes) or close=2% (a share)")
    votes = figure_value(raw.replace(",", ""))
    if votes is None:
        raise CommandError(f"close is too large: {CEILING_RULE}")
    return Close(votes=votes)


def parse_wants(words: list[str]) -> Wants:
    """What ``words`` ask for; an error naming the word that is not understood, or the limit
    on their length (``MAX_WANTS``)."""
    over = too_long("list of options", " ".join(words), MAX_WANTS)
    if over is not None:
        raise CommandError(over)
    hears: set[Hear] = set()
    flags: set[str] = set()
    close: Close | None = None
    mention: str | None = None
    via: str | None = None
    for word in words:
        key, sep, value = word.partition("=")
        key = key.lower()
        if not sep and key in HEARS:
            hears.add(HEARS[key])
        elif not sep and key in FLAGS:
            flags.add(key)
        elif sep and key == "close":
            close = parse_close(value)
        elif sep and key == "mention":
            if not value:
                raise CommandError("mention= needs a role: mention=@organisers")
            mention = value
        elif sep and key == "via":
            channel = CHANNEL.match(value)
            if channel is None:
                raise CommandError("via= needs an announcement channel: via=#123456789012345678")
            via = channel.group(1) or channel.group(2)
        else:
            raise CommandError(f"unknown option {word[:40]!r}: use {KNOWN}")
    return Wants(
        frozenset(hears) or frozenset({Hear.EVENTS}),
        live="live" in flags,
        close=close,
        mention=mention,
        thread="thread" in flags,
        pin="pin" in flags,
        publish="publish" in flags,
        via=via,
    )


@dataclass(frozen=True, slots=True)
class WantsArg(Arg):
    """The rest of a ``subscribe`` line (an :class:`~bot.commands.args.Arg`)."""

    mode: ChoiceArg
    """The typed option for events, all or live (with its choices)."""
    name: str = "options"

    @property
    def usage(self) -> str:
        return (
            f"{self.mode.usage} [final|calls|leads|remind] [close=N|N%] [mention=@role] [thread] "
            "[pin] [publish] | via=#channel"
        )

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        return replace(command, wants=parse_wants(words)), []

    def options(self) -> tuple[Option, ...]:
        return (*self.mode.options(), Option(self.name, OPTIONS_HELP))

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        return self.mode.words(values) + ([] if given is None else str(given).split())
