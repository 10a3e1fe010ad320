"""The command grammar, the same on every platform: text in, a typed command (or a clear error) out.

    subscribe <count> [events|all|live]     unsubscribe <count>      list
    status [count]                          history <count>          chart <count>       help
    update <count> yes=463 no=1100 challenged=505 void=76 received=3215    (admins)
    correct <count> ...                     (admins: figures that go down, or change a final)
    pause <count>   resume <count>   final <count>                          (admins)
    deliveries                              (admins: messages that could not be delivered)

Every error is one line that says what to type instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.model import CEILING_RULE, figure_value
from bot.errors import CommandError
from bot.subscription import Mode


class Verb(StrEnum):
    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    LIST = "list"
    STATUS = "status"
    HISTORY = "history"
    CHART = "chart"
    HELP = "help"
    UPDATE = "update"
    CORRECT = "correct"
    PAUSE = "pause"
    RESUME = "resume"
    FINAL = "final"
    DELIVERIES = "deliveries"


ADMIN_VERBS = frozenset(
    {Verb.UPDATE, Verb.CORRECT, Verb.PAUSE, Verb.RESUME, Verb.FINAL, Verb.DELIVERIES}
)
ADMIN_ACTIONS = {
    Verb.UPDATE: "update figures",
    Verb.CORRECT: "correct figures",
    Verb.PAUSE: "pause a count",
    Verb.RESUME: "resume a count",
    Verb.FINAL: "declare a count final",
    Verb.DELIVERIES: "list failed deliveries",
}
"""What each admin verb does, for "only admins can ..."."""
FIGURE_KEYS = ("void", "challenged", "received")
USAGE = {
    Verb.SUBSCRIBE: "subscribe <count> [events|all|live]",
    Verb.UNSUBSCRIBE: "unsubscribe <count>",
    Verb.LIST: "list",
    Verb.STATUS: "status [count]",
    Verb.HISTORY: "history <count>",
    Verb.CHART: "chart <count>",
    Verb.HELP: "help",
    Verb.UPDATE: "update <count> yes=463 no=1100 [void=N] [challenged=N] [received=N]",
    Verb.CORRECT: "correct <count> yes=463 no=1090 [void=N] [challenged=N] [received=N]",
    Verb.PAUSE: "pause <count>",
    Verb.RESUME: "resume <count>",
    Verb.FINAL: "final <count> [yes=N no=N ...]",
    Verb.DELIVERIES: "deliveries",
}
NUMBER = re.compile(r"^[0-9]{1,3}(,[0-9]{3})+$|^[0-9]+$")
"""A figure: ASCII digits only (``\\d`` would take any script's digits), optionally ``1,100``."""


@dataclass(frozen=True, slots=True)
class Command:
    verb: Verb
    count: str | None = None
    mode: Mode | None = None
    figures: tuple[tuple[str, int], ...] = ()


def usage(verb: Verb) -> str:
    return f"usage: {USAGE[verb]}"


def parse(text: str) -> Command:
    """Parse one command line (without the platform's ``/count`` prefix)."""
    words = text.strip().split()
    if not words:
        return Command(Verb.HELP)
    head = words[0].lower()
    try:
        verb = Verb(head)
    except ValueError:
        known = ", ".join(v.value for v in Verb)
        raise CommandError(f"unknown command {head!r}; try one of: {known}") from None
    args = words[1:]
    if verb in (Verb.LIST, Verb.HELP, Verb.DELIVERIES):
        if args:
            raise CommandError(f"{verb} takes nothing after it; {usage(verb)}")
        return Command(verb)
    if verb is Verb.STATUS:
        if len(args) > 1:
            raise CommandError(usage(verb))
        return Command(verb, count=args[0].lower() if args else None)
    if not args:
        raise CommandError(f"which count? {usage(verb)}")
    count = args[0].lower()
    rest = args[1:]
    if verb is Verb.SUBSCRIBE:
        if len(rest) > 1:
            raise CommandError(usage(verb))
        mode = Mode.EVENTS
        if rest:
            try:
                mode = Mode(rest[0].lower())
            except ValueError:
                raise CommandError(
                    f"unknown mode {rest[0]!r}: use events (significant news only), "
                    "all (every change) or live (a scoreboard kept up to date)"
                ) from None
        return Command(verb, count=count, mode=mode)
    if verb in (Verb.UPDATE, Verb.CORRECT, Verb.FINAL):
        if verb is not Verb.FINAL and not rest:
            raise CommandError(f"no figures given; {usage(verb)}")
        return Command(verb, count=count, figures=parse_figures(rest, verb))
    if rest:
        raise CommandError(f"{verb} takes only the count; {usage(verb)}")
    return Command(verb, count=count)


def parse_figures(words: list[str], verb: Verb) -> tuple[tuple[str, int], ...]:
    """``yes=463 no=1,100`` -> ``(("yes", 463), ("no", 1100))``; choices are checked later."""
    seen: dict[str, int] = {}
    for word in words:
        key, sep, raw = word.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise CommandError(
                f"{_shown(word)!r} is not a figure: write name=number; {usage(verb)}"
            )
        key, raw = _shown(key), raw.strip()
        if raw.startswith("-"):
            raise CommandError(f"{key}={_shown(raw)}: figures cannot be negative")
        if not NUMBER.match(raw):
            raise CommandError(f"{key}={_shown(raw)}: not a whole number (write e.g. {key}=1100)")
        value = figure_value(raw.replace(",", ""))
        if value is None:
            raise CommandError(f"{key} is too large: {CEILING_RULE}")
        if key in seen:
            raise CommandError(f"{key} is given twice")
        seen[key] = value
    return tuple(seen.items())


def _shown(text: str, most: int = 40) -> str:
    """``text`` as typed, cut short: an error echoes what was typed, not all of it."""
    return text if len(text) <= most else f"{text[: most - 4]}..."
