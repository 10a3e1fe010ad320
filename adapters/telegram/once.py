"""Posting exactly once on Telegram, which has no idempotency key and no history to read.

The ledger (``Ledger``: ``bot.store.sent_ledger`` in the store, or in memory) is written around
every send of a delivery (its key): *before* the request, a doubt ("a copy may be above the
highest id known here", ``intend``); *after* its answer, the copy with its id (``posted``),
which for a notified send also ends the doubt. So whatever a crash interrupts (the request on
its way, the answer in, the outbox not yet marked), the ledger says what is known:

- **Known copies only** (the answer came back, then the outbox was not marked: a kill -9): the
  notified copy is kept as it is, with no request at all; any silent copy is deleted.
- **A doubt** (a lost answer, a crash mid-request): the post is sent again *silently*
  (``disable_notification``), which gives the id ``S``; every id from ``S-1`` down to the
  doubt's *floor* (exclusive: it is a message the ledger knew) that is not a known message of
  the bot's is probed with an edit to the very same content ("message is not modified" = a
  notified copy; "not found" / "can't be edited" = not ours; a probe that finds nothing changes
  nothing and costs nothing at Telegram, so probes are paced on a bucket of their own, not as
  edits). A silent copy carries the post's *quiet* text (``render.Rendered.quiet``: the same,
  with an invisible WORD JOINER after its first character), so a probe tells the two kinds
  apart: a silent copy takes the edit (``Probe.OVERWRITTEN``) and is at once written to the
  ledger as a silent copy, before anything else is probed or deleted.
- **Neither** (the ledger has no trace of the key): nothing was sent; a plain send.

Of the copies, a *notified* one is kept (the lowest) and every other copy deleted. When every
copy is silent (the lost send never reached Telegram), they are deleted and the post is sent
again with its notification: members are notified of every post once. A crash or failure
anywhere in the repair leaves the doubt in place, so running it again converges.

Where it stops short (reported in ``Posted.possible_duplicate``, for the audit):

- The window is capped (``window`` ids below ``S``): a doubt with no floor (nothing known in
  the chat when the send went out), or a busy chat, may hide a copy below the cap. In
  supergroups and channels ids count per chat; in private chats and basic groups the bot's ids
  share one counter (the gaps are other chats' and cost a probe each).
- A copy Telegram will not delete (older than 48 hours, the bot lost its rights) stays.
- A silent copy a probe overwrote, just before a crash that kept the ledger from hearing of
  it, shows the post as a notified copy does: the next repair takes it for one (one store
  write wide). When the lost original is there too, it is lower and kept; otherwise that
  silent copy stays as the only one.
- Without a store (``MemoryLedger``) a restart forgets everything: a post the courier says is
  in doubt is then probed with no floor.

The ledger holds, per chat, the ids of the bot's own messages that are not copies of the key
(other deliveries, command replies, ``note_other``): a probe skips those. The worker posts to
a chat one delivery at a time, so no other delivery of ours goes out unknown between the floor
and ``S``. A message of ours the ledger does not know (a reply whose own answer was lost) takes
the probe's edit (``Probe.OVERWRITTEN``); it then shows this post, so it is counted as a
(silent) copy and cleaned up like one (and logged): still one copy of the post, never two.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from bot.platform import Copy, DeliveryError, Doubt, Known, Pace, SentLedger, unpaced

from .errors import MaybeSent
from .send import Outgoing, Probe, TelegramSender

log = logging.getLogger("tallybot.telegram")

WINDOW = 50
"""The most ids probed below the silent copy."""


class Ledger(Protocol):
    """What the bot knows of its own messages per chat: ``StoreLedger`` (persisted) when the
    adapter has a store, ``MemoryLedger`` otherwise (see ``bot.store.sent_ledger``)."""

    @property
    def lasting(self) -> bool:
        """What it knows outlives the process (so its silence means "nothing was sent")."""
        ...

    async def known(self, chat_id: int, key: str) -> Known: ...

    async def intend(self, chat_id: int, key: str, *, silent: bool) -> None:
        """A send of ``key`` is about to go out."""
        ...

    async def posted(self, chat_id: int, key: str, message_id: int, *, silent: bool) -> None:
        """The send's answer: ``key`` went out as ``message_id``."""
        ...

    async def resolve(
        self,
        chat_id: int,
        key: str,
        removed: Collection[int] = (),
        kept: Copy | None = None,
    ) -> None:
        """Every copy of ``key`` is accounted for (``removed``: the copies deleted; ``kept``:
        the one that stays)."""
        ...

    async def note_other(self, chat_id: int, message_id: int) -> None:
        """The bot sent ``message_id`` that is not a delivery (a reply): never probe it."""
        ...

    async def forget(self, chat_id: int) -> None:
        """The chat is gone (it became a supergroup): forget everything about it."""
        ...


@dataclass
class MemoryLedger:
    """A ``Ledger`` in memory (tests; a single process that forgets on restart)."""

    window: int = WINDOW
    rows: dict[int, dict[int, tuple[str | None, bool]]] = field(default_factory=dict)
    doubts: dict[tuple[int, str], tuple[int | None, int]] = field(default_factory=dict)
    """Per chat and key: the floor, and ``sent_doubts.blind``'s 0, 1 or 2."""

    @property
    def lasting(self) -> bool:
        return False

    async def known(self, chat_id: int, key: str) -> Known:
        mine = self.rows.get(chat_id, {})
        doubt = self.doubts.get((chat_id, key))
        return Known(
            top=max(mine, default=None),
            copies=tuple(Copy(i, s) for i, (k, s) in sorted(mine.items()) if k == key),
            doubt=None if doubt is None else Doubt(doubt[0], doubt[1] > 0),
            others=frozenset(i for i, (k, _) in mine.items() if k != key),
        )

    async def intend(self, chat_id: int, key: str, *, silent: bool) -> None:
        was = self.doubts.get((chat_id, key))
        if was is None:
            self.doubts[(chat_id, key)] = (max(self.rows.get(chat_id, {}), default=None), silent)
        elif silent:
            self.doubts[(chat_id, key)] = (was[0], 2 if was[1] else 1)

    async def posted(self, chat_id: int, key: str, message_id: int, *, silent: bool) -> None:
        self._add(chat_id, message_id, key, silent)
        was = self.doubts.get((chat_id, key))
        if not silent:
            self.doubts.pop((chat_id, key), None)
        elif was is not None and was[1] == 1:
            self.doubts[(chat_id, key)] = (was[0], 0)

    async def resolve(
        self,
        chat_id: int,
        key: str,
        removed: Collection[int] = (),
        kept: Copy | None = None,
    ) -> None:
        self.doubts.pop((chat_id, key), None)
        for message_id in removed:
            self.rows.get(chat_id, {}).pop(message_id, None)
        if kept is not None:
            self.rows.setdefault(chat_id, {})[kept.message] = (key, kept.silent)

    async def note_other(self, chat_id: int, message_id: int) -> None:
        self._add(chat_id, message_id, None, False)

    async def forget(self, chat_id: int) -> None:
        self.rows.pop(chat_id, None)
        for chat, key in [d for d in self.doubts if d[0] == chat_id]:
            self.doubts.pop((chat, key))

    def _add(self, chat_id: int, message_id: int, key: str | None, silent: bool) -> None:
        mine = self.rows.setdefault(chat_id, {})
        mine.setdefault(message_id, (key, silent))
        for old in [i for i in mine if i < message_id - self.window]:
            del mine[old]


@dataclass(frozen=True, slots=True)
class StoreLedger:
    """A ``Ledger`` in the store (``Context.sent_ledger``): it outlives a restart, and every
    instance sharing the store sees it. A chat is the ledger's place (its id as text).
    ``window``: the most ids a repair probes (``post_once``'s); rows further below the newest
    one are forgotten, since no probe reaches them."""

    shared: SentLedger
    window: int = WINDOW

    @property
    def lasting(self) -> bool:
        return True

    async def known(self, chat_id: int, key: str) -> Known:
        return await self.shared.known(str(chat_id), key)

    async def intend(self, chat_id: int, key: str, *, silent: bool) -> None:
        await self.shared.intend(str(chat_id), key, silent=silent)

    async def posted(self, chat_id: int, key: str, message_id: int, *, silent: bool) -> None:
        await self.shared.posted(str(chat_id), key, message_id, silent=silent, horizon=self.window)

    async def resolve(
        self,
        chat_id: int,
        key: str,
        removed: Collection[int] = (),
        kept: Copy | None = None,
    ) -> None:
        await self.shared.resolve(str(chat_id), key, removed=removed, kept=kept)

    async def note_other(self, chat_id: int, message_id: int) -> None:
        await self.shared.note(str(chat_id), message_id, horizon=self.window)

    async def forget(self, chat_id: int) -> None:
        await self.shared.forget(str(chat_id))


@dataclass(frozen=True, slots=True)
class Posted:
    """How a post went: the id of the one copy kept, and what the repair did."""

    message_id: int
    repaired: bool = False
    """The ledger had a trace of an earlier send (or the post was in doubt) and the repair ran."""
    removed: tuple[int, ...] = ()
    """Extra copies deleted."""
    probes: int = 0
    possible_duplicate: bool = False
    """A copy may remain that the repair could not find or delete (see the module docstring)."""
    resent: bool = False
    """Every copy found was silent: they were deleted and the post sent again, notified."""


async def post_once(
    sender: TelegramSender,
    ledger: Ledger,
    chat_id: int,
    out: Outgoing,
    key: str,
    *,
    in_doubt: bool = False,
    pace: Pace = unpaced,
    window: int = WINDOW,
) -> Posted:
    """Post ``out`` (the delivery ``key``) to ``chat_id`` exactly once (see the module docstring).

    ``in_doubt``: an earlier attempt may have posted it (the courier found the delivery marked
    as attempted); it matters only to a ledger that does not outlive the process. Raises the
    translated error of a request that failed; after a ``MaybeSent`` the post stays in doubt
    for the next attempt.
    """
    known = await ledger.known(chat_id, key)
    if known.doubt is None and not ledger.lasting and in_doubt and not known.copies:
        known = Known(known.top, known.copies, Doubt(None, blind=False), known.others)
    if known.doubt is None and not known.copies:
        sent = await _send(sender, ledger, chat_id, out, key, pace)
        if sent is not None:
            return Posted(sent)
        known = await ledger.known(chat_id, key)
    return await repair(sender, ledger, chat_id, out, key, known, pace=pace, window=window)


async def _send(
    sender: TelegramSender, ledger: Ledger, chat_id: int, out: Outgoing, key: str, pace: Pace
) -> int | None:
    """A plain, notified send of ``key``, the ledger written around it; None when its answer
    was lost (the doubt stays)."""
    await ledger.intend(chat_id, key, silent=False)
    try:
        sent = await sender.send(chat_id, out, pace=pace)
    except MaybeSent as exc:
        log.warning("telegram post %s to %s: %s; repairing", key, chat_id, exc)
        return None
    except DeliveryError:
        await ledger.resolve(chat_id, key)  # an error answer (or never sent): no copy
        raise
    await ledger.posted(chat_id, key, sent, silent=False)
    return sent


async def repair(
    sender: TelegramSender,
    ledger: Ledger,
    chat_id: int,
    out: Outgoing,
    key: str,
    known: Known,
    *,
    pace: Pace = unpaced,
    window: int = WINDOW,
) -> Posted:
    """Account for every copy of ``key`` (``known``: what the ledger says), keep one notified."""
    copies = list(known.copies)
    probes, found_any, truncated = 0, False, False
    if known.doubt is not None:
        await ledger.intend(chat_id, key, silent=True)
        silent = await sender.send(chat_id, out, pace=pace, silent=True)
        await ledger.posted(chat_id, key, silent, silent=True)
        copies.append(Copy(silent, silent=True))
        floor, cap = known.doubt.floor, silent - 1 - window
        truncated = floor is None or floor < cap
        bottom = cap if floor is None else max(floor, cap)
        skip = known.others | {c.message for c in known.copies}
        for candidate in range(silent - 1, bottom, -1):
            if candidate <= 0 or candidate in skip:
                continue
            probes += 1
            found = await sender.probe(chat_id, candidate, out, pace=pace)
            if found is Probe.NOT_OURS:
                continue
            quiet = found is Probe.OVERWRITTEN  # a silent copy (its quiet text), or unknown
            if quiet:  # known as a silent copy at once: it now shows the post as it is
                await ledger.posted(chat_id, key, candidate, silent=True)
                if not known.doubt.blind:
                    log.error(
                        "telegram repair in %s: message %d was ours but not known to the "
                        "ledger; it now shows this post and is cleaned up as a copy",
                        chat_id, candidate,
                    )  # fmt: skip
            copies.append(Copy(candidate, silent=quiet))
            found_any = True
    notified = [c.message for c in copies if not c.silent]
    keep = min(notified, default=None)
    removed: list[int] = []
    stuck: list[int] = []
    for extra in sorted({c.message for c in copies} - {keep}):
        if await sender.delete(chat_id, extra, pace=pace):
            removed.append(extra)
        else:
            stuck.append(extra)
            log.error("telegram repair in %s: the copy %d cannot be deleted", chat_id, extra)
    resent = False
    if keep is None and stuck:
        keep = min(stuck)  # a silent copy that stays: better than a second one shown
        log.error("telegram repair in %s: only a silent copy (%d) remains", chat_id, keep)
    kept = None if keep is None else next(c for c in copies if c.message == keep)
    await ledger.resolve(chat_id, key, removed, kept)
    if keep is None:
        sent = await _send(sender, ledger, chat_id, out, key, pace)
        if sent is None:
            raise MaybeSent(f"telegram post {key} to {chat_id}: the notified send was lost")
        keep, resent = sent, True
    possible = bool(stuck) or (truncated and not found_any)
    if possible:
        log.warning(
            "telegram post to %s: possible duplicate (probed %d ids, window %d, floor %s)",
            chat_id, probes, window, known.doubt.floor if known.doubt else None,
        )  # fmt: skip
    return Posted(keep, True, tuple(removed), probes, possible, resent)
