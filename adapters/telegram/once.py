"""Posting exactly once on Telegram, which has no idempotency key and no history to read.

What is guaranteed (docs/telegram.md, "probe and repair"):

- A post whose request surely did not take effect (an error answer, a refused connection) is
  simply sent again later: nothing to repair.
- A post whose answer was lost (``MaybeSent``: dropped connection, timeout, 5xx), or that a
  restarted worker finds in doubt (``in_doubt``), is repaired: it is sent again *silently*
  (``disable_notification``), which gives the id ``M``; every id from ``M-1`` down to the
  last id ``L`` this chat's ledger accounts for is probed with an edit to the very same
  content ("message is not modified" = a copy; "not found" / "can't be edited" = not ours);
  the lowest copy is kept and every other copy deleted. So exactly one copy remains, with no
  second notification; if the lost send never happened, the one copy is the silent one.
- A crash or a failure anywhere in the repair leaves the post in doubt; running the repair
  again (one more silent send) converges on one copy, since ``L`` only moves once a post is
  settled, so the window still holds every earlier copy.

Where it stops short (reported in ``Posted.possible_duplicate``, for the audit):

- The window is capped (``window`` ids, and when the ledger has no ``L`` for the chat): a copy
  below the cap is not found. In supergroups and channels ids count per chat, so only busy
  chats reach it; in private chats and basic groups the bot's ids share one counter.
- A copy Telegram will not delete (older than 48 hours, the bot lost its rights) stays.
- The extra silent copy is visible for the few requests the repair takes.

The ledger must hold, per chat, ``L`` and the ids of the bot's own messages that are not
deliveries (command replies, ``note_other``): a probe skips those. The worker posts to a chat
one delivery at a time, so no other delivery of ours sits between ``L`` and ``M``. A message
of ours the ledger does not know (a reply whose own answer was lost) would take the probe's
edit (``Probe.OVERWRITTEN``); it then shows this post, so it is counted as a copy and cleaned
up like one (and logged): still one copy of the post, never two.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from bot.delivery.pacing import Pace, unpaced
from bot.store.sent_ledger import SentLedger

from .errors import MaybeSent
from .send import Outgoing, Probe, TelegramSender

log = logging.getLogger("tallybot.telegram")

WINDOW = 50
"""The most ids probed below the silent copy."""


class Ledger(Protocol):
    """What the bot knows of its own messages per chat: ``StoreLedger`` (persisted) when the
    adapter has a store, ``MemoryLedger`` otherwise."""

    async def last(self, chat_id: int) -> int | None:
        """``L``: every id up to it is accounted for (None: nothing known yet)."""
        ...

    async def settle(self, chat_id: int, message_id: int) -> None:
        """A post is settled up to ``message_id``: ``L`` becomes at least that."""
        ...

    async def others(self, chat_id: int) -> frozenset[int]:
        """Ids above ``L`` of the bot's messages that are not deliveries (command replies)."""
        ...

    async def note_other(self, chat_id: int, message_id: int) -> None:
        """The bot sent ``message_id`` that is not a delivery (a reply): never probe it."""
        ...


@dataclass
class MemoryLedger:
    """A ``Ledger`` in memory (tests; a single process that may forget on restart)."""

    lasts: dict[int, int] = field(default_factory=dict)
    other: dict[int, set[int]] = field(default_factory=dict)

    async def last(self, chat_id: int) -> int | None:
        return self.lasts.get(chat_id)

    async def settle(self, chat_id: int, message_id: int) -> None:
        self.lasts[chat_id] = max(message_id, self.lasts.get(chat_id, message_id))
        mine = self.other.get(chat_id)
        if mine:
            mine.difference_update({i for i in mine if i <= self.lasts[chat_id]})

    async def others(self, chat_id: int) -> frozenset[int]:
        return frozenset(self.other.get(chat_id, ()))

    async def note_other(self, chat_id: int, message_id: int) -> None:
        self.other.setdefault(chat_id, set()).add(message_id)


@dataclass(frozen=True, slots=True)
class StoreLedger:
    """A ``Ledger`` in the store (``Context.sent_ledger``): it outlives a restart, and every
    instance sharing the store sees it. A chat is the ledger's place (its id as text).
    ``window``: the most ids a repair probes (``post_once``'s); replies further below the
    newest one are forgotten, since no probe reaches them."""

    shared: SentLedger
    window: int = WINDOW

    async def last(self, chat_id: int) -> int | None:
        return await self.shared.settled(str(chat_id))

    async def settle(self, chat_id: int, message_id: int) -> None:
        await self.shared.settle(str(chat_id), message_id)

    async def others(self, chat_id: int) -> frozenset[int]:
        return await self.shared.unsettled(str(chat_id))

    async def note_other(self, chat_id: int, message_id: int) -> None:
        await self.shared.note(str(chat_id), message_id, horizon=self.window)


@dataclass(frozen=True, slots=True)
class Posted:
    """How a post went: the id of the one copy kept, and what the repair did."""

    message_id: int
    repaired: bool = False
    """The answer was lost (or the post was in doubt) and the repair ran."""
    removed: tuple[int, ...] = ()
    """Extra copies deleted."""
    probes: int = 0
    possible_duplicate: bool = False
    """A copy may remain that the repair could not find or delete (see the module docstring)."""


async def post_once(
    sender: TelegramSender,
    ledger: Ledger,
    chat_id: int,
    out: Outgoing,
    *,
    in_doubt: bool = False,
    pace: Pace = unpaced,
    window: int = WINDOW,
) -> Posted:
    """Post ``out`` to ``chat_id`` exactly once (see the module docstring).

    ``in_doubt``: an earlier attempt may have posted it (the worker found the delivery
    marked as attempted): go straight to the repair. Raises the translated error of a
    request that failed; after a ``MaybeSent`` the post stays in doubt for the next attempt.
    """
    if not in_doubt:
        try:
            sent = await sender.send(chat_id, out, pace=pace)
        except MaybeSent as exc:
            log.warning("telegram post to %s: %s; repairing", chat_id, exc)
        else:
            await ledger.settle(chat_id, sent)
            return Posted(sent)
    return await repair(sender, ledger, chat_id, out, pace=pace, window=window)


async def repair(
    sender: TelegramSender,
    ledger: Ledger,
    chat_id: int,
    out: Outgoing,
    *,
    pace: Pace = unpaced,
    window: int = WINDOW,
) -> Posted:
    """Send ``out`` silently, find every copy between ``L`` and it, keep the lowest."""
    last = await ledger.last(chat_id)
    skip = await ledger.others(chat_id)
    silent = await sender.send(chat_id, out, pace=pace, silent=True)
    floor = silent - 1 - window
    truncated = last is None or last < floor
    bottom = floor if last is None else max(last, floor)
    copies = [silent]
    probes = 0
    for candidate in range(silent - 1, bottom, -1):
        if candidate <= 0 or candidate in skip:
            continue
        probes += 1
        found = await sender.probe(chat_id, candidate, out, pace=pace)
        if found is Probe.OVERWRITTEN:
            log.error(
                "telegram repair in %s: message %d was ours but not known to the ledger; it "
                "now shows this post and is cleaned up as a copy", chat_id, candidate,
            )  # fmt: skip
        if found is not Probe.NOT_OURS:
            copies.append(candidate)
    keep = min(copies)
    removed: list[int] = []
    stuck = False
    for extra in sorted(set(copies) - {keep}):
        if await sender.delete(chat_id, extra, pace=pace):
            removed.append(extra)
        else:
            stuck = True
            log.error("telegram repair in %s: the copy %d cannot be deleted", chat_id, extra)
    await ledger.settle(chat_id, silent)
    possible = stuck or (truncated and len(copies) == 1)
    if possible:
        log.warning(
            "telegram post to %s: possible duplicate (probed %d ids, window %d, L=%s)",
            chat_id, probes, window, last,
        )  # fmt: skip
    return Posted(keep, True, tuple(removed), probes, possible)
